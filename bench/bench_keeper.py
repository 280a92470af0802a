"""The keeper's cost per spawn, without the engine: N plain ``true`` agents started through a
keeper (tui.procs.keeper_client), C at a time, each read to its EOFs and exit as the engine
does. Prints wall, the keeper process's own CPU (utime+stime from /proc, read before it is
told to stop), its reaped children's CPU, and this process's own CPU (the engine's side).

    .venv/bin/python bench/bench_keeper.py [--n 1000] [--c 8] [--repeat 3] [--against DIR]

With ``--against DIR`` the runs alternate between this tree and DIR's (``DIR/src`` on
PYTHONPATH), one process per run, so both see the same load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

_TICK = os.sysconf("SC_CLK_TCK")


def _cpu(pid: int, task: str = "") -> tuple[float, float]:
    raw = Path(f"/proc/{pid}{task}/stat").read_bytes()
    f = raw[raw.rfind(b")") + 2 :].split()
    # fields 14-17 (utime, stime, cutime, cstime) are at 11-14 after the state (field 3)
    return (int(f[11]) + int(f[12])) / _TICK, (int(f[13]) + int(f[14])) / _TICK


async def _one(n: int, c: int) -> dict[str, float]:
    from tui.procs.keeper_client import Keeper

    keeper = Keeper()
    keeper.start()
    warm = await keeper.spawn(["true"], cwd=None, env=None, executable="/usr/bin/true")
    await _follow(warm)
    assert keeper.pid is not None
    k0, _ = _cpu(keeper.pid)
    loop0, _ = _cpu(keeper.pid, f"/task/{keeper.pid}")
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    sem = asyncio.Semaphore(c)
    env = dict(os.environ)

    async def run() -> None:
        async with sem:
            proc = await keeper.spawn(["true"], cwd=None, env=env, executable="/usr/bin/true")
            await _follow(proc)

    t0 = time.perf_counter()
    await asyncio.gather(*(run() for _ in range(n)))
    wall = time.perf_counter() - t0
    k1, kc = _cpu(keeper.pid)
    loop1, _ = _cpu(keeper.pid, f"/task/{keeper.pid}")
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    await keeper.close()
    own = r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime
    return {
        "wall": wall,
        "keeper": k1 - k0,
        "loop": loop1 - loop0,
        "agents": kc,
        "engine": own,
    }


async def _follow(proc: object) -> None:
    from tui.procs.process import Child

    assert isinstance(proc, Child)
    while await proc.stdout.read(65536):
        pass
    while await proc.stderr.read(65536):
        pass
    await proc.wait()
    proc.close_pipes()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--c", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--against", help="another tree, run interleaved")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(_one(args.n, args.c))))
        return 0
    here = Path(__file__).resolve().parent.parent
    trees = [("this", here)] + ([("against", Path(args.against))] if args.against else [])
    rows: dict[str, list[dict[str, float]]] = {name: [] for name, _ in trees}
    for _ in range(args.repeat):
        for name, tree in trees:
            env = dict(os.environ, PYTHONPATH=str(tree / "src"))
            out = subprocess.run(
                [sys.executable, __file__, "--child", "--n", str(args.n), "--c", str(args.c)],
                env=env,
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            rows[name].append(json.loads(out))
            load = os.getloadavg()[0]
            r = rows[name][-1]
            print(
                f"{name:8} wall {r['wall']:.3f}s keeper {r['keeper']:.3f}s "
                f"(loop {r['loop']:.3f}s) "
                f"agents {r['agents']:.3f}s engine {r['engine']:.3f}s load {load:.1f}",
                flush=True,
            )
    for name, rs in rows.items():
        med = {k: sorted(r[k] for r in rs)[len(rs) // 2] for k in rs[0]}
        print(
            f"median {name:8} wall {med['wall']:.3f}s keeper {med['keeper']:.3f}s "
            f"(loop {med['loop']:.3f}s) "
            f"agents {med['agents']:.3f}s engine {med['engine']:.3f}s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
