"""The agent's path alone: ``LocalExecutor.run`` → the shell adapter → ``agents/cli_process``
for a task of ``true``, with a spawner that hands back an agent that printed nothing and has
exited (as a keeper reports a quick command: its start and end in one frame), or, with
``--running``, one that exits on the loop's next turn while it is followed. No keeper, store,
engine or process: what is left is the Python and asyncio of this path, per run.

    .venv/bin/python bench/agent_path.py [--running] [--runs 3000] [--repeat 5]
    PYTHONPATH=/tmp/other/src .venv/bin/python bench/agent_path.py   # another tree

Prints the process CPU a run of each repetition (µs), sorted; compare trees interleaved.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

os.environ["TUI_KEEPER"] = "0"  # no keeper process: the spawner below is the only one

from tui.agents.shell import ShellAdapter
from tui.engine.runner import LocalExecutor, Run
from tui.model.states import State
from tui.model.task import Task
from tui.procs.process import Child, ProcIdentity
from tui.store.records import RunStart, TaskRecord

NO_GROUP = 4_194_000  # a pid above any default pid_max: its group never exists


class _Eof:
    async def read(self, n: int) -> bytes:
        return b""

    def close(self) -> None:
        pass


class _Exited(Child):
    def identity(self) -> ProcIdentity:
        return ProcIdentity(self.pid, self.pid, 0)


class _Host:
    shell = "bash"
    engine_id = "bench"
    db_path = "/nonexistent/bench.db"

    async def output_lines(
        self, run: Run, stream: int, lines: list[str], end: int | None = None
    ) -> None:
        pass

    async def ask_person(self, run: Run, kind: str, payload: dict[str, Any]) -> None:
        return None

    async def session_started(self, run: Run, session_id: str) -> None:
        pass

    def process_started(self, run: Run, proc: Child) -> None:
        pass

    async def node_started(self, run: Run, node: str) -> None:
        pass


async def _bench(runs: int, repeat: int, running: bool) -> list[float]:
    loop = asyncio.get_running_loop()

    async def spawner(
        argv: Sequence[str],
        *,
        cwd: str | None,
        env: Mapping[str, str] | None,
        stdin: int = subprocess.DEVNULL,
        executable: str | None = None,
    ) -> Child:
        child = _Exited(NO_GROUP, None, _Eof(), _Eof())
        if running:
            loop.call_soon(child._exit, 0)
        else:
            child._exit(0)
        return child

    executor = LocalExecutor({"shell": ShellAdapter()})
    executor.spawner = spawner
    task = Task.model_validate({"name": "t", "agent": {"type": "shell", "instructions": "true"}})
    rec = TaskRecord(
        "t1", "t", task, State.RUNNING, "", True, 1, 0, None, 0.0, 0, 0, "", None, None, 0, 0, 1
    )
    began = RunStart(1, 1, [], [])
    host: Any = _Host()

    async def once(i: int) -> None:
        result = await executor.run(Run(task_id="t1", run_id=i), rec, began, host)
        assert result.outcome == State.COMPLETED, result

    for i in range(200):  # warm up
        await once(i)
    per_run = []
    for _ in range(repeat):
        t0 = time.process_time()
        for i in range(runs):
            await once(i)
        per_run.append((time.process_time() - t0) / runs * 1e6)
    return sorted(per_run)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--running", action="store_true", help="the agent exits while followed")
    ns = ap.parse_args()
    per_run = asyncio.run(_bench(ns.runs, ns.repeat, ns.running))
    import tui

    where = os.path.dirname(os.path.dirname(tui.__file__))
    load = os.getloadavg()[0]
    print(f"{where}: µs a run {' '.join(f'{x:.1f}' for x in per_run)} (load {load:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
