"""The app as a whole: time to interactive, memory, key latency under load, terminal bytes.

Four measurements, each against a baseline measured in the same run (every measurement runs in
its own fresh interpreter, started by this script with ``--child``):

1. time to interactive with N tasks in the database (N = 1k, 10k, 100k): from constructing
   ``TuiApp`` (whose engine factory opens the engine, so loading the N tasks counts) to the first
   frame that shows the rows, and on to the frame after the first key (``j``) moved the cursor.
   Baselines: a bare Textual ``App`` with a ``DataTable`` of the same N rows and 9 columns, and
   an empty ``App``.
2. resident memory (VmRSS / VmHWM) with 10,000 tasks and the selected task's 1,000,000-line log
   open in the output pane. Baseline: an empty ``App`` running headless.
3. latency from a key press (``j``/``k``, posted as the driver posts keys) to the next frame
   while the selected task prints 50,000 lines/s. Baseline: the same app and keys, idle.
4. bytes written to a real terminal (a pty) by ``tui open`` while it follows a task printing
   1,000 lines/s for 10 s, against ``tail -f`` of a file a writer appends the same lines to.

Headless runs (1–3) render every frame to its terminal bytes (``render_segments``) without
writing them, so the cost of a frame is counted even though nothing is shown.

    .venv/bin/python bench/bench_app.py [--sizes 1000,10000,100000] [--lines 1000000]
        [--only tti,rss,keys,bytes] [--repeat R] [--json PATH] [--keep]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import json
import os
import pty
import select
import signal
import sqlite3
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine, tui_argv, write_json

SIZE = (120, 40)
TTI_TARGET_S = 1.0  # at 10k tasks
RSS_TARGET_MB = 150.0
KEY_TARGET_MS = 100.0
BYTES_TARGET_RATIO = 2.0
PRODUCER_RATE = 50_000
FOLLOW_RATE = 1_000
FOLLOW_SECONDS = 10.0

# -- databases ---------------------------------------------------------------------------------


def build_db(path: Path, n_tasks: int, big_log: int = 0, lines_per_task: int = 2) -> None:
    """A store with ``n_tasks`` COMPLETED shell tasks, one ended run each with a few lines of
    output; the first task (the one the app selects) gets ``big_log`` lines instead."""
    from tui.model.states import State
    from tui.model.task import Task, priority_rank
    from tui.store.db import Store

    async def schema() -> None:
        store = await Store.open(path)
        await store.close()

    asyncio.run(schema())
    template = Task.model_validate(
        {
            "name": "t",
            "description": "a benchmark task",
            "tags": ["bench", "ci"],
            "agent": {"type": "shell", "instructions": "echo hello; make -j4 test"},
        }
    )
    spec = template.model_dump(mode="json")
    rank = priority_rank(template.priority)
    now = time.time()
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA synchronous = OFF")
    db.execute("BEGIN")
    tasks, runs, out = [], [], []
    for i in range(1, n_tasks + 1):
        tid = f"{i:08x}-0000-4000-8000-{i:012x}"
        spec["id"], spec["name"] = tid, f"task-{i:06d}"
        tasks.append(
            # The spec as the store writes it (model_dump_json: compact, no spaces).
            (
                tid,
                spec["name"],
                json.dumps(spec, separators=(",", ":")),
                State.COMPLETED.value,
                rank,
                i,
                1,
                1,
                now,
                now,
            )
        )
        runs.append((i, tid, 1, "bench", now - 5, now - 1, 0, "completed"))
        if i != 1 or not big_log:
            out += [(tid, i, 1, s, now, f"hello from {spec['name']} line {s}") for s in (1, 2)]
    db.executemany(
        "INSERT INTO tasks (id, name, spec, state, priority_rank, submit_seq, approved, attempts,"
        " created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
        tasks,
    )
    db.executemany(
        "INSERT INTO runs (id, task_id, attempt, engine_id, started_at, ended_at, exit_code,"
        " outcome) VALUES (?,?,?,?,?,?,?,?)",
        runs,
    )
    db.executemany(
        "INSERT INTO output (task_id, run_id, stream, seq, at, text) VALUES (?,?,?,?,?,?)", out
    )
    if big_log and n_tasks:
        tid = tasks[0][0]
        for a in range(1, big_log + 1, 100_000):
            db.executemany(
                "INSERT INTO output (task_id, run_id, stream, seq, at, text) VALUES (?,?,?,?,?,?)",
                (
                    (
                        tid,
                        1,
                        2 if s % 17 == 0 else 1,
                        s,
                        now,
                        f"\x1b[32mok\x1b[0m line {s}\tof {big_log}"
                        if s % 5 == 0
                        else f"line {s} of {big_log}",
                    )
                    for s in range(a, min(big_log, a + 99_999) + 1)
                ),
            )
    db.execute("COMMIT")
    db.close()


# -- the child side: one measurement per interpreter ---------------------------------------------


def rss_mb() -> tuple[float, float]:
    """(VmRSS, VmHWM) of this process in MB."""
    vals = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            vals[key] = int(rest.split()[0]) / 1024
    return vals["VmRSS"], vals["VmHWM"]


def frame_recorder(base: type) -> type:
    """``base`` (an App class) that records every frame and renders it to terminal bytes."""

    class Recording(base):
        def __init__(self, *a: Any, **kw: Any) -> None:
            super().__init__(*a, **kw)
            self.frames: list[tuple[float, int, int]] = []  # (time, cursor row, bytes)
            self.frame_probe = lambda: -1

        def _display(self, screen: Any, renderable: Any) -> None:
            if renderable is not None:
                render = getattr(renderable, "render_segments", None)
                size = len(render(self.console)) if render is not None else 0
                self.frames.append((time.perf_counter(), self.frame_probe(), size))
            super()._display(screen, renderable)

    return Recording


async def wait_for(cond: Any, timeout: float = 120.0, step: float = 0.002) -> None:
    end = time.perf_counter() + timeout
    while not cond():
        if time.perf_counter() > end:
            raise SystemExit("benchmark timed out waiting for the app")
        await asyncio.sleep(step)


def first_frame_after(frames: list[tuple[float, int, int]], t: float, row: int | None = None):
    for f in frames:
        if f[0] >= t and (row is None or f[1] == row):
            return f
    return None


async def child_tti(db: Path, n: int, kind: str) -> dict[str, Any]:
    from textual.app import App, ComposeResult
    from textual.events import Key
    from textual.widgets import DataTable, Static

    from tui.app.tui_app import TuiApp
    from tui.engine.scheduler import Engine
    from tui.store.db import Store

    marks: dict[str, float] = {}
    if kind == "tui":
        store = await Store.open(db)
        engine_holder: list[Engine] = []

        async def factory() -> Engine:
            t = time.perf_counter()
            e = Engine(store)
            await e.start()
            marks["engine_start_s"] = time.perf_counter() - t
            engine_holder.append(e)
            return e

        cls = frame_recorder(TuiApp)
        t0 = time.perf_counter()
        app = cls(factory, osc="off", remember_theme=False, toasts=False)
        app.frame_probe = lambda: app._list.cursor_row if hasattr(app, "_list") else -1

        def rows() -> int:
            return app._list.row_count if hasattr(app, "_list") else 0

        def cursor() -> int:
            return app._list.cursor_row
    else:

        class Bare(App[None]):
            def compose(self) -> ComposeResult:
                if kind == "datatable":
                    yield DataTable(cursor_type="row")
                else:
                    yield Static("empty")

            def on_mount(self) -> None:
                if kind != "datatable":
                    return
                table = self.query_one(DataTable)
                for col in ("", "NAME", "AGENT", "PRIO", "TIME", "TRY", "COST", "TAGS", "NOTE"):
                    table.add_column(col, key=col or "state")
                for i in range(1, n + 1):
                    table.add_row(
                        "✔ DONE",
                        f"task-{i:06d}",
                        "shell",
                        "normal",
                        "",
                        "1/1",
                        "",
                        "bench ci",
                        "",
                        key=str(i),
                    )
                table.focus()

        cls = frame_recorder(Bare)
        t0 = time.perf_counter()
        app = cls()
        table_ref: list[Any] = []

        def rows() -> int:
            if kind != "datatable":
                return n
            if not table_ref:
                with contextlib.suppress(Exception):
                    table_ref.append(app.query_one(DataTable))
            return table_ref[0].row_count if table_ref else 0

        def cursor() -> int:
            return table_ref[0].cursor_row if table_ref else 0

        app.frame_probe = lambda: table_ref[0].cursor_row if table_ref else -1

    async with app.run_test(size=SIZE):
        marks["run_test_ready_s"] = time.perf_counter() - t0
        await wait_for(lambda: rows() >= n)
        t_rows = time.perf_counter()
        await wait_for(lambda: first_frame_after(app.frames, t_rows) is not None)
        painted = first_frame_after(app.frames, t_rows)
        assert painted is not None
        marks["first_rows_frame_s"] = painted[0] - t0
        if kind != "empty":
            before = cursor()
            t_key = time.perf_counter()
            key = "j" if kind == "tui" else "down"  # DataTable alone has no vi keys
            app.post_message(Key(key, key))
            await wait_for(lambda: first_frame_after(app.frames, t_key, before + 1) is not None)
            moved = first_frame_after(app.frames, t_key, before + 1)
            assert moved is not None
            marks["first_key_ms"] = (moved[0] - t_key) * 1000
            marks["interactive_s"] = moved[0] - t0
        else:
            marks["interactive_s"] = marks["first_rows_frame_s"]
        if kind == "tui":
            text = "\n".join(s.text for s in app.screen._compositor.render_strips())
            marks["rows_visible"] = "task-000001" in text
        marks["frames"] = len(app.frames)
    if kind == "tui":
        await store.close()  # the app stopped the engine it made
    return marks


async def child_rss(db: Path, lines: int, kind: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    out["after_python_mb"] = rss_mb()[0]
    from textual.app import App, ComposeResult
    from textual.widgets import Static

    if kind == "baseline":

        class Empty(App[None]):
            def compose(self) -> ComposeResult:
                yield Static("empty")

        out["after_import_mb"] = rss_mb()[0]
        app = Empty()
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause(0.5)
            out["rss_mb"], out["hwm_mb"] = rss_mb()
        return out

    from tui.app.tui_app import TuiApp
    from tui.app.widgets.log_view import LogView
    from tui.engine.scheduler import Engine
    from tui.store.db import Store

    out["after_import_mb"] = rss_mb()[0]
    store = await Store.open(db)
    engine = Engine(store)
    await engine.start()
    out["after_engine_mb"] = rss_mb()[0]
    app = frame_recorder(TuiApp)(engine, osc="off", remember_theme=False, toasts=False)
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(LogView)
        tail = f"line {lines} of {lines}"
        await wait_for(lambda: any(tail in view.render_line(y).text for y in range(38)))
        out["after_open_mb"] = rss_mb()[0]
        # browse the big log a little (pages come and go through the LRU)
        for y in (0, view.virtual_size.height // 2, view.virtual_size.height // 3):
            view.scroll_to(y=y, animate=False)
            await pilot.pause(0.1)
        view.action_follow()
        await pilot.pause(0.3)
        out["rss_mb"], out["hwm_mb"] = rss_mb()
        out["line_count"] = view.line_count
        out["cached_lines"] = view.cached_line_count
        out["tasks"] = app._list.row_count
    await engine.stop()
    await store.close()
    return out


PRODUCER = r"""
import sys, time
rate = int(sys.argv[1]); total = int(sys.argv[2]) if len(sys.argv) > 2 else 0
w = sys.stdout.write; t0 = time.time(); n = 0
while not total or n < total:
    due = int((time.time() - t0) * rate)
    if total:
        due = min(due, total)
    if due > n:
        w("".join("line %08d of the producer, some text to make it realistic\n" % i
                  for i in range(n + 1, due + 1)))
        sys.stdout.flush()
        n = due
    time.sleep(0.005)
