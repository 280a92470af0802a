"""First frame in a real terminal: `tui` with N stored tasks, in tmux, against a bare DataTable.

Each case is started in a fresh tmux window of 120x40 (a private tmux server); the time is
from the start of the command to the first `capture-pane` that shows the first task's name
(the screen is looked at every 10 ms):

* ``tui-cold``: `tui --db DB` with no daemon running: it starts one, attaches and draws.
* ``tui-warm``: the same with the daemon of DB already running (started before the clock).
* ``datatable``: a bare Textual ``App`` with a ``DataTable`` of the same N rows x 9 columns, in
  the same tmux (the baseline).

Targets (issue 11): cold <= 1.0x the DataTable, warm <= 0.8x. Every repetition runs each case
once, in turn. ``--base TREE`` adds ``base-cold`` and ``base-warm``: the same with another
checkout's ``src`` first on PYTHONPATH (before/after a change, in one run on a busy machine).

    .venv/bin/python bench/bench_first_frame.py [--tasks 10000] [--repeat 3] [--base TREE]
        [--json PATH]
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_app import build_db
from common import machine, tui_argv, write_json

COLS, ROWS = 120, 40
TIMEOUT = 60.0
MARK = "task-000001"  # the first task's name: shown by both once their rows are drawn

DATATABLE = """
import sys
from textual.app import App
from textual.widgets import DataTable

N = int(sys.argv[1])


class Bare(App):
    def compose(self):
        yield DataTable(cursor_type="row")

    def on_mount(self):
        table = self.query_one(DataTable)
        for col in ("", "NAME", "AGENT", "PRIO", "TIME", "TRY", "COST", "TAGS", "NOTE"):
            table.add_column(col, key=col or "state")
        for i in range(1, N + 1):
            table.add_row("✔ DONE", f"task-{i:06d}", "shell", "normal", "", "1/1", "", "bench",
                          "", key=str(i))
        table.focus()


Bare().run()
"""


class Tmux:
    def __init__(self, socket: Path, env: dict[str, str]) -> None:
        self.base = ["tmux", "-S", str(socket)]
        self.env = env

    def __call__(self, *args: str, check: bool = True) -> str:
        out = subprocess.run(
            [*self.base, *args], env=self.env, capture_output=True, text=True, check=False
        )
        if check and out.returncode != 0:
            raise SystemExit(f"tmux {' '.join(args)} failed: {out.stderr.strip()}")
        return out.stdout

    def first_frame(self, name: str, argv: list[str], env: dict[str, str]) -> float:
        """Seconds from starting ``argv`` (with ``env``) in a new window to MARK on its screen."""
        cmd = " ".join(shlex.quote(a) for a in ["env", *_env_args(env), *argv])
        t0 = time.perf_counter()
        self("new-window", "-d", "-n", name, cmd)
        while time.perf_counter() - t0 < TIMEOUT:
            if MARK in self("capture-pane", "-p", "-t", name, check=False):
                elapsed = time.perf_counter() - t0
                self("kill-window", "-t", name, check=False)
                return elapsed
            time.sleep(0.01)  # looking at another process's screen: nothing to wait on
        screen = self("capture-pane", "-p", "-t", name, check=False)
        raise SystemExit(f"{name}: no {MARK!r} on screen after {TIMEOUT:.0f} s:\n{screen}")


def _env_args(env: dict[str, str]) -> list[str]:
    """What a case's command sets on top of the tmux server's environment."""
    return [f"{k}={env[k]}" for k in ("XDG_RUNTIME_DIR", "TUI_STATE_DIR", "PYTHONPATH") if k in env]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--base", metavar="TREE", help="also time another checkout's tui")
    ap.add_argument("--json", metavar="PATH")
    ns = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="tui-bench-ff-"))
    env = {
        **os.environ,
        "XDG_RUNTIME_DIR": str(tmp),  # a private daemon
        "TUI_STATE_DIR": str(tmp / "state"),
        "TERM": "xterm-256color",
    }
    # An installed tui has its bytecode; a checkout under PYTHONDONTWRITEBYTECODE has none and
    # would compile every module at every start (~0.1 s of each case).
    import tui as package

    trees = [Path(package.__file__).parent] + ([Path(ns.base) / "src" / "tui"] if ns.base else [])
    for tree in trees:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree)], check=True)
    db = tmp / "tui.db"
    build_db(db, ns.tasks)
    script = tmp / "datatable.py"
    script.write_text(DATATABLE)
    tmux = Tmux(tmp / "tmux.sock", env)
    tmux("-f", "/dev/null", "new-session", "-d", "-s", "bench", "-x", str(COLS), "-y", str(ROWS))
    tui = tui_argv()

    base_env = {**env, "PYTHONPATH": str(Path(ns.base).resolve() / "src")} if ns.base else env

    def daemon(action: str, env: dict[str, str]) -> None:
        args = [action, "--yes"] if action == "stop" else [action]
        subprocess.run([*tui, "daemon", *args, "--db", str(db)], env=env, capture_output=True)

    cases = {
        "tui-cold": ([*tui, "--db", str(db)], env),
        "tui-warm": ([*tui, "--db", str(db)], env),
        "datatable": ([sys.executable, str(script), str(ns.tasks)], env),
    }
    if ns.base:
        cases["base-cold"] = ([*tui, "--db", str(db)], base_env)
        cases["base-warm"] = ([*tui, "--db", str(db)], base_env)
    samples: dict[str, list[float]] = {k: [] for k in cases}
    print(f"first frame, {ns.tasks:,} tasks, tmux {COLS}x{ROWS}, {machine()}")
    try:
        for i in range(ns.repeat):
            for name, (argv, case_env) in cases.items():
                # A cold start has no daemon; a warm one gets it started first (by its tree).
                daemon("stop", env)
                daemon("stop", base_env)
                if name.endswith("-warm"):
                    daemon("start", case_env)
                s = tmux.first_frame(f"{name}-{i}", argv, case_env)
                samples[name].append(s)
                print(f"  {name:<10} run {i + 1}/{ns.repeat}: {s:6.3f} s", file=sys.stderr)
    finally:
        daemon("stop", env)
        daemon("stop", base_env)
        tmux("kill-server", check=False)
    load = os.getloadavg()
    med = {k: statistics.median(v) for k, v in samples.items()}
    base = med["datatable"]
    print(f"load average after the runs: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    targets = {"tui-cold": 1.0, "tui-warm": 0.8, "base-cold": 1.0, "base-warm": 0.8}
    for name in samples:
        target = targets.get(name)
        ratio = med[name] / base
        goal = (
            ""
            if target is None
            else f"  target <= {target}x: " + ("MET" if ratio <= target else "NOT MET")
        )
        print(f"{name:<10} {med[name]:6.3f} s  {ratio:5.2f}x datatable{goal}")
    write_json(
        ns.json,
        {"benchmark": "first_frame", "tasks": ns.tasks, "loadavg": load, "samples": samples},
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
