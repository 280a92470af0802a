"""The keeper's CPU and the engine main thread's in the DAG's run phase, by their own clocks.

One in-process ``tui run DAG --concurrency 8`` a row: the engine's main thread from
``Engine.submit``'s return to ``Engine.stop`` (``thread_time``), and its keeper run through this
file, which writes the keeper's loop thread and whole-process clocks as it exits (ns, where
bench/keeper_dag.py reads /proc's 10 ms ticks while it runs). Also the frames each way and
the engine's reads of them. Trees interleaved, medians:

    .venv/bin/python bench/keeper_run_cpu.py DAG.yaml [--repeat 5] [--against DIR ...]

DAG.yaml: the one ``bench/bench_dag.py --keep`` leaves in its work dir.
"""

from __future__ import annotations

import os
import sys
import time

_OUT = "KEEPER_RUN_CPU_OUT"  # set: this process is the keeper, started by an engine of --one
_SRC = "KEEPER_RUN_CPU_SRC"


def _keeper() -> None:
    """As ``python -I -S keeper.py FD ENGINE_ID``, importing nothing more than it does."""
    sys.path.append(os.environ[_SRC])
    from tui.procs import keeper

    def write_clocks() -> None:
        with open(os.environ[_OUT], "w") as f:
            f.write(f"{time.thread_time()} {time.process_time()}")

    exit_now = os._exit

    def clocked_exit(code: int) -> None:  # the keeper leaves by os._exit: no finally runs
        write_clocks()
        exit_now(code)

    os._exit = clocked_exit  # type: ignore[assignment]
    try:
        keeper.main()
    finally:
        write_clocks()


def _one(dag: str, db: str) -> None:
    """One run in this process: prints main-run, keeper loop, keeper, frames in/out, reads."""
    import contextlib
    import io
    from pathlib import Path
    from typing import Any

    import tui.procs.keeper_client as kc
    from tui.cli.main import main as tui_main
    from tui.engine.scheduler import Engine

    out = f"{db}.keeper"
    os.environ[_SRC] = str(Path(kc.__file__).resolve().parents[2])
    os.environ[_OUT] = out
    kc._KEEPER = os.path.abspath(__file__)
    counts = {"in": 0, "reads": 0, "out": 0}
    received, data_received, flush = kc.Keeper._received, kc._Link.data_received, kc.Keeper._flush

    def count_received(self: Any, messages: Any) -> None:
        counts["in"] += 1
        received(self, messages)

    def count_reads(self: Any, data: bytes) -> None:
        counts["reads"] += 1
        data_received(self, data)

    def count_flush(self: Any) -> None:
        counts["out"] += bool(self._outbox and self._transport is not None)
        flush(self)

    kc.Keeper._received = count_received  # type: ignore[method-assign]
    kc._Link.data_received = count_reads  # type: ignore[method-assign]
    kc.Keeper._flush = count_flush  # type: ignore[method-assign]
    mark: dict[str, float] = {}
    submit, stop = Engine.submit, Engine.stop

    async def timed_submit(self: Any, *a: Any, **kw: Any) -> Any:
        ids = await submit(self, *a, **kw)
        mark["submitted"] = time.thread_time()
        return ids

    async def timed_stop(self: Any) -> None:
        mark["stopping"] = time.thread_time()
        await stop(self)

    Engine.submit = timed_submit  # type: ignore[method-assign]
    Engine.stop = timed_stop  # type: ignore[method-assign]
    with contextlib.redirect_stdout(io.StringIO()):
        code = tui_main(["run", dag, "--concurrency", "8", "--db", db])
    assert code == 0, code
    deadline = time.monotonic() + 10
    while not (os.path.exists(out) and os.path.getsize(out)):  # the keeper exits after us
        assert time.monotonic() < deadline, "the keeper did not write its clocks"
        time.sleep(0.01)
    loop, total = Path(out).read_text().split()
    main = mark["stopping"] - mark["submitted"]
    print(main, loop, total, counts["in"], counts["out"], counts["reads"])


def main() -> int:
    import argparse
    import statistics
    import subprocess
    import tempfile
    from pathlib import Path

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dag", type=Path)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--against", type=Path, action="append", default=[])
    ap.add_argument("--one", nargs=2, metavar=("DAG", "DB"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        _one(*args.one)
        return 0
    here = Path(__file__).resolve().parent.parent
    trees = [here, *(t.resolve() for t in args.against)]
    rows: dict[Path, list[list[float]]] = {t: [] for t in trees}
    dag = args.dag.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            for n, tree in enumerate(trees):
                env = dict(os.environ, PYTHONPATH=str(tree / "src"))
                db = str(Path(tmp) / f"{n}-{i}.db")
                argv = [sys.executable, __file__, str(dag), "--one", str(dag), db]
                line = subprocess.run(
                    argv, env=env, cwd=dag.parent, capture_output=True, text=True, check=True
                ).stdout.split()
                r = [float(x) for x in line]
                rows[tree].append(r)
                print(
                    f"{tree.name:16} main thread {r[0]:.3f}s keeper {r[2]:.3f}s (loop {r[1]:.3f}s)"
                    f" sum {r[0] + r[2]:.3f}s frames in {r[3]:.0f} out {r[4]:.0f} reads"
                    f" {r[5]:.0f} load {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
    for tree, rs in rows.items():
        m = [statistics.median(r[k] for r in rs) for k in range(6)]
        s = statistics.median(r[0] + r[2] for r in rs)
        print(
            f"median {tree.name:16} main thread {m[0]:.3f}s keeper {m[2]:.3f}s (loop {m[1]:.3f}s)"
            f" sum {s:.3f}s frames in {m[3]:.0f} out {m[4]:.0f} reads {m[5]:.0f}"
        )
    return 0


if __name__ == "__main__":
    if os.environ.get(_OUT):  # started as the keeper: keeper.py's arguments
        _keeper()
    else:
        sys.exit(main())
