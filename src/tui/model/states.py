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
    # Extension: final, never ran (its `when:` was false) or failed in a way its on_error /
    # on_max_retries said to pass over. Its dependents still run.
    SKIPPED = "SKIPPED"


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
        # Documented extension: a task whose condition is false is skipped without running;
        # a failed attempt is skipped when its on_error / on_max_retries says so; a manual
        # retry runs a skipped task after all.
        (S.PENDING, S.SKIPPED),
        # Documented extension: a condition that cannot be evaluated (a result without the
        # field it reads) fails its task without running it.
        (S.PENDING, S.FAILED),
        (S.RUNNING, S.SKIPPED),
        (S.SKIPPED, S.QUEUED),
        # Documented extension: a person continues a finished agent's session with a new
        # message (`tui continue`), which is a new attempt.
        (S.COMPLETED, S.QUEUED),
        # Documented extension: a parent waits on its subtasks in BLOCKED (a group from
        # there, once its dependencies are done; an agent's task once its own run is done)
        # and ends there when they do (completion: all | any), or is cancelled meanwhile.
        (S.PENDING, S.BLOCKED),
        (S.BLOCKED, S.COMPLETED),
        (S.BLOCKED, S.FAILED),
        (S.BLOCKED, S.CANCELLED),
    }
)

# States a task leaves only by a human (retry) or never: the scheduler has nothing to do.
ENDED: frozenset[State] = frozenset(
    {S.COMPLETED, S.FAILED, S.TIMED_OUT, S.CANCELLED, S.BUDGET_EXCEEDED, S.SKIPPED}
)
# Ended so that its dependents may run.
SATISFIED: frozenset[State] = frozenset({S.COMPLETED, S.SKIPPED})
# Ended badly: dependents of such a task cannot run.
UNSUCCESSFUL: frozenset[State] = ENDED - SATISFIED
# Waiting on a person (an answer, an approval, a review).
WAITING_ON_HUMAN: frozenset[State] = frozenset({S.READY, S.BLOCKED})


# The word a person reads for each state wherever the app, its messages and the engine's
# errors name one ("lint is done", "dependency build ended failed"), as the task list shows
# it. Stored values, events and --json keep the enum's values.
LABELS: dict[State, str] = {
    S.PENDING: "pending",
    S.QUEUED: "queued",
    S.RUNNING: "running",
    S.READY: "needs you",
    S.BLOCKED: "blocked",
    S.COMPLETED: "done",
    S.FAILED: "failed",
    S.TIMED_OUT: "timed out",
    S.CANCELLED: "cancelled",
    S.BUDGET_EXCEEDED: "over budget",
    S.SKIPPED: "skipped",
}


def label(state: State | str) -> str:
    """``state`` as a person reads it: "done", not COMPLETED."""
    try:
        # A State, or its text: a StrEnum hashes as its text (State(text) was ~1 us a call).
        return LABELS[state]  # type: ignore[index]
    except KeyError:
        return LABELS[State(state)]  # ValueError for a text that is no state


def being(state: State | str) -> str:
    """``state`` after a task's name in a sentence: "lint is done", "build timed out",
    "ask needs you"."""
    word = label(state)
    return word if State(state) in (S.READY, S.TIMED_OUT) else f"is {word}"


def _key(word: str) -> str:
    # "Needs-You", "needs_you" and "needs  you" name one state; so do TIMED_OUT and "timed out".
    return " ".join(word.replace("_", " ").replace("-", " ").split()).casefold()


_NAMED: dict[str, State] = {
    **{_key(s.value): s for s in State},
    **{_key(word): s for s, word in LABELS.items()},
}

# The words a command line takes and suggests for a state: the list's, a space as a dash
# (as the app's `state:` filter writes them), in the list's order.
WORDS: tuple[str, ...] = tuple(word.replace(" ", "-") for word in LABELS.values())


# Words that name several states, as the app counts and filters them and `tui ls --state`
# takes them. "failed" is every failure (a cancel is the user's choice, not one).
FAILED_GROUP: frozenset[State] = frozenset({S.FAILED, S.TIMED_OUT, S.BUDGET_EXCEEDED})
GROUPS: dict[str, frozenset[State]] = {
    "failed": FAILED_GROUP,
    "canceled": frozenset({S.CANCELLED}),
    "waiting": frozenset({S.READY, S.BLOCKED}),
    "finished": frozenset({S.COMPLETED, S.CANCELLED, S.SKIPPED, *FAILED_GROUP}),
}


def states_named(word: str) -> frozenset[State]:
    """The states ``word`` names: a group (failed, waiting, finished) or one state as
    :func:`state_named` reads it. ValueError for any other."""
    group = GROUPS.get(_key(word))
    return group if group is not None else frozenset({state_named(word)})


def state_named(word: str) -> State:
    """The state ``word`` names: the list's word ("done", "needs you" or needs-you) or the
    stored name (COMPLETED, timed_out), in any case. ValueError, saying which words there
    are, for any other."""
    try:
        return _NAMED[_key(word)]
    except KeyError:
        raise ValueError(
            f"unknown state {word!r}: one of {', '.join(WORDS)}, or waiting, finished (or a "
            "stored name such as COMPLETED)"
        ) from None


def valid_transition(src: State | str, dst: State | str) -> bool:
    """True when the table allows moving a task from ``src`` to ``dst``."""
    try:
        return (State(src), State(dst)) in TRANSITIONS
    except ValueError:
        return False
