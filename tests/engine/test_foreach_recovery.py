"""A foreach's children are stored before its parent moves to BLOCKED; an engine that died
in between (simulated exactly: the children stored, the parent still PENDING) must find
them and not make them again. Real SQLite file, real shell subprocesses."""

from __future__ import annotations

from pathlib import Path

from tui.engine import foreach
from tui.engine.scheduler import Engine
from tui.model.loader import load_task_text
from tui.model.states import State
from tui.store.db import Store


async def test_children_stored_before_a_crash_are_not_made_again(
    store: Store, tmp_path: Path
) -> None:
    log = tmp_path / "log"
    [task] = load_task_text(
        f"""
name: each
foreach: [a, b, c]
agent: {{type: shell, instructions: "echo {{{{item}}}} >> {log}; echo {{{{item}}}}"}}
""",
        "each.yaml",
    ).tasks
    [parent] = await store.insert_tasks([task], approved=True)
    # What the dead engine had done: the children stored, in their own transaction.
    await store.insert_tasks(foreach.children(parent, ["a", "b", "c"]), approved=True)

    async with Engine(store) as e:
        await e.wait_settled([parent.id])
    recs = {r.name: r for r in await store.list_tasks()}
    assert sorted(recs) == ["each", "each[0]", "each[1]", "each[2]"]
    assert recs["each"].state == State.COMPLETED
    assert recs["each"].parsed_result == ["a", "b", "c"]
    assert sorted(log.read_text().split()) == ["a", "b", "c"]
