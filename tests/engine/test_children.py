"""A parent's children counted as they change (tui.engine.children): what settling the parent
reads instead of rescanning every child."""

from __future__ import annotations

import time

from tests.engine.workflow_support import task_record
from tui.engine.children import Children
from tui.model.states import State


def counts(kids: Children) -> dict[str, object]:
    return {
        "n": len(kids),
        "completed": kids.completed,
        "over": kids.over,
        "lost": kids.lost,
        "busy": kids.busy,
        "live": kids.live,
        "pending": list(kids.pending),
    }


def test_counts_follow_each_child_through_its_states() -> None:
    kids = Children()
    for i in range(3):
        assert kids.add(task_record(f"c{i}", State.PENDING))
    assert not kids.add(task_record("c0", State.PENDING))  # known: counted again, not twice
    assert list(kids) == ["c0", "c1", "c2"]
    assert counts(kids) == {
        "n": 3,
        "completed": 0,
        "over": 0,
        "lost": 0,
        "busy": 0,
        "live": 3,
        "pending": ["c0", "c1", "c2"],
    }

    kids.reserved.add("c0")  # let out under max_parallel, not moved yet: holds a slot
    assert kids.busy == 1
    kids.update(task_record("c0", State.QUEUED))
    assert kids.busy == 1 and kids.reserved == set()
    kids.update(task_record("c0", State.RUNNING))
    kids.update(task_record("c1", State.SKIPPED))
    kids.update(task_record("c2", State.FAILED, retry_at=time.time() + 60))  # a retry is coming
    assert counts(kids) == {
        "n": 3,
        "completed": 0,
        "over": 1,
        "lost": 0,
        "busy": 1,
        "live": 1,
        "pending": [],
    }

    kids.update(task_record("c2", State.FAILED))  # no retry left: failed for good
    kids.update(task_record("c0", State.COMPLETED))
    assert counts(kids) == {
        "n": 3,
        "completed": 1,
        "over": 3,
        "lost": 1,
        "busy": 0,
        "live": 0,
        "pending": [],
    }

    kids.update(task_record("c2", State.PENDING))  # retried by hand
    assert kids.lost == 0 and kids.over == 2 and kids.live == 1 and list(kids.pending) == ["c2"]


def test_counts_built_from_stored_records_equal_counts_kept_along_the_way() -> None:
    """After a restart the engine counts the children as it loads them: the same numbers."""
    states = [State.COMPLETED, State.RUNNING, State.FAILED, State.PENDING, State.CANCELLED]
    kept = Children()
    finals = []
    for i in range(len(states)):
        kept.add(task_record(f"c{i}", State.PENDING))
    for i, state in enumerate(states):
        for step in (State.QUEUED, State.RUNNING, state):
            kept.update(task_record(f"c{i}", step))
        finals.append(task_record(f"c{i}", state))
    loaded = Children()
    for rec in finals:
        loaded.add(rec)
    assert counts(loaded) == counts(kept)
    assert counts(loaded)["lost"] == 2 and counts(loaded)["completed"] == 1
