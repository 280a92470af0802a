"""What an engine that died (kill -9, power loss) left behind, put right before scheduling.

Its runs are still open in the store: their process groups are killed (found by the identity
stored in the run row) and the runs are ended as interrupted. What then happens to their tasks
is the engine's business (``Engine._recover``).
"""

from __future__ import annotations

from tui.engine.procs import ProcIdentity, kill_orphan_group
from tui.store.db import Store


async def end_orphaned_runs(store: Store) -> list[str]:
    """Kill the processes of every open run and end it as interrupted; returns their tasks."""
    tasks = []
    for run in await store.runs(open_only=True):
        if run.pid and run.pgid:
            kill_orphan_group(ProcIdentity(run.pid, run.pgid, run.proc_start or -1))
        await store.end_run(run.id, outcome="interrupted", error="interrupted")
        tasks.append(run.task_id)
    return tasks