"""


async def child_keys(tmp: Path, presses: int, loaded: bool, attached: bool) -> dict[str, Any]:
    """Key -> frame latency. ``attached``: the app is a viewer of a daemon (the default way
    `tui` runs), so the engine and the agents' output live in another process."""
    from textual.events import Key

    from tui.app.tui_app import TuiApp
    from tui.daemon import lifecycle
    from tui.engine.scheduler import Engine
    from tui.model.task import Task
    from tui.store.db import Store

    db = tmp / f"keys-{int(loaded)}.db"
    for old in tmp.glob(f"keys-{int(loaded)}.db*"):
        old.unlink()
    producer = tmp / "producer.py"
    producer.write_text(PRODUCER)
    store = await Store.open(db)
    if attached:
        os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="tui-bench-rt-")
        engine: Any = await lifecycle.ensure(db, concurrency=8)
    else:
        engine = Engine(store, concurrency=8, kill_grace=1.0)
        await engine.start()
    gate = tmp / f"gate-{os.getpid()}"
    script = f"while [ ! -e {gate} ]; do sleep 0.01; done;" + (
        f" exec {sys.executable} -u {producer} {PRODUCER_RATE}" if loaded else " sleep 600"
    )
    tasks = [
        Task.model_validate(
            {"name": "producer", "agent": {"type": "shell", "instructions": script}}
        )
    ]
    tasks += [
        Task.model_validate(
            {
                "name": f"other-{i:02d}",
                "agent": {"type": "shell", "instructions": f"echo other {i}"},
            }
        )
        for i in range(30)
    ]
    await engine.submit(tasks)
    while not all(r.settled for r in await engine.get_many([t.id for t in tasks[1:]])):
        await asyncio.sleep(0.05)  # setup, not measured
    replays: list[float] = []
    read_output = store.read_output

    async def counting_read_output(*a: Any, **kw: Any) -> Any:
        lines = await read_output(*a, **kw)
        if len(lines) >= 1000:
            replays.append(time.perf_counter())
        return lines

    store.read_output = counting_read_output  # type: ignore[method-assign]
    app = frame_recorder(TuiApp)(engine, osc="off", remember_theme=False, toasts=False)
    app.frame_probe = lambda: app._list.cursor_row if hasattr(app, "_list") else -1
    lat: dict[str, list[float]] = {"j": [], "k": []}
    frame_bytes = 0
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: app._list.row_count == len(tasks))
        app._list.select_id(tasks[0].id)
        # The producer starts only now, with the app up: the app's event stream is live. (Opened
        # while a task already streams, the app first replays from the store what was written
        # since its cursor, and can fall behind for good: see bench/README.md.)
        gate.touch()
        await pilot.pause(1.0)
        replays_before = len(replays)
        rss_before = rss_mb()[0]
        n_before = await _line_count(store, tasks[0].id)
        t_start = time.perf_counter()
        f_start = len(app.frames)
        for i in range(presses):
            key = "j" if i % 2 == 0 else "k"
            target = 1 if key == "j" else 0
            await asyncio.sleep(0.05 + (i % 7) * 0.01)  # not in step with the frame clock
            t0 = time.perf_counter()
            app.post_message(Key(key, key))  # what the driver does with a key press
            await wait_for(lambda t0=t0, target=target: first_frame_after(app.frames, t0, target))
            f = first_frame_after(app.frames, t0, target)
            assert f is not None
            lat[key].append((f[0] - t0) * 1000)
        wall = time.perf_counter() - t_start
        frames = app.frames[f_start:]
        frame_bytes = sum(f[2] for f in frames)
        if not attached:
            await engine._flush_output()
        n_after = await _line_count(store, tasks[0].id)
        rss_after = rss_mb()[0]
    if attached:
        await lifecycle.stop(db)
    else:
        await engine.stop()
    await store.close()
    both = sorted(lat["j"] + lat["k"])
    return {
        "median_ms": statistics.median(both),
        "p95_ms": both[int(0.95 * (len(both) - 1))],
        "max_ms": both[-1],
        "j_median_ms": statistics.median(lat["j"]),
        "k_median_ms": statistics.median(lat["k"]),
        "j_p95_ms": sorted(lat["j"])[int(0.95 * (len(lat["j"]) - 1))],
        "k_p95_ms": sorted(lat["k"])[int(0.95 * (len(lat["k"]) - 1))],
        "presses": presses,
        "replayed_batches": len(replays) - replays_before,
        "rss_growth_mb": rss_after - rss_before,
        "lines_per_s_stored": (n_after - n_before) / wall,
        "fps": len(frames) / wall,
        "frame_bytes_per_s": frame_bytes / wall,
    }


