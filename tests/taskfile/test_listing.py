"""Listing the project's Taskfile tasks with the real go-task binary."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.taskfile.conftest import write_taskfile
from tui.taskfile.listing import TaskfileError, find_taskfile, list_tasks, task_binary
from tui.taskfile.running import run_argv, to_task


def test_lists_described_tasks_and_hides_internal_ones(project: Path) -> None:
    tasks = list_tasks(project)
    file = str((project / ".agent" / "Taskfile.yml").resolve())
    assert [t.to_json() for t in tasks] == [
        {
            "name": "echo-args",
            "desc": "Print each argument on its own line",
            "source": "taskfile",
            "file": file,
        },
        {"name": "fail", "desc": "Fail with exit code 7", "source": "taskfile", "file": file},
    ]


def test_all_tasks_adds_undescribed_but_never_internal(project: Path) -> None:
    names = [t.name for t in list_tasks(project, all_tasks=True)]
    assert names == ["echo-args", "fail", "undescribed"]


def test_no_taskfile_is_an_empty_list(tmp_path: Path) -> None:
    assert find_taskfile(tmp_path) is None
    assert list_tasks(tmp_path) == []


def test_a_taskfile_without_described_tasks_lists_nothing(tmp_path: Path) -> None:
    write_taskfile(tmp_path, "version: '3'\ntasks:\n  a:\n    cmds: [echo a]\n")
    assert list_tasks(tmp_path) == []


def test_taskfile_yaml_spelling_is_found(tmp_path: Path) -> None:
    (tmp_path / ".agent").mkdir()
    (tmp_path / ".agent" / "Taskfile.yaml").write_text(
        "version: '3'\ntasks:\n  b:\n    desc: bee\n    cmds: [echo b]\n"
    )
    assert [t.name for t in list_tasks(tmp_path)] == ["b"]


def test_broken_taskfile_names_the_file_and_says_what_go_task_said(tmp_path: Path) -> None:
    path = write_taskfile(tmp_path, "version: '3'\ntasks: [\n")
    with pytest.raises(TaskfileError) as info:
        list_tasks(tmp_path)
    message = str(info.value)
    assert str(path.resolve()) in message
    assert "cannot be loaded" in message
    assert "did not find expected node content" in message  # go-task's own YAML error


def test_binary_is_the_one_installed_with_tui() -> None:
    assert Path(task_binary()).name == "task"


def test_run_argv_keeps_each_argument_one_item(tmp_path: Path) -> None:
    argv = run_argv("task", tmp_path / "T.yml", "x", ["a b", "$(id)"])
    assert argv[-4:] == ["x", "--", "a b", "$(id)"]
    assert run_argv("task", tmp_path / "T.yml", "x", [])[-1] == "x"


def test_to_task_builds_a_taskfile_task(project: Path) -> None:
    entry = list_tasks(project)[0]
    task = to_task(entry, ["one", "two"], project_dir=project, priority="high")
    assert task.name == "echo-args"
    assert task.description == "Print each argument on its own line"
    assert task.agent.type == "taskfile"
    assert (task.agent.task, task.agent.args) == ("echo-args", ["one", "two"])
    assert task.agent.project_dir == str(project)
    assert task.priority == "high"
