"""Where the DAG's run phase waits: how busy the machine's cores are in each phase of `tui run`,
and how long a slot takes to go round (the engine's hand-offs with its keeper).

Runs ``tui run DAG --concurrency C --db <fresh>`` in-process (the DAG of bench_dag.py) for
each ``--concurrency``, while a thread samples /proc/stat every millisecond; the journal's
first start and last end split the run into the launch, the run phase and the tail. A probe
on the engine's keeper link (``Keeper._flush`` out, ``Keeper._received`` in) times, for the
run phase, each slot's round: a run's exit received → the spawn of the run that takes its
slot sent (the engine's share), and a spawn sent → its "spawned" reply received (the keeper
and the agent's exec). Busy is every core's non-idle time (user, system, irq, another
process's too: run it on a quiet machine), so 100 % is both cores working all the time.

    .venv/bin/python bench/run_phase.py [--tasks N] [--concurrency 8 16 32] [--repeat R]
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench_dag import bytecode_env, tui_yaml

# Runs in the measured process: the probe, then `tui` itself. Writes its timings to argv[1].
PROBE = r"""
import json, os, sys, time
import tui.procs.keeper_client as kc
now = time.time
out, sent, spawned, exited = sys.argv.pop(1), [], [], []
receive, flush = kc.Keeper._received, kc.Keeper._flush
def received(self, messages):
    t = now()
    for m in messages:
        if m[0] == "spawned":
            spawned.append(t)
        elif m[0] == "exited":
            exited.append(t)
    receive(self, messages)
def flushed(self):
    t = now()
    sent.extend(t for m in self._outbox if m[0] == "spawn")
    flush(self)
kc.Keeper._received, kc.Keeper._flush = received, flushed
from tui.cli.main import main
try:
    code = main(sys.argv[1:])
finally:
    with open(out, "w") as f:
        json.dump({"sent": sent, "spawned": spawned, "exited": exited}, f)
sys.stdout.flush()
sys.stderr.flush()
os._exit(code)  # as `tui` leaves (tui.cli.main.entry): no interpreter teardown in the tail
"""


def _busy_jiffies() -> tuple[int, int]:
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v) - v[3] - v[4], sum(v)  # (not idle nor iowait, all)


def run_once(dag: Path, db: Path, concurrency: int, env: dict[str, str]) -> dict[str, float]:
    samples: list[tuple[float, int, int]] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            samples.append((time.time(), *_busy_jiffies()))
            stop.wait(0.001)

    sampler = threading.Thread(target=sample)
    sampler.start()
    timings = db.with_suffix(".json")
    argv = [sys.executable, "-c", PROBE, str(timings), "run", str(dag)]
    argv += ["--concurrency", str(concurrency), "--db", str(db)]
    t0 = time.time()
    try:
        subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    finally:
        t1 = time.time()
        stop.set()
        sampler.join()
    con = sqlite3.connect(db)
    first, last = con.execute("SELECT MIN(started_at), MAX(ended_at) FROM runs").fetchone()
    con.close()
    at = [s[0] for s in samples]

    def busy(a: float, b: float) -> float:
        i = min(bisect.bisect_left(at, a), len(samples) - 1)
        j = min(bisect.bisect_left(at, b), len(samples) - 1)
        total = samples[j][2] - samples[i][2]
        return (samples[j][1] - samples[i][1]) / total if total else float("nan")

    seen = json.loads(timings.read_text())
    sent, spawned, exited = seen["sent"], seen["spawned"], seen["exited"]
    # The k-th exit frees a slot; the spawn C places later fills it (the first C fill empty
    # slots). Spawns are answered in the order sent.
    rounds = [sent[k + concurrency] - exited[k] for k in range(len(sent) - concurrency)]
    answers = [spawned[k] - sent[k] for k in range(min(len(sent), len(spawned)))]
    return {
        "wall": t1 - t0,
        "launch": first - t0,
        "run": last - first,
        "tail": t1 - last,
        "busy launch": busy(t0, first),
        "busy run": busy(first, last),
        "engine ms": statistics.median(rounds) * 1000,
        "keeper ms": statistics.median(answers) * 1000,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=1000)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[8, 16, 32])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    env = bytecode_env()
    print(f"load before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory(prefix="tui-run-phase-") as tmp:
        dag = Path(tmp) / "dag.yaml"
        dag.write_text(tui_yaml(args.tasks))
        rows: dict[int, list[dict[str, float]]] = {c: [] for c in args.concurrency}
        for r in range(args.repeat):
            for c in args.concurrency:  # interleaved: a drifting load is shared out
                rows[c].append(run_once(dag, Path(tmp) / f"c{c}-{r}.db", c, env))
    print(f"load after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    keys = list(rows[args.concurrency[0]][0])
    print("concurrency " + " ".join(f"{k:>12}" for k in keys) + "   (medians; s, busy %, ms)")
    for c, runs in rows.items():
        med = {k: statistics.median(r[k] for r in runs) for k in keys}
        cells = [
            f"{med[k] * 100:11.0f}%" if k.startswith("busy") else f"{med[k]:12.3f}" for k in keys
        ]
        print(f"{c:>11} " + " ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