async def _line_count(store: Any, task_id: str) -> int:
    return sum(n for _, n in await store.output_index(task_id))


# -- the pty measurement (real terminal bytes) ---------------------------------------------------


def pty_session(
    argv: list[str], env: dict[str, str], start: Any, seconds: float, settle: float
) -> dict[str, float]:
    """Run ``argv`` on a 120x40 pty; once its output has been quiet for ``settle`` s (or 8 s
    passed), call ``start()`` (which returns a Popen to wait for, or None) and count what the
    program writes from then until ``seconds`` + 1 s later. Returns byte counts."""
    pid, fd = pty.fork()
    if pid == 0:
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", SIZE[1], SIZE[0], 0, 0))
        os.execvpe(argv[0], argv, env)
    total = startup = window = 0
    t_spawn = time.perf_counter()
    last_data = t_spawn
    t_gate: float | None = None
    proc = None
    try:
        while True:
            now = time.perf_counter()
            if t_gate is None and (
                (total and now - last_data > settle) or now - t_spawn > 8.0 + settle
            ):
                startup = total
                t_gate = now
                proc = start()
            if t_gate is not None and now - t_gate > seconds + 1.0:
                break
            r, _, _ = select.select([fd], [], [], 0.05)
            if r:
                try:
                    data = os.read(fd, 65536)
                except OSError:
                    break
                if not data:
                    break
                total += len(data)
                last_data = now
                if t_gate is not None:
                    window += len(data)
    finally:
        if proc is not None:
            proc.wait(timeout=30)
        with contextlib.suppress(OSError):
            os.write(fd, b"\x11")  # ctrl+q (textual's quit) / harmless for tail
        time.sleep(0.5)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        with contextlib.suppress(OSError):
            while select.select([fd], [], [], 0.5)[0] and os.read(fd, 65536):
                pass
        os.waitpid(pid, 0)
        os.close(fd)
    return {"startup_bytes": startup, "window_bytes": window, "total_bytes": total}


