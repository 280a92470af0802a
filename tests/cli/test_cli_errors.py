"""Bad input is answered with a message, a non-zero exit and never a traceback."""

from __future__ import annotations

import pytest

from tests.cli.cli_support import Tui, shell_task, write_tasks


@pytest.fixture
def one_task(tui: Tui) -> Tui:
    f = write_tasks(tui.dir / "t.yaml", shell_task("hello", "echo hi"))
    assert tui("run", str(f)).returncode == 0
    return tui


def test_logs_unknown_task(one_task: Tui) -> None:
    res = one_task("logs", "no-such-task")
    assert res.returncode == 1
    assert "no task matches 'no-such-task'" in res.stderr
    assert res.stdout == ""


@pytest.mark.parametrize("command", ["cancel", "retry", "approve"])
def test_control_commands_with_unknown_task(one_task: Tui, command: str) -> None:
    res = one_task(command, "ghost")
    assert res.returncode == 1
    assert "ghost" in res.stderr


@pytest.mark.parametrize(
    ("command", "words"),
    [("cancel", "is done: nothing to cancel"), ("retry", "is done;"), ("approve", "only pending")],
)
def test_control_commands_refuse_a_completed_task(one_task: Tui, command: str, words: str) -> None:
    res = one_task(command, "hello")
    assert res.returncode == 1, str(res)
    assert words in res.stderr and "hello" in res.stderr
    assert one_task.state_of("hello") == "COMPLETED"


def test_run_missing_file(tui: Tui) -> None:
    res = tui("run", str(tui.dir / "missing.yaml"))
    assert res.returncode == 2
    assert "missing.yaml" in res.stderr and "not found" in res.stderr
    assert tui.sql("SELECT COUNT(*) FROM tasks") in ([], [(0,)])


def test_run_malformed_yaml(tui: Tui) -> None:
    bad = tui.dir / "bad.yaml"
    bad.write_text("tasks:\n  - name: x\n    agent: {type: shell, instructions: 'echo\n", "utf-8")
    res = tui("run", str(bad))
    assert res.returncode == 2
    assert "bad.yaml" in res.stderr and "invalid YAML" in res.stderr


def test_run_invalid_task_runs_nothing(tui: Tui) -> None:
    good_and_bad = write_tasks(
        tui.dir / "mixed.yaml",
        [shell_task("ok", "echo ok"), {"name": "bad", "agent": {"type": "shell"}}],
    )
    res = tui("run", str(good_and_bad))
    assert res.returncode == 2
    assert "mixed.yaml:" in res.stderr and "instructions" in res.stderr
    assert tui.sql("SELECT COUNT(*) FROM tasks") in ([], [(0,)])


def test_run_directory_without_yaml(tui: Tui) -> None:
    empty = tui.dir / "empty"
    empty.mkdir()
    res = tui("run", str(empty))
    assert res.returncode == 2
    assert "no YAML files" in res.stderr


def test_run_not_a_yaml_file(tui: Tui) -> None:
    txt = tui.dir / "tasks.txt"
    txt.write_text("name: x\n")
    res = tui("run", str(txt))
    assert res.returncode == 2
    assert "not a YAML file" in res.stderr


def test_run_with_no_files_on_empty_database(tui: Tui) -> None:
    res = tui("run")
    assert res.returncode == 0
    assert "nothing to run" in res.stderr


def test_bad_concurrency_is_a_usage_error(tui: Tui) -> None:
    res = tui("run", "--concurrency", "many")
    assert res.returncode == 2
    assert "concurrency" in res.stderr


def test_database_path_is_a_directory(tui: Tui) -> None:
    res = tui("ls", "--db", str(tui.dir), db=False)
    assert res.returncode == 1
    assert "cannot open database" in res.stderr


def test_database_file_that_is_not_sqlite(tui: Tui) -> None:
    tui.db.write_text("this is not a database\n" * 100)
    res = tui("ls", timeout=20)
    assert res.returncode == 1
    assert "database" in res.stderr
