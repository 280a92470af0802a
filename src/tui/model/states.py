"""Task states and the one transition table every writer checks against."""

from __future__ import annotations

from enum import StrEnum


class State(StrEnum):
    PENDING = "PENDING"
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    READY = "READY"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    TIMED_OUT = "TIMED_OUT"
    CANCELLED = "CANCELLED"
    BUDGET_EXCEEDED = "BUDGET_EXCEEDED"
    BLOCKED = "BLOCKED"


S = State

# The table is data: the store, the engine and the tests all read it from here.
TRANSITIONS: frozenset[tuple[State, State]] = frozenset(
    {
        (S.PENDING, S.QUEUED),
        (S.PENDING, S.CANCELLED),
        (S.QUEUED, S.RUNNING),
        (S.QUEUED, S.CANCELLED),
        (S.RUNNING, S.READY),
        (S.RUNNING, S.COMPLETED),
        (S.RUNNING, S.FAILED),
        (S.RUNNING, S.TIMED_OUT),
        (S.RUNNING, S.CANCELLED),
        (S.RUNNING, S.BUDGET_EXCEEDED),
        (S.RUNNING, S.BLOCKED),
        (S.READY, S.COMPLETED),
        (S.READY, S.PENDING),
        (S.FAILED, S.QUEUED),
        (S.TIMED_OUT, S.QUEUED),
        (S.CANCELLED, S.QUEUED),
        (S.BUDGET_EXCEEDED, S.QUEUED),
        (S.BLOCKED, S.QUEUED),
        (S.BLOCKED, S.READY),
        # Documented extension: an answer delivered to an agent that is still alive
        # resumes it, and a task waiting on a human can be cancelled.
        (S.READY, S.RUNNING),
        (S.READY, S.CANCELLED),
        # Documented extension: an attempt the engine itself interrupted (it died or was
        # stopped) is not the task's failure: the task goes back to the queue, the attempt
        # not counted against its retry policy.
        (S.RUNNING, S.QUEUED),
        # Documented extension: a person continues a finished agent's session with a new
        # message (`tui continue`), which is a new attempt.
        (S.COMPLETED, S.QUEUED),
    }
)

# States a task leaves only by a human (retry) or never: the scheduler has nothing to do.
ENDED: frozenset[State] = frozenset(
    {S.COMPLETED, S.FAILED, S.TIMED_OUT, S.CANCELLED, S.BUDGET_EXCEEDED}
)
# Ended badly: dependents of such a task cannot run.
UNSUCCESSFUL: frozenset[State] = ENDED - {S.COMPLETED}
# Waiting on a person (an answer, an approval, a review).
WAITING_ON_HUMAN: frozenset[State] = frozenset({S.READY, S.BLOCKED})


def valid_transition(src: State | str, dst: State | str) -> bool:
    """True when the table allows moving a task from ``src`` to ``dst``."""
    try:
        return (State(src), State(dst)) in TRANSITIONS
    except ValueError:
        return False