def measure_bytes(tmp: Path, fps: int | None) -> dict[str, Any]:
    producer = tmp / "producer.py"
    producer.write_text(PRODUCER)
    total_lines = int(FOLLOW_RATE * FOLLOW_SECONDS)
    env = dict(os.environ, TERM="xterm-256color", COLORTERM="truecolor", COLUMNS="120", LINES="40")
    env.pop("TEXTUAL", None)
    env["TUI_STATE_DIR"] = str(tmp / "state")
    env["TUI_CONFIG_DIR"] = str(tmp / "config")
    env["TUI_NOTIFY"] = "off"
    # tail -f: a writer appends the lines to a file the pty's tail follows
    log = tmp / "follow.log"
    log.write_text("")

    def start_writer() -> subprocess.Popen[bytes]:
        out = open(log, "ab", buffering=0)  # noqa: SIM115
        return subprocess.Popen(
            [sys.executable, "-u", str(producer), str(FOLLOW_RATE), str(total_lines)], stdout=out
        )

    tail = pty_session(["tail", "-f", str(log)], env, start_writer, FOLLOW_SECONDS, settle=0.5)
    # tui open: one shell task that waits for a gate file, then prints the same lines
    gate = tmp / "gate"
    db = tmp / f"follow-{fps}.db"
    # A fresh database per run: with a task left from the previous repetition, the app would
    # select that finished task and follow nothing (the median of three runs measured that).
    for stale in (gate, db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        with contextlib.suppress(FileNotFoundError):
            stale.unlink()
    yaml = tmp / "follow.yaml"
    yaml.write_text(
        "tasks:\n  - name: follow\n    agent:\n      type: shell\n      instructions: >-\n"
        f"        while [ ! -e {gate} ]; do sleep 0.01; done;"
        f" exec {sys.executable} -u {producer} {FOLLOW_RATE} {total_lines}\n"
    )
    argv = [*tui_argv(), "open", str(yaml), "--db", str(db)]
    if fps:
        argv += ["--fps", str(fps)]

    def open_gate() -> None:
        gate.touch()

    app = pty_session(argv, env, open_gate, FOLLOW_SECONDS, settle=1.5)
    return {"tail": tail, "tui": app, "lines": total_lines, "fps": fps}


# -- the parent side -----------------------------------------------------------------------------


def run_child(args: list[str]) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, __file__, "--child", *args], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
        raise SystemExit(f"child failed: {args}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def med(samples: list[dict[str, Any]], key: str) -> float:
    return statistics.median(s[key] for s in samples)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--only", default="tti,rss,keys,bytes")
    ap.add_argument(
        "--attached",
        action="store_true",
        help="key latency with the app attached to a daemon (as `tui` runs) instead of embedded",
    )
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--presses", type=int, default=60)
    ap.add_argument("--fps", type=int, default=0, help="also run the pty test with tui --fps N")
    ap.add_argument("--json")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        kind, *rest = a.child
        if kind == "tti":
            res = asyncio.run(child_tti(Path(rest[0]), int(rest[1]), rest[2]))
        elif kind == "rss":
            res = asyncio.run(child_rss(Path(rest[0]), int(rest[1]), rest[2]))
        elif kind == "keys":
            res = asyncio.run(
                child_keys(Path(rest[0]), int(rest[1]), rest[2] == "loaded", rest[3] == "attached")
            )
        else:
            raise SystemExit(f"unknown child {kind}")
        print(json.dumps(res))
        return

    only = set(a.only.split(","))
    sizes = [int(s) for s in a.sizes.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="tui-bench-app."))
    load = os.getloadavg()[0]
    results: dict[str, Any] = {"machine": machine(), "loadavg_start": load, "repeat": a.repeat}
    log(f"machine: {machine()}, load average {load:.2f}, tmp {tmp}")
    try:
        if "tti" in only:
            tti: dict[str, Any] = {}
            empty = [run_child(["tti", "-", "0", "empty"]) for _ in range(a.repeat)]
            tti["empty_app_s"] = med(empty, "interactive_s")
            log(f"  empty App first frame: {tti['empty_app_s'] * 1000:.0f} ms")
            for n in sizes:
                db = tmp / f"tasks-{n}.db"
                t = time.perf_counter()
                build_db(db, n)
                log(f"  built {n:,}-task db in {time.perf_counter() - t:.1f} s")
                reps = 1 if n >= 100_000 else a.repeat  # ~2 min per repetition at 100k
                tui = [run_child(["tti", str(db), str(n), "tui"]) for _ in range(reps)]
                base = [run_child(["tti", "-", str(n), "datatable"]) for _ in range(reps)]
                row = {
                    "tui_s": med(tui, "interactive_s"),
                    "tui_rows_frame_s": med(tui, "first_rows_frame_s"),
                    "tui_engine_start_s": med(tui, "engine_start_s"),
                    "tui_first_key_ms": med(tui, "first_key_ms"),
                    "rows_visible": all(s["rows_visible"] for s in tui),
                    "datatable_s": med(base, "interactive_s"),
                    "datatable_first_key_ms": med(base, "first_key_ms"),
                    "samples": [s["interactive_s"] for s in tui],
                }
                tti[str(n)] = row
                log(
                    f"  N={n:>7,}: tui {row['tui_s']:.3f} s (engine start"
                    f" {row['tui_engine_start_s']:.3f} s, first key {row['tui_first_key_ms']:.0f}"
                    f" ms), DataTable alone {row['datatable_s']:.3f} s"
                )
                if not a.keep:
                    db.unlink()
            results["tti"] = tti
        if "rss" in only:
            db = tmp / "rss.db"
            t = time.perf_counter()
            build_db(db, 10_000, big_log=a.lines)
            log(f"  built 10,000 tasks + {a.lines:,}-line log in {time.perf_counter() - t:.1f} s")
            base = [run_child(["rss", "-", "0", "baseline"]) for _ in range(a.repeat)]
            tui = [run_child(["rss", str(db), str(a.lines), "tui"]) for _ in range(a.repeat)]
            results["rss"] = {
                "baseline_mb": med(base, "rss_mb"),
                "baseline_import_mb": med(base, "after_import_mb"),
                "python_mb": med(base, "after_python_mb"),
                "tui_mb": med(tui, "rss_mb"),
                "tui_hwm_mb": med(tui, "hwm_mb"),
                "tui_import_mb": med(tui, "after_import_mb"),
                "tui_engine_mb": med(tui, "after_engine_mb"),
                "tui_open_mb": med(tui, "after_open_mb"),
                "cached_lines": tui[0]["cached_lines"],
                "line_count": tui[0]["line_count"],
                "tasks": tui[0]["tasks"],
            }
            r = results["rss"]
            log(
                f"  RSS: tui {r['tui_mb']:.0f} MB (peak {r['tui_hwm_mb']:.0f}; after imports"
                f" {r['tui_import_mb']:.0f}, engine with 10k tasks {r['tui_engine_mb']:.0f},"
                f" app + log open {r['tui_open_mb']:.0f}), empty App {r['baseline_mb']:.0f} MB"
            )
            if not a.keep:
                db.unlink()
        if "keys" in only:
            mode = "attached" if a.attached else "embedded"
            idle = [
                run_child(["keys", str(tmp), str(a.presses), "idle", mode]) for _ in range(a.repeat)
            ]
            busy = [
                run_child(["keys", str(tmp), str(a.presses), "loaded", mode])
                for _ in range(a.repeat)
            ]
            results["keys"] = {
                "idle_median_ms": med(idle, "median_ms"),
                "idle_p95_ms": med(idle, "p95_ms"),
                "busy_median_ms": med(busy, "median_ms"),
                "busy_p95_ms": med(busy, "p95_ms"),
                "busy_max_ms": max(s["max_ms"] for s in busy),
                "busy_j_median_ms": med(busy, "j_median_ms"),
                "busy_k_median_ms": med(busy, "k_median_ms"),
                "busy_j_p95_ms": med(busy, "j_p95_ms"),
                "busy_k_p95_ms": med(busy, "k_p95_ms"),
                "busy_lines_per_s": med(busy, "lines_per_s_stored"),
                "busy_fps": med(busy, "fps"),
                "idle_fps": med(idle, "fps"),
                "busy_frame_bytes_per_s": med(busy, "frame_bytes_per_s"),
                "busy_rss_growth_mb": max(s["rss_growth_mb"] for s in busy),
                "busy_replayed_batches": max(s["replayed_batches"] for s in busy),
            }
            k = results["keys"]
            log(
                f"  key→frame: idle median {k['idle_median_ms']:.1f} ms p95"
                f" {k['idle_p95_ms']:.1f}; at {k['busy_lines_per_s']:,.0f} lines/s median"
                f" {k['busy_median_ms']:.1f} ms p95 {k['busy_p95_ms']:.1f}"
            )
        if "bytes" in only:
            runs = [measure_bytes(tmp, None) for _ in range(a.repeat)]
            b = {
                "tail_bytes": statistics.median(r["tail"]["window_bytes"] for r in runs),
                "tui_bytes": statistics.median(r["tui"]["window_bytes"] for r in runs),
                "tui_startup_bytes": statistics.median(r["tui"]["startup_bytes"] for r in runs),
                "lines": runs[0]["lines"],
            }
            if a.fps:
                capped = [measure_bytes(tmp, a.fps) for _ in range(a.repeat)]
                b["fps"] = a.fps
                b["tui_fps_bytes"] = statistics.median(r["tui"]["window_bytes"] for r in capped)
            results["bytes"] = b
            log(
                f"  terminal bytes over {FOLLOW_SECONDS:.0f} s: tui {b['tui_bytes']:,.0f},"
                f" tail -f {b['tail_bytes']:,.0f} (startup screen {b['tui_startup_bytes']:,.0f})"
            )
    finally:
        results["loadavg_end"] = os.getloadavg()[0]
        if not a.keep:
            for p in sorted(tmp.rglob("*"), reverse=True):
                p.unlink() if p.is_file() or p.is_symlink() else p.rmdir()
            tmp.rmdir()
    summary(results, sizes)
    write_json(a.json, results)


