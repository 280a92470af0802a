"""Where a finished attempt leads: its result, and the task's next state under its retry
policy, ``on_error`` and ``on_max_retries``. Pure: the engine stores what this decides, the
run's end and the move in one transaction (tui.engine.run_end)."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from tui.engine.adapter import RunResult
from tui.engine.retry import retry_delay
from tui.model.duration import format_duration
from tui.model.output_format import OutputFormatError, parse_output
from tui.model.states import State
from tui.model.task import Task
from tui.model.workflow import FileDefaults, OnError, OnMaxRetries, cap_result
from tui.store.records import TaskRecord
from tui.store.tasks import Move

# What on_error / on_max_retries act on: the attempt's own failures. A budget spent, a cancel
# by a person and an interrupted attempt keep their meaning.
ERRORS = (State.FAILED, State.TIMED_OUT)


def interrupted_move(rec: TaskRecord) -> Move:
    """RUNNING → QUEUED for an attempt the engine interrupted (it died or stopped): not the
    task's failure, so the attempt is not counted (attempt_base follows attempts)."""
    return Move(
        rec.id,
        State.RUNNING,
        State.QUEUED,
        "interrupted",
        {"attempt_base": rec.attempt_base + 1, "retry_at": None},
    )


def task_result(
    task: Task, outcome: State, error: str, result: RunResult
) -> tuple[State, str, str | None]:
    """(outcome, error, the result to store as JSON or None). A declared ``output_format``
    is parsed (a mismatch fails the attempt, so retry applies); otherwise the agent's final
    text is kept, capped (tui.model.workflow.RESULT_CHARS)."""
    if outcome == State.COMPLETED and task.output_format is not None:
        try:
            value: Any = parse_output(task.output_format, result.result)
        except OutputFormatError as e:
            return State.FAILED, f"output_format: {e}", None
        return outcome, "", json.dumps(value)
    if result.result is None:
        return outcome, error, None
    if not result.result:  # a command that printed nothing (most of a DAG's): no encoder call
        return outcome, error, '""'
    return outcome, error, json.dumps(cap_result(result.result.strip("\n")))


@dataclass(frozen=True)
class Policy:
    """What a failure means, with the task's unset fields taken from ``defaults``."""

    on_error: OnError
    on_max_retries: OnMaxRetries

    @staticmethod
    def of(task: Task, defaults: FileDefaults | None) -> Policy:
        # Read per attempt: no FileDefaults() built for a file without defaults.
        return Policy(
            task.on_error or (defaults and defaults.on_error) or OnError.RETRY,
            task.on_max_retries or (defaults and defaults.on_max_retries) or OnMaxRetries.FAIL,
        )


def attempt_move(
    rec: TaskRecord,
    outcome: State,
    reason: str,
    *,
    policy: Policy,
    now: float,
    rng: random.Random,
) -> tuple[Move, bool]:
    """Where a finished attempt goes, and whether an automatic retry is scheduled."""
    updates: dict[str, Any] = {}
    retry = rec.task.retry
    error = outcome in ERRORS
    if error and policy.on_error == OnError.RETRY and rec.attempt_in_round < retry.max_attempts:
        delay = retry_delay(retry, rec.attempt_in_round, rng)
        updates["retry_at"] = now + delay
        reason = (
            f"{reason}; retry {rec.attempt_in_round + 1}/{retry.max_attempts}"
            f" in {format_duration(round(delay, 1))}"
        )
        return Move(rec.id, (State.RUNNING, State.READY), outcome, reason, updates), True
    if error and policy.on_error == OnError.SKIP:
        outcome, reason = State.SKIPPED, f"skipped (on_error: skip) after {reason}"
    elif error and policy.on_error == OnError.RETRY and policy.on_max_retries == OnMaxRetries.SKIP:
        tries = f"{rec.attempt_in_round} attempt{'s' if rec.attempt_in_round != 1 else ''}"
        outcome, reason = State.SKIPPED, f"skipped (on_max_retries: skip) after {tries}: {reason}"
    return Move(rec.id, (State.RUNNING, State.READY), outcome, reason, updates), False
