"""Plain records read back from the store (what viewers and the CLI see)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from tui.model.classify import CLASSIFYING
from tui.model.states import SATISFIED, UNSUCCESSFUL, State
from tui.model.task import STORED, Task


@dataclass
class TaskRecord:
    """A task and its runtime columns. ``spec`` is the ``Task``, or its stored JSON until
    something needs it: listing 10,000 tasks validates none of them (``task`` parses on first
    use), so the app and the engine start without paying for specs they never look at."""

    id: str
    name: str
    spec: Task | str
    state: State
    reason: str
    approved: bool
    attempts: int
    attempt_base: int
    retry_at: float | None
    cost_usd: float
    tokens_in: int
    tokens_out: int
    rejection_comment: str
    question_json: str | None
    result: str | None
    created_at: float
    updated_at: float
    submit_seq: int
    depends_on: list[str] = field(default_factory=list)
    # The latest run (this attempt): when it started, and when it ended (None while it runs).
    run_started_at: float | None = None
    run_ended_at: float | None = None
    run_node: str = ""  # the Ray node the latest run was placed on ("" when run locally)
    summary: str | None = None  # JSON kept for `transfer: summary` (tui.engine.summaries)

    @property
    def task(self) -> Task:
        spec = self.spec
        if isinstance(spec, str):
            spec = self.spec = Task.model_validate_json(spec, context=STORED)
        return spec

    def spec_fields(self, *keys: str) -> tuple[Any, ...]:
        """Top-level spec fields as plain JSON values, without validating the task (json.loads
        is ~8x cheaper): for filters and sorts that look at every one of thousands of tasks."""
        spec = self.spec
        if isinstance(spec, str):
            data = json.loads(spec)
            return tuple(data.get(k) for k in keys)
        return tuple(spec.model_dump(mode="json", include=set(keys)).get(k) for k in keys)

    @property
    def attempt_in_round(self) -> int:
        """Attempts used since the last manual retry (what the retry policy counts)."""
        return self.attempts - self.attempt_base

    @property
    def settled(self) -> bool:
        """Nothing more happens to this task without a person: done, or failed for good."""
        return self.state in SATISFIED or (self.state in UNSUCCESSFUL and self.retry_at is None)

    @property
    def phase(self) -> str:
        """A step within the state worth showing: "classifying" for a PENDING task whose
        agent a classifier task is still to pick (tui.engine.classifying); else ""."""
        if self.state == State.PENDING and self.spec_fields("classify_by")[0]:
            return CLASSIFYING
        return ""

    @property
    def parsed_result(self) -> Any:
        """The result checked against the task's output_format (stored as JSON), if any."""
        return json.loads(self.result) if self.result else None

    def to_json(self) -> dict[str, Any]:
        t = self.task
        return {
            "id": t.id,
            "name": t.name,
            "state": self.state.value,
            "phase": self.phase,
            "reason": self.reason,
            "agent": t.agent.type,
            "model": t.agent.model,
            "priority": t.priority.value or "normal",
            "tags": list(t.tags),
            "depends_on": list(self.depends_on),
            "attempts": self.attempts,
            "max_attempts": t.retry.max_attempts,
            "cost_usd": self.cost_usd,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "retry_at": self.retry_at,
            "parent_task_id": t.parent_task_id,
            "result": self.parsed_result,
            "summary": json.loads(self.summary) if self.summary else None,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }


@dataclass
class RunRecord:
    id: int
    task_id: str
    attempt: int
    engine_id: str
    pid: int | None
    pgid: int | None
    proc_start: int | None
    started_at: float
    ended_at: float | None
    exit_code: int | None
    outcome: str | None
    error: str
    cost_usd: float
    tokens_in: int
    tokens_out: int
    session_id: str
    node: str = ""  # the Ray node that ran it; "" for the local executor


@dataclass
class RunStart:
    """A run just begun (``Store.start_run``), with the task's history read in the same
    transaction."""

    run_id: int
    attempt: int
    previous_runs: list[RunRecord]
    questions: list[QuestionRecord]  # every question about the task, newest first
    task: TaskRecord | None = None  # the task as the transition to RUNNING left it


@dataclass(frozen=True)
class OutputLine:
    id: int
    task_id: str
    run_id: int
    stream: int  # 1 stdout, 2 stderr
    seq: int
    at: float
    text: str

    @property
    def stream_name(self) -> str:
        return "stderr" if self.stream == 2 else "stdout"


@dataclass
class QuestionRecord:
    """Something a task waits on a person for: a question, an approval or a review."""

    id: str
    task_id: str
    run_id: int | None
    kind: str  # question | approval | review
    payload: dict[str, Any]
    status: str  # open | answered | expired | cancelled
    answer: dict[str, Any] | None
    created_at: float
    answered_at: float | None

    @staticmethod
    def from_row(row: tuple[Any, ...]) -> QuestionRecord:
        qid, task_id, run_id, kind, payload, status, answer, created, answered = row
        return QuestionRecord(
            qid,
            task_id,
            run_id,
            kind,
            json.loads(payload),
            status,
            json.loads(answer) if answer else None,
            created,
            answered,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "task_id": self.task_id,
            "run_id": self.run_id,
            "kind": self.kind,
            "status": self.status,
            "payload": self.payload,
            "answer": self.answer,
            "created_at": self.created_at,
        }


@dataclass(frozen=True)
class EventRecord:
    id: int
    task_id: str
    kind: str
    from_state: str | None
    to_state: str | None
    reason: str
    data: dict[str, Any]
    at: float

    @staticmethod
    def from_row(row: tuple[Any, ...]) -> EventRecord:
        id_, task_id, kind, frm, to, reason, data, at = row
        return EventRecord(id_, task_id, kind, frm, to, reason, json.loads(data or "{}"), at)

    @classmethod
    def made(
        cls,
        id: int,
        task_id: str,
        kind: str,
        from_state: str | None,
        to_state: str | None,
        reason: str,
        data: dict[str, Any],
        at: float,
    ) -> EventRecord:
        """``EventRecord(...)`` at a third of its cost (~0.4 µs against ~1.1: a frozen
        dataclass's ``__init__`` sets each field through ``object.__setattr__``), for the
        journal's writes: two a task at submit, two a run."""
        rec = object.__new__(cls)
        vars(rec).update(
            id=id,
            task_id=task_id,
            kind=kind,
            from_state=from_state,
            to_state=to_state,
            reason=reason,
            data=data,
            at=at,
        )
        return rec


STDOUT = 1
STDERR = 2
RAW = 3  # an agent CLI's protocol line: stored apart, for `tui logs --raw`