def summary(res: dict[str, Any], sizes: list[int]) -> None:
    rows = [("measure", "tui", "baseline", "ratio", "target", "status")]
    tti = res.get("tti")
    if tti:
        for n in sizes:
            r = tti[str(n)]
            target = f"<= {TTI_TARGET_S:.0f} s" if n == 10_000 else ""
            status = ("MET" if r["tui_s"] <= TTI_TARGET_S else "NOT MET") if target else ""
            rows.append(
                (
                    f"time to interactive, {n:,} tasks",
                    f"{r['tui_s']:.2f} s",
                    f"{r['datatable_s']:.2f} s (DataTable)",
                    f"{r['tui_s'] / r['datatable_s']:.1f}x",
                    target,
                    status,
                )
            )
            rows.append(
                (
                    f"  of which engine start (loads {n:,} tasks)",
                    f"{r['tui_engine_start_s']:.2f} s",
                    "",
                    "",
                    "",
                    "",
                )
            )
        rows.append(("  empty App, first frame", "", f"{tti['empty_app_s']:.2f} s", "", "", ""))
    rss = res.get("rss")
    if rss:
        rows.append(
            (
                f"RSS, {rss['tasks']:,} tasks + {rss['line_count']:,}-line log",
                f"{rss['tui_mb']:.0f} MB",
                f"{rss['baseline_mb']:.0f} MB (empty App)",
                f"{rss['tui_mb'] / rss['baseline_mb']:.1f}x",
                f"<= {RSS_TARGET_MB:.0f} MB",
                "MET" if rss["tui_mb"] <= RSS_TARGET_MB else "NOT MET",
            )
        )
        rows.append(("  peak (VmHWM)", f"{rss['tui_hwm_mb']:.0f} MB", "", "", "", ""))
    k = res.get("keys")
    if k:
        lps = f"{k['busy_lines_per_s'] / 1000:.0f}k lines/s"
        for q in ("median", "p95"):
            rows.append(
                (
                    f"key -> frame {q}, task at {lps}",
                    f"{k[f'busy_{q}_ms']:.0f} ms",
                    f"{k[f'idle_{q}_ms']:.0f} ms (idle)",
                    f"{k[f'busy_{q}_ms'] / max(k[f'idle_{q}_ms'], 0.1):.1f}x",
                    f"< {KEY_TARGET_MS:.0f} ms",
                    "MET" if k[f"busy_{q}_ms"] < KEY_TARGET_MS else "NOT MET",
                )
            )
    b = res.get("bytes")
    if b:
        ratio = b["tui_bytes"] / max(1, b["tail_bytes"])
        rows.append(
            (
                f"terminal bytes, follow {FOLLOW_RATE:,}/s x {FOLLOW_SECONDS:.0f} s",
                f"{b['tui_bytes'] / 1e6:.2f} MB",
                f"{b['tail_bytes'] / 1e6:.2f} MB (tail -f)",
                f"{ratio:.1f}x",
                f"<= {BYTES_TARGET_RATIO:.0f}x",
                "MET" if ratio <= BYTES_TARGET_RATIO else "NOT MET",
            )
        )
        if "tui_fps_bytes" in b:
            r2 = b["tui_fps_bytes"] / max(1, b["tail_bytes"])
            rows.append(
                (
                    f"  same with --fps {b['fps']}",
                    f"{b['tui_fps_bytes'] / 1e6:.2f} MB",
                    "",
                    f"{r2:.1f}x",
                    "",
                    "",
                )
            )
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    print(
        f"== app summary ({res['machine']}, load average {res['loadavg_start']:.2f} at start,"
        f" {res['loadavg_end']:.2f} at end) =="
    )
    print("| " + " | ".join(str(c).ljust(w) for c, w in zip(rows[0], widths, strict=True)) + " |")
    print("| " + " | ".join("-" * w for w in widths) + " |")
    for r in rows[1:]:
        print("| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)) + " |")


if __name__ == "__main__":
    main()
