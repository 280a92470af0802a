"""`tui run`'s launch: CPU and wall time from exec to each start-up phase, this tree against others.

Runs ``tui run dag.yaml --concurrency 8 --db <fresh>`` (the DAG of bench_dag.py: N x `true`
plus a fan-in task) with a probe that notes, for each phase, the process's CPU time (user +
system, every thread) and the wall time since the command was exec'd:

* ``main``: ``tui.cli.main`` imported (interpreter start, the parser's modules);
* ``imported``: ``tui.cli.run`` imported (what ``tui run`` imports before it reads a file);
* ``loaded``: ``load_files`` returned (YAML, validation, the config);
* ``started``: ``Engine.start`` called (the store opened, its settings read);
* ``submit``: ``Engine.submit`` called: everything before the engine has the tasks;
* ``first start``: the keeper's first ``spawn`` returned (the first task's process exists).

The probe is an import hook that wraps those functions once their modules are loaded, so the
order of imports is the command's own. Trees (``--against DIR``, e.g. ``git archive main |
tar -x -C DIR``) run with ``PYTHONPATH=DIR/src``, interleaved with this tree, their bytecode
compiled first. Also times ``tui --version`` and ``tui --help``. Medians of ``--repeat``.

    .venv/bin/python bench/bench_launch.py [--tasks N] [--repeat R] [--against DIR ...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_dag import bytecode_env, tui_yaml

PHASES = ("main", "imported", "loaded", "started", "submit", "first start")

# The probe's clock: _note(point) keeps the process's CPU and the wall time since exec
# (LAUNCH_T0) at a point's first passage; _seen goes to LAUNCH_OUT.
PROBE_NOTE = r"""
import json, os, sys, time
_t0 = float(os.environ["LAUNCH_T0"])
_out = os.environ["LAUNCH_OUT"]
_seen = {}

def _note(name):
    if name not in _seen:
        _seen[name] = (time.process_time(), time.time() - _t0)
"""

# The probe's import hook: calls _WANT[name](module) once each module it names is loaded.
IMPORT_HOOK = r"""
import importlib.abc, importlib.machinery

class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name not in _WANT:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        real = spec.loader.exec_module
        def exec_module(module, real=real, name=name):
            real(module)
            _WANT[name](module)
        spec.loader.exec_module = exec_module
        return spec

sys.meta_path.insert(0, _Finder())
"""

# Runs in the measured process before anything of tui is imported.
PROBE = (
    PROBE_NOTE
    + r"""
def _wrap(obj, attr, name, after=False):
    fn = getattr(obj, attr, None)
    if fn is None:
        return
    if after:
        def wrapped(*a, **k):
            r = fn(*a, **k)
            _note(name)
            return r
    else:
        def wrapped(*a, **k):
            _note(name)
            return fn(*a, **k)
    setattr(obj, attr, wrapped)

def _wrap_async_after(obj, attr, name):
    fn = getattr(obj, attr)
    async def wrapped(*a, **k):
        r = await fn(*a, **k)
        _note(name)
        return r
    setattr(obj, attr, wrapped)

_WANT = {
    "tui.cli.run": lambda m: _note("imported"),
    "tui.config.task_files": lambda m: _wrap(m, "load_files", "loaded", after=True),
    "tui.engine.scheduler": lambda m: (
        _wrap(m.Engine, "start", "started"), _wrap(m.Engine, "submit", "submit")
    ),
    "tui.procs.keeper_client": lambda m: _wrap_async_after(m.Keeper, "spawn", "first start"),
}

"""
    + IMPORT_HOOK
    + r"""from tui.cli.main import main
_note("main")
try:
    code = main(sys.argv[1:])
finally:
    with open(_out, "w") as f:
        json.dump(_seen, f)
sys.exit(code)
"""
)


def run_once(src: Path | None, yaml: Path, db: Path, env: dict[str, str]) -> dict[str, list]:
    out = db.with_suffix(".json")
    env = {**env, "LAUNCH_OUT": str(out)}
    if src is not None:
        env["PYTHONPATH"] = str(src)
    argv = [sys.executable, "-c", PROBE, "run", str(yaml), "--concurrency", "8", "--db", str(db)]
    env["LAUNCH_T0"] = repr(time.time())
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return json.loads(out.read_text())


def small_command(src: Path | None, args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU (user + system of the child) of ``tui ARGS``."""
    if src is not None:
        env = {**env, "PYTHONPATH": str(src)}
    before = os.times()
    t = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "tui", *args], env=env, check=True, stdout=subprocess.DEVNULL
    )
    wall = time.perf_counter() - t
    after = os.times()
    return wall, (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--against", type=Path, action="append", default=[])
    ns = ap.parse_args()
    env = bytecode_env()
    trees: list[tuple[str, Path | None]] = [("this", None)]
    for d in ns.against:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(d / "src")], check=True)
        trees.append((d.name, (d / "src").absolute()))
    tmp = Path(tempfile.mkdtemp(prefix="tui-bench-launch-"))
    yaml = tmp / "dag.yaml"
    yaml.write_text(tui_yaml(ns.tasks))
    got: dict[str, list[dict[str, list]]] = {label: [] for label, _ in trees}
    small: dict[str, dict[str, list[tuple[float, float]]]] = {
        label: {"--version": [], "--help": []} for label, _ in trees
    }
    print(f"load before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", file=sys.stderr)
    for i in range(ns.repeat):
        for label, src in trees:
            got[label].append(run_once(src, yaml, tmp / f"{label}-{i}.sqlite", env))
            for flag in small[label]:
                small[label][flag].append(small_command(src, [flag], env))
        print(f"  repetition {i + 1}/{ns.repeat} done", file=sys.stderr)
    print(f"load after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", file=sys.stderr)
    print(f"{'tree':<14}" + "".join(f"{p + ' cpu/wall':>24}" for p in PHASES))
    for label, _ in trees:
        row = f"{label:<14}"
        for p in PHASES:
            cpu = statistics.median(r[p][0] for r in got[label] if p in r) * 1000
            wall = statistics.median(r[p][1] for r in got[label] if p in r) * 1000
            row += f"{cpu:>14.0f} /{wall:>5.0f} ms"
        print(row)
    for flag in ("--version", "--help"):
        for label, _ in trees:
            wall = statistics.median(w for w, _ in small[label][flag]) * 1000
            cpu = statistics.median(c for _, c in small[label][flag]) * 1000
            print(f"tui {flag:<10} {label:<14} {cpu:6.0f} ms cpu {wall:6.0f} ms wall")
    return 0


if __name__ == "__main__":
    sys.exit(main())
