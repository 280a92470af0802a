"""The serial parts of `tui run` on the DAG, this tree against others: wall time of each.

The launch after the file is loaded, the submit (the store's insert), submit -> first start
and the tail after the last run's end are times in which one core works and the other
waits: every ms there is a ms of the run's wall. A probe (as bench_launch.py's) notes the
wall time since exec and the process's CPU at the entry and return of the functions on that
path (``load_files``, ``Engine.start``/``submit``/``stop``, ``Store.insert_tasks``/``close``,
``Keeper.spawn``/``close``, the printer's ``finish``, ``os._exit``); the journal gives the
first ``submitted`` row, the first run's start and the last run's end; the parent notes
when the process was gone. Trees (``--against DIR``) run interleaved with this one; each
span's median, and the median of the paired differences (this - the first other tree).

    .venv/bin/python bench/serial_path.py [--tasks N] [--repeat R] [--against DIR] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_dag import bytecode_env, tui_yaml
from bench_launch import IMPORT_HOOK, PROBE_NOTE

# Runs in the measured process before anything of tui is imported.
PROBE = (
    PROBE_NOTE
    + r"""
import atexit

def _wrap(obj, attr, name):
    fn = getattr(obj, attr)
    def wrapped(*a, **k):
        _note(name + "0")
        r = fn(*a, **k)
        _note(name + "1")
        return r
    setattr(obj, attr, wrapped)

def _wrap_async(obj, attr, name):
    fn = getattr(obj, attr)
    async def wrapped(*a, **k):
        _note(name + "0")
        r = await fn(*a, **k)
        _note(name + "1")
        return r
    setattr(obj, attr, wrapped)

def _scheduler(m):
    for attr in ("start", "submit", "stop"):
        _wrap_async(m.Engine, attr, attr)

def _store(m):
    _wrap_async(m.Store, "insert_tasks", "insert")
    _wrap_async(m.Store, "close", "sclose")

def _keeper(m):
    _wrap_async(m.Keeper, "spawn", "spawn")
    _wrap_async(m.Keeper, "close", "kclose")

_WANT = {
    "tui.cli.run": lambda m: _wrap_async(m._Printer, "finish", "finish"),
    "tui.config.task_files": lambda m: _wrap(m, "load_files", "load"),
    "tui.engine.scheduler": _scheduler,
    "tui.store.db": _store,
    "tui.procs.keeper_client": _keeper,
}

"""
    + IMPORT_HOOK
    + r"""
def _save():
    with open(_out, "w") as f:
        json.dump(_seen, f)

_real_exit = os._exit

def _exit(code):
    _note("exit")
    _save()
    _real_exit(code)

