from itertools import product

import pytest

from tui.model.states import LABELS, TRANSITIONS, State, state_named, valid_transition

# Written out again from the issue on purpose: the table in the code must match it exactly.
# The last lines hold our documented extensions (README "States"): the engine's own, then the
# workflows' SKIPPED and a condition that cannot be evaluated, then a parent waiting on its
# subtasks in BLOCKED and ending there.
EXPECTED = """
PENDING QUEUED; PENDING CANCELLED; QUEUED RUNNING; QUEUED CANCELLED; RUNNING READY;
RUNNING COMPLETED; RUNNING FAILED; RUNNING TIMED_OUT; RUNNING CANCELLED; RUNNING BUDGET_EXCEEDED;
RUNNING BLOCKED; READY COMPLETED; READY PENDING; FAILED QUEUED; TIMED_OUT QUEUED;
CANCELLED QUEUED; BUDGET_EXCEEDED QUEUED; BLOCKED QUEUED; BLOCKED READY;
READY RUNNING; READY CANCELLED; RUNNING QUEUED;
PENDING SKIPPED; RUNNING SKIPPED; SKIPPED QUEUED; PENDING FAILED; COMPLETED QUEUED;
PENDING BLOCKED; BLOCKED COMPLETED; BLOCKED FAILED; BLOCKED CANCELLED
"""
ALLOWED = {tuple(p.split()) for p in EXPECTED.replace("\n", " ").split(";")}


def test_ten_states_and_skipped() -> None:
    assert len(State) == 11 and State.SKIPPED == "SKIPPED"


def test_every_listed_transition_is_allowed() -> None:
    for a, b in ALLOWED:
        assert valid_transition(a, b), (a, b)


def test_every_other_pair_is_forbidden() -> None:
    for a, b in product(State, State):
        assert valid_transition(a, b) == ((a.value, b.value) in ALLOWED), (a, b)
    assert len(TRANSITIONS) == len(ALLOWED)


def test_completed_leaves_only_for_the_queue() -> None:
    # Only `tui continue` (a person resuming the agent's session) moves a COMPLETED task.
    assert [s for s in State if valid_transition(State.COMPLETED, s)] == [State.QUEUED]


def test_unknown_state_names_are_rejected() -> None:
    assert not valid_transition("PENDING", "DONE")
    assert not valid_transition("nope", "QUEUED")


def test_a_state_is_named_by_the_lists_word_or_its_stored_name() -> None:
    for word in ("done", "DONE", "Completed", "COMPLETED"):
        assert state_named(word) is State.COMPLETED, word
    for word in ("needs you", "needs-you", "NEEDS_YOU", "ready", "READY"):
        assert state_named(word) is State.READY, word
    for word in ("timed out", "timed-out", "TIMED_OUT", "timed_out"):
        assert state_named(word) is State.TIMED_OUT, word
    assert state_named("over budget") is state_named("BUDGET_EXCEEDED") is State.BUDGET_EXCEEDED
    # Every state by each of its names: no word names two states.
    for s in State:
        assert state_named(s.value) is state_named(LABELS[s]) is s


def test_an_unknown_state_word_says_which_there_are() -> None:
    with pytest.raises(ValueError) as e:
        state_named("finished")
    assert str(e.value).startswith("unknown state 'finished': one of pending, queued, running,")
    assert "needs-you" in str(e.value) and "over-budget" in str(e.value)
