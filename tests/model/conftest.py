"""Helpers shared by the task-model tests."""

from __future__ import annotations

import textwrap
from collections.abc import Callable

import pytest

from tui.model.issues import Issue, TaskFileError
from tui.model.loader import LoadResult, load_task_text


def _dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


@pytest.fixture
def load_ok() -> Callable[..., LoadResult]:
    """Load YAML text that must be valid."""

    def run(text: str, known_ids: tuple[str, ...] = ()) -> LoadResult:
        return load_task_text(_dedent(text), "t.yaml", known_ids)

    return run


@pytest.fixture
def load_errors() -> Callable[..., list[Issue]]:
    """Load YAML text that must fail; return its issues."""

    def run(text: str, known_ids: tuple[str, ...] = ()) -> list[Issue]:
        with pytest.raises(TaskFileError) as caught:
            load_task_text(_dedent(text), "t.yaml", known_ids)
        return caught.value.issues

    return run


@pytest.fixture
def one_error(load_errors: Callable[..., list[Issue]]) -> Callable[..., Issue]:
    """Load YAML text that must fail with exactly one issue; return it."""

    def run(text: str, known_ids: tuple[str, ...] = ()) -> Issue:
        issues = load_errors(text, known_ids)
        assert len(issues) == 1, [str(i) for i in issues]
        return issues[0]

    return run
