"""The TIME column (tui.app.widgets.task_cells): a live attempt's time so far, a finished
one's duration, nothing while the next attempt has not started."""

from __future__ import annotations

import dataclasses

import pytest

from tests.app.test_task_tree import record
from tests.conftest import shell_task
from tui.app.widgets.task_cells import duration, elapsed
from tui.model.states import State


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(-3, "0s"), (0, "0s"), (59.9, "59s"), (60, "1m00s"), (65, "1m05s"), (3600, "1h00m"),
     (3 * 3600 + 61, "3h01m")],
)  # fmt: skip
def test_durations_are_short(seconds: float, shown: str) -> None:
    assert duration(seconds) == shown


def test_elapsed_follows_the_attempt() -> None:
    base = record(shell_task("t", "true"))
    running = dataclasses.replace(base, state=State.RUNNING, run_started_at=100.0)
    assert elapsed(running, now=165.0) == "1m05s"
    done = dataclasses.replace(running, state=State.COMPLETED, run_ended_at=130.0)
    assert elapsed(done, now=10_000.0) == "30s"  # its duration, not the time since
    retrying = dataclasses.replace(done, state=State.QUEUED)  # the next attempt not started
    assert elapsed(retrying, now=10_000.0) == ""
    assert elapsed(base, now=10_000.0) == ""
