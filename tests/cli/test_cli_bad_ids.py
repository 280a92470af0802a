"""Commands that take a task or question id, given one that names nothing (or an empty one):
a one-line error and a non-zero exit, and nothing stored changes."""

from __future__ import annotations

import os
import shlex
import sys

import pytest

from tests.cli.cli_support import Tui, shell_task, wait_until, write_tasks


@pytest.fixture
def one_done(tui: Tui) -> Tui:
    """A database holding one failed task: every id prefix, "" too, would name it, and
    `tui retry ""` would run it again."""
    f = write_tasks(tui.dir / "one.yaml", [shell_task("only", "exit 3")])
    res = tui("run", str(f))
    assert res.returncode == 1 and tui.state_of("only") == "FAILED", str(res)
    return tui


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    return lines[0]


@pytest.mark.parametrize(
    "argv",
    [
        ["retry", ""],
        ["cancel", ""],
        ["approve", ""],
        ["send", "", "hello"],
        ["accept", ""],
        ["reject", "", "--comment", "no"],
        ["logs", ""],
        ["answer", "", "1"],
    ],
)
def test_an_empty_id_names_no_task(one_done: Tui, argv: list[str]) -> None:
    """`tui retry "$ID"` with ID unset retried the only task: "" is a prefix of every id."""
    before = one_done.ls()
    res = one_done(*argv)
    assert res.returncode != 0, str(res)
    assert "the task id is empty" in one_line(res.stderr), str(res)
    assert one_done.ls() == before


@pytest.mark.parametrize(
    "argv",
    [
        ["retry", "nope"],
        ["cancel", "nope"],
        ["approve", "nope"],
        ["send", "nope", "hello"],
        ["accept", "nope"],
        ["reject", "nope", "--comment", "no"],
        ["answer", "nope", "1"],
        ["answer", "99999", "--text", "x"],
    ],
)
def test_an_id_of_nothing_is_a_one_line_error(one_done: Tui, argv: list[str]) -> None:
    before = one_done.ls()
    res = one_done(*argv)
    assert res.returncode != 0, str(res)
    assert f"no task matches {argv[1]!r}" in one_line(res.stderr), str(res)
    assert one_done.ls() == before


def test_ask_with_a_run_id_that_is_not_a_number(tui: Tui, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in {"TUI_DB": str(tui.db), "TUI_TASK_ID": "t1", "TUI_RUN_ID": "abc"}.items():
        monkeypatch.setitem(os.environ, key, value)
    res = tui("ask", "which one?", db=False)
    assert res.returncode == 2, str(res)
    assert "TUI_RUN_ID must be a run number, got 'abc'" in one_line(res.stderr)


def test_answers_that_are_not_options_are_one_line_errors(tui: Tui) -> None:
    """ "²" passed str.isdigit and broke int(); 5,000 digits broke int() too (tracebacks), and
    a long answer came back whole in the error."""
    ask = f"{shlex.quote(sys.executable)} -m tui ask 'which?' --option red --option blue"
    f = write_tasks(tui.dir / "ask.yaml", [shell_task("asker", ask)])
    run = tui.popen("run", str(f))
    wait_until(lambda: tui.sql("SELECT id FROM questions"), "the question is asked", proc=run)
    for bad in ("²", "9" * 5000, "x" * 100_000):
        res = tui("answer", "asker", bad)
        assert res.returncode == 1, str(res)
        line = one_line(res.stderr)
        assert "is not an option of 'which?'" in line and len(line) < 300, line[:400]
    res = tui("answer", "asker", "--text", "caf\udce9")  # Latin-1 bytes: not sent
    assert res.returncode == 2 and "is not UTF-8 text" in one_line(res.stderr), str(res)
    res = tui("answer", "asker", "2")
    assert res.returncode == 0, str(res)
    out, _err = run.communicate(timeout=60)
    assert run.returncode == 0, out
    assert [ln.text for ln in tui.output()] == ["blue"]


@pytest.mark.parametrize("argv", [["retry", "\udcff"], ["logs", "caf\udce9"]])
def test_an_argument_that_is_not_utf8_is_named(one_done: Tui, argv: list[str]) -> None:
    """Bytes of another encoding (Latin-1 "café") reach Python as surrogates: every command
    that stored or sent one failed with a UnicodeEncodeError traceback."""
    before = one_done.ls()
    res = one_done(*argv)
    assert res.returncode == 2, str(res)
    assert "is not UTF-8 text" in one_line(res.stderr), str(res)
    assert one_done.ls() == before


def test_ask_with_a_question_that_is_not_utf8(tui: Tui, monkeypatch: pytest.MonkeyPatch) -> None:
    assert tui("daemon", "start").returncode == 0  # the request is made, then cannot be sent
    for key, value in {"TUI_DB": str(tui.db), "TUI_TASK_ID": "t1", "TUI_RUN_ID": "1"}.items():
        monkeypatch.setitem(os.environ, key, value)
    res = tui("ask", "caf\udce9?", db=False)
    assert res.returncode == 2, str(res)
    assert "'caf\\udce9?' is not UTF-8 text" in one_line(res.stderr)
    assert tui("daemon", "stop").returncode == 0
