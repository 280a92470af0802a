"""The keeper's own CPU in the DAG benchmark's run: ``tui run DAG --concurrency 8`` from this
tree and from others, interleaved; the keeper (the engine's child running keeper.py) found in
/proc and read every 5 ms until it exits (its loop thread apart from its start threads).

    .venv/bin/python bench/keeper_dag.py DAG.yaml [--repeat 5] [--against DIR ...]

DAG.yaml: the one ``bench/bench_dag.py --keep`` leaves in its work dir.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_TICK = os.sysconf("SC_CLK_TCK")


def _cpu(path: str) -> float:
    raw = Path(path).read_bytes()
    f = raw[raw.rfind(b")") + 2 :].split()
    return (int(f[11]) + int(f[12])) / _TICK


def _keeper_of(pid: int) -> int | None:
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            try:
                cmd = Path(f"/proc/{child}/cmdline").read_bytes()
            except OSError:
                continue
            if b"keeper.py" in cmd:
                return int(child)
    return None


def _one(tree: Path, dag: Path, db: Path) -> tuple[float, float, float]:
    env = dict(os.environ, PYTHONPATH=str(tree / "src"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    argv = [sys.executable, "-m", "tui", "run", str(dag), "--concurrency", "8", "--db", str(db)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, cwd=dag.parent)
    keeper = None
    total = loop = 0.0
    while proc.poll() is None:
        try:
            keeper = keeper or _keeper_of(proc.pid)
            if keeper is not None:
                total = _cpu(f"/proc/{keeper}/stat")
                loop = _cpu(f"/proc/{keeper}/task/{keeper}/stat")
        except OSError:
            pass
        time.sleep(0.005)
    assert proc.returncode == 0, proc.returncode
    return time.perf_counter() - t0, total, loop


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dag", type=Path)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--against", type=Path, action="append", default=[])
    args = ap.parse_args()
    here = Path(__file__).resolve().parent.parent
    trees = [here, *(t.resolve() for t in args.against)]
    rows: dict[Path, list[tuple[float, float, float]]] = {t: [] for t in trees}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            for n, tree in enumerate(trees):
                r = _one(tree, args.dag.resolve(), Path(tmp) / f"{n}-{i}.db")
                rows[tree].append(r)
                print(
                    f"{tree.name:16} wall {r[0]:.3f}s keeper {r[1]:.3f}s (loop {r[2]:.3f}s, "
                    f"start threads {r[1] - r[2]:.3f}s) load {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
    for tree, rs in rows.items():
        med = [sorted(r[k] for r in rs)[len(rs) // 2] for k in range(3)]
        print(f"median {tree.name:16} wall {med[0]:.3f}s keeper {med[1]:.3f}s (loop {med[2]:.3f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
