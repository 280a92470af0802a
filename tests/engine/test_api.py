"""The engine API declared once: every message has exactly one handler, and replies travel as
typed values (never text to split)."""

import json
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from tui.engine import api
from tui.engine.handlers import HANDLERS
from tui.model.task import Task

SERVER_OWN = {api.Status, api.Shutdown, api.Subscribe}  # answered by whoever serves the socket


def test_every_message_has_one_handler_and_is_on_the_wire() -> None:
    assert set(HANDLERS) == set(api.MESSAGES) - SERVER_OWN
    ops = [cls.model_fields["op"].default for cls in api.MESSAGES]
    assert len(set(ops)) == len(ops)  # one op, one class
    for cls in api.MESSAGES:  # each parses back from its wire form
        assert cls in {
            type(api.parse_request({"op": cls.model_fields["op"].default, **x}))
            for x in [_minimal(cls)]
        }


def _minimal(cls: type[BaseModel]) -> dict[str, Any]:
    samples = {
        "task_id": "t",
        "question_id": "q",
        "task_ids": [],
        "answer": {},
        "run_id": 1,
        "first_seq": 1,
        "last_seq": 2,
        "payload": {},
        "tasks": [],
        "cursor": [0, 0],
        "text": "hi",
    }
    return {k: samples[k] for k, f in cls.model_fields.items() if f.is_required()}


def test_a_submit_round_trips_as_json_and_its_reply_keeps_ids_whole() -> None:
    task = Task(name="t", agent={"type": "shell", "instructions": "true"})
    wire = json.loads(json.dumps(api.Submit(tasks=[task], approved=False).model_dump(mode="json")))
    back = api.parse_request(wire)
    assert isinstance(back, api.Submit) and back.tasks[0].id == task.id and back.approved is False
    # Ids travel as a list: one with spaces or a newline stays one id.
    reply = api.Submitted(ids=["a b", "c\nd"]).model_dump(mode="json")
    assert api.Submitted.model_validate(json.loads(json.dumps(reply))).ids == ["a b", "c\nd"]


@pytest.mark.parametrize(
    "bad",
    [
        {"op": "no-such-op"},
        {"op": "cancel"},  # no task_id
        {"op": "submit", "tasks": [], "approved": "no"},  # a string is not a bool
        {"op": "ask", "task_id": "t", "run_id": 1, "payload": {}, "timeout": -1},
        {"op": "cancel", "task_id": "t", "extra": 1},
    ],
)
def test_a_malformed_message_is_refused_saying_what_is_wrong(bad: dict) -> None:
    with pytest.raises(ValidationError):
        api.parse_request(bad)
