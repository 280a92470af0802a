"""The run queue on its own: priority then submission order, global and per-agent slots."""

from __future__ import annotations

from tui.engine.queue import RunQueue


def test_best_rank_first_then_submission_order_up_to_the_free_slots() -> None:
    q = RunQueue(concurrency=2)
    for rank, seq, tid in [(2, 1, "low"), (1, 2, "n1"), (0, 3, "high"), (1, 4, "n2")]:
        q.push(rank, seq, tid)
    kinds = dict.fromkeys(["low", "n1", "high", "n2"], "shell")
    assert q.pick({}, kinds.__getitem__, lambda _: True) == ["high", "n1"]
    assert q.pick({"shell": 1}, kinds.__getitem__, lambda _: True) == ["n2"]
    assert q.pick({}, kinds.__getitem__, lambda _: True) == ["low"]
    assert len(q) == 0


def test_a_task_held_by_its_agent_limit_keeps_its_place() -> None:
    q = RunQueue(concurrency=3, agent_limits={"claude": 1})
    kinds = {"a1": "claude", "a2": "claude", "b1": "gemini", "b2": "gemini", "b3": "gemini"}
    for seq, tid in enumerate(kinds):
        q.push(1, seq, tid)
    assert q.pick({}, kinds.__getitem__, lambda _: True) == ["a1", "b1", "b2"]
    # a1 still runs: a2 waits, b3 takes the free slot.
    assert q.pick({"gemini": 1, "claude": 1}, kinds.__getitem__, lambda _: True) == ["b3"]
    assert q.pick({}, kinds.__getitem__, lambda _: True) == ["a2"]


def test_stale_and_duplicate_entries_are_dropped() -> None:
    q = RunQueue(concurrency=4)
    for seq, tid in enumerate(["x", "gone", "x", "y"]):
        q.push(1, seq, tid)
    picked = q.pick({}, lambda _: "shell", lambda tid: tid != "gone")
    assert picked == ["x", "y"]
    assert len(q) == 0


def test_runs_sent_ahead_fill_up_to_slots_plus_ahead_and_stop_at_one_that_cannot_wait() -> None:
    q = RunQueue(concurrency=2)
    order = ["s1", "s2", "s3", "s4", "agent", "s5"]
    for seq, tid in enumerate(order):
        q.push(1, seq, tid)
    kind = {tid: "claude" if tid == "agent" else "shell" for tid in order}
    holdable = lambda tid: kind[tid] == "shell"  # noqa: E731
    # Two slots free, two more ahead.
    assert q.pick({"": 0}, kind.__getitem__, lambda _: True, ahead=2, holdable=holdable) == [
        "s1",
        "s2",
        "s3",
        "s4",
    ]
    # Four going on (two of them sent ahead): none free, none more ahead.
    assert q.pick({"": 4}, kind.__getitem__, lambda _: True, ahead=2, holdable=holdable) == []
    # One ended: room for one more ahead, but the next in line cannot wait for a slot: it
    # keeps its place, and nothing behind it passes it.
    assert q.pick({"": 3}, kind.__getitem__, lambda _: True, ahead=2, holdable=holdable) == []
    # A slot free: it starts, and the one behind it goes ahead.
    assert q.pick({"": 1}, kind.__getitem__, lambda _: True, ahead=2, holdable=holdable) == [
        "agent",
        "s5",
    ]