os._exit = _exit
atexit.register(_save)  # the usual exit (a thread still ran): no "exit" point
from tui.cli.main import entry
entry()
"""
)


Run = tuple[dict[str, float], dict[str, float]]  # (wall since exec, process CPU) by point

SPANS = (  # (label, from, to): probe points ("X0" entry, "X1" return) and journal times
    ("exec -> loaded", None, "load1"),
    ("loaded -> submit", "load1", "submit0"),
    ("insert", "insert0", "insert1"),
    ("insert -> submit returns", "insert1", "submit1"),
    ("submit returns -> spawned", "submit1", "spawn1"),
    ("journal: submitted -> run", "j_submitted", "j_first_run"),
    ("last end -> stop", "j_last_end", "stop0"),
    ("keeper close", "kclose0", "kclose1"),
    ("keeper closed -> stopped", "kclose1", "stop1"),
    ("stopped -> printed", "stop1", "finish1"),
    ("printed -> store close", "finish1", "sclose0"),
    ("store close", "sclose0", "sclose1"),
    ("store closed -> os._exit", "sclose1", "exit"),
    ("os._exit -> gone", "exit", "end"),
    ("last end -> gone", "j_last_end", "end"),
    ("exec -> gone", None, "end"),
)


def run_once(src: Path | None, yaml: Path, db: Path, env: dict[str, str]) -> Run:
    out = db.with_suffix(".json")
    env = {**env, "LAUNCH_OUT": str(out)}
    if src is not None:
        env["PYTHONPATH"] = str(src)
    argv = [sys.executable, "-c", PROBE, "run", str(yaml), "--concurrency", "8", "--db", str(db)]
    t0 = time.time()
    env["LAUNCH_T0"] = repr(t0)
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    end = time.time() - t0
    if done.returncode != 0:
        raise SystemExit(f"tui run failed: {done.stderr.decode(errors='replace')}")
    seen: dict[str, list[float]] = json.loads(out.read_text())
    con = sqlite3.connect(db)
    try:
        (submitted,) = con.execute("SELECT MIN(at) FROM events WHERE kind = 'submitted'").fetchone()
        (first_run, last_end) = con.execute(
            "SELECT MIN(started_at), MAX(ended_at) FROM runs"
        ).fetchone()
    finally:
        con.close()
    wall = {k: v[1] for k, v in seen.items()}
    wall.update(j_submitted=submitted - t0, j_first_run=first_run - t0, j_last_end=last_end - t0)
    wall["end"] = end
    return wall, {k: v[0] for k, v in seen.items()}


def span(wall: dict[str, float], start: str | None, stop: str) -> float | None:
    if stop not in wall or (start is not None and start not in wall):
        return None  # e.g. no os._exit: a thread still ran, the usual exit was taken
    return wall[stop] - (wall[start] if start is not None else 0.0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--tasks", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--against", type=Path, action="append", default=[])
    ap.add_argument("--json", type=Path, help="write every run's points here")
    ns = ap.parse_args()
    env = bytecode_env()
    trees: list[tuple[str, Path | None]] = [("this", None)]
    for d in ns.against:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(d / "src")], check=True)
        trees.append((d.name, (d / "src").absolute()))
    tmp = Path(tempfile.mkdtemp(prefix="tui-bench-serial-"))
    yaml = tmp / "dag.yaml"
    yaml.write_text(tui_yaml(ns.tasks))
    got: dict[str, list[Run]] = {label: [] for label, _ in trees}
    print(f"load before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", file=sys.stderr)
    for i in range(ns.repeat):
        for label, src in trees:
            got[label].append(run_once(src, yaml, tmp / f"{label}-{i}.sqlite", env))
    print(f"load after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", file=sys.stderr)
    print(f"{'span (ms, medians)':<28}" + "".join(f"{label:>16}" for label, _ in trees), end="")
    print("   paired (lower in)" if len(trees) > 1 else "")
    for name, start, stop in SPANS:
        row = f"{name:<28}"
        by_tree: dict[str, list[float | None]] = {}
        for label, _ in trees:
            by_tree[label] = [span(w, start, stop) for w, _ in got[label]]
            have = [v for v in by_tree[label] if v is not None]
            row += f"{statistics.median(have) * 1000:>16.1f}" if have else f"{'-':>16}"
        if len(trees) > 1:
            pairs = zip(by_tree["this"], by_tree[trees[1][0]], strict=True)
            diffs = [a - b for a, b in pairs if a is not None and b is not None]
            if diffs:
                lower = sum(d < 0 for d in diffs)
                row += f"   {statistics.median(diffs) * 1000:+.1f} ({lower}/{len(diffs)})"
        print(row)
    for point in ("submit0", "submit1", "spawn1", "stop0", "exit"):
        row = f"{'process CPU at ' + point:<28}"
        for label, _ in trees:
            cpu = [c[point] for _, c in got[label] if point in c]
            row += f"{statistics.median(cpu) * 1000:>16.1f}" if cpu else f"{'-':>16}"
        print(row)
    if ns.json is not None:
        runs: dict[str, Any] = {label: [w for w, _ in got[label]] for label, _ in trees}
        ns.json.write_text(json.dumps(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
