"""A run's environment is the process's as it is when the run starts (the decoded copy is
reused only while nothing changed)."""

from __future__ import annotations

import os

import pytest

from tui.engine.runner import environ


def test_environ_follows_every_change(monkeypatch: pytest.MonkeyPatch) -> None:
    first = environ()
    assert first == dict(os.environ)
    monkeypatch.setenv("TUI_TEST_ENVIRON", "one")
    assert environ()["TUI_TEST_ENVIRON"] == "one"
    monkeypatch.setenv("TUI_TEST_ENVIRON", "two")
    assert environ()["TUI_TEST_ENVIRON"] == "two"
    monkeypatch.delenv("TUI_TEST_ENVIRON")
    assert "TUI_TEST_ENVIRON" not in environ()
    assert environ() == dict(os.environ)


def test_environ_is_a_copy_each_time() -> None:
    a = environ()
    a["TUI_TEST_ENVIRON_COPY"] = "x"
    assert "TUI_TEST_ENVIRON_COPY" not in environ()
    assert "TUI_TEST_ENVIRON_COPY" not in os.environ
