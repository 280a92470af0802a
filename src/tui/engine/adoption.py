"""Recovery's way with agents a dead engine left running: adopt them instead of killing them
and running their tasks again.

When an engine dies (kill -9), its keeper (tui.procs.keeper) keeps the agents that can be
adopted (plain commands: the shell kind) running, reads their output and keeps what the store
does not have yet; then it waits for the next engine at a socket in the user's runtime
directory, or, once they are done or it gave up waiting, leaves a results file beside the
database (tui.procs.keeper_client). The next engine's recovery finds it, claims the runs still
open (they stay RUNNING; recovery does not kill their processes), stores their missing output
once (from the byte offsets committed with the lines it has, ``runs.out_offset``/
``err_offset``) and carries them on as if it had started them: timeout, cancel and the run's
end as after any run. See docs/daemon.md, "Crash safety".

A part of ``Engine`` (mixed in, as ``run_end`` is).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from tui.engine.core import EngineCore
from tui.engine.runner import LocalExecutor, Run, RunHost
from tui.model.states import State
from tui.procs.keeper_client import Keeper
from tui.procs.kept_child import KeptChild
from tui.procs.kept_runs import (
    EndedChild,
    KeptRun,
    read_results,
    results_path,
)
from tui.procs.process import Child
from tui.store.records import STDOUT, RunRecord

log = logging.getLogger(__name__)

TAIL_LINES = 200  # stored lines read back to find a run's last stdout lines (its result)


@dataclass
class Adopted:
    row: RunRecord
    proc: Child
    offsets: tuple[int, int]

    @property
    def group(self) -> int:
        """The agent's process group while it runs (spared by recovery), else 0."""
        return self.proc.pid if self.proc.returncode is None else 0


class Adoption(EngineCore):
    _adopted_runs: int  # going on now (tui.engine.dispatch sends nothing ahead meanwhile)

    async def _adopt_kept(self, ended: Collection[int]) -> dict[int, Adopted]:
        """Claim the open runs of dead engines whose agents their keepers kept (the runs in
        ``ended`` aside: the end log finishes those), by run id."""
        executor = self.executor
        if not isinstance(executor, LocalExecutor):  # agents on Ray: nothing kept here
            return {}
        db = self.db_path
        opened: dict[str, dict[int, RunRecord]] = {}
        for row in await self.store.runs(open_only=True):
            if row.engine_id != self.engine_id:
                opened.setdefault(row.engine_id, {})[row.id] = row
        self._forget_results(db, set(opened))
        adopted: dict[int, Adopted] = {}
        for engine_id, rows in opened.items():
            keeper = await _attach(db, engine_id)
            if keeper is not None:
                keeper_, kept = keeper
                executor.attached.append(keeper_)
                for k in kept:
                    kept_row = rows.get(k.run_id)
                    if (
                        kept_row is None
                        or k.run_id in ended
                        or not await self._still_running(kept_row)
                    ):
                        keeper_.drop(k)
                        continue
                    offsets = await self.store.run_offsets(k.run_id)
                    adopted[k.run_id] = Adopted(kept_row, keeper_.claim(k, offsets), offsets)
            for left in read_results(results_path(db, engine_id)):
                left_row = rows.get(left.run_id)
                if (
                    left_row is None
                    or left.code is None  # killed at the keeper's deadline: run again
                    or left.run_id in adopted
                    or left.run_id in ended
                    or not await self._still_running(left_row)
                ):
                    continue
                offsets = await self.store.run_offsets(left.run_id)
                adopted[left.run_id] = Adopted(left_row, EndedChild(left, offsets), offsets)
        return adopted

    async def _still_running(self, row: RunRecord) -> bool:
        rec = await self.store.get_task(row.task_id)
        return rec is not None and rec.state == State.RUNNING

    @staticmethod
    def _forget_results(db: str, engines: set[str]) -> None:
        """Results files of engines with no open run left are done with."""
        where = Path(db)
        prefix = f"{where.name}-kept-"
        with contextlib.suppress(OSError):
            for path in where.parent.glob(f"{where.name}-kept-*"):
                engine_id = path.name[len(prefix) :]
                if engine_id not in engines:
                    with contextlib.suppress(OSError):
                        path.unlink()

    async def _carry_on(self, adopted: dict[int, Adopted]) -> None:
        """Runs claimed by ``_adopt_kept``, carried on as this engine's own (after ``load``)."""
        for a in adopted.values():
            rec = self._tasks.get(a.row.task_id)
            if rec is None or rec.state != State.RUNNING:  # cannot be: it was checked
                await self.store.end_run(a.row.id, outcome="interrupted", error="interrupted")
                if isinstance(a.proc, KeptChild):
                    a.proc.release()  # the keeper kills it
                continue
            text_seq, raw_seq = await self.store.run_stored(a.row.id)
            run = Run(rec.id, a.row.id, text_seq, raw_seq, attempt=a.row.attempt)
            run.proc = a.proc
            if isinstance(a.proc, KeptChild):
                run.ack = a.proc.ack
            if a.row.pid is None and a.proc.returncode is None:  # killed before it was stored
                start = a.proc.identity().start_time
                run.recorded = asyncio.ensure_future(
                    self.store.set_run_process(
                        run.run_id, a.proc.pid, a.proc.pid, functools.partial(int, start)
                    )
                )
            self._running[rec.id] = run
            self._adopted_runs += 1  # under a dead engine's keeper: nothing is sent ahead
            tail = await self._stdout_tail(run)
            run.runner = asyncio.create_task(
                self._adopted(run, a, tail), name=f"run-{rec.name}-adopted"
            )
            self._runners.add(run.runner)
            run.runner.add_done_callback(self._runners.discard)

    async def _adopted(self, run: Run, a: Adopted, tail: list[str]) -> None:
        executor = cast("LocalExecutor", self.executor)
        rec = self._tasks[run.task_id]
        elapsed = max(0.0, time.time() - a.row.started_at)
        host = cast("RunHost", self)
        try:
            result = await executor.adopt(run, rec, host, a.proc, a.offsets, tail, elapsed)
        finally:
            self._adopted_runs -= 1
        await self._finish(run, result)

    async def _stdout_tail(self, run: Run) -> list[str]:
        """The run's last stored stdout lines: what its result is made of so far."""
        if run.seq == 0:
            return []
        lines = await self.store.read_run_lines(run.run_id, max(1, run.seq - TAIL_LINES), run.seq)
        return [ln.text for ln in lines if ln.stream == STDOUT][-20:]


async def _attach(db: str, engine_id: str) -> tuple[Keeper, list[KeptRun]] | None:
    return await Keeper.adopt_from(db, engine_id)
