"""A task's generated id is a random UUID's text, as `str(uuid.uuid4())` writes it: what the
store, `tui ls` and every id prefix a person types have always seen."""

from __future__ import annotations

import os
import uuid
from unittest import mock

from tui.model.factories import new_task_id
from tui.model.task import Task


def test_an_id_is_a_version_4_uuid_in_its_usual_text() -> None:
    ids = {new_task_id() for _ in range(2000)}
    assert len(ids) == 2000
    for text in ids:
        parsed = uuid.UUID(text)
        assert str(parsed) == text
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122


def test_the_same_random_bytes_give_the_same_text_as_uuid4() -> None:
    for raw in (bytes(16), b"\xff" * 16, bytes(range(16)), *(os.urandom(16) for _ in range(500))):
        with mock.patch("os.urandom", return_value=raw):
            assert new_task_id() == str(uuid.uuid4())


def test_a_task_without_an_id_gets_one_of_its_own() -> None:
    a, b = (Task.model_validate({"name": n, "agent": {"type": "shell"}}) for n in "ab")
    assert a.id != b.id
    assert str(uuid.UUID(a.id)) == a.id
