"""`worktree:` in task files: per task, as the file's default, and `from:` by name."""

from __future__ import annotations

import pytest

from tui.model.issues import TaskFileError
from tui.model.loader import load_task_text

FILE = """\
worktree: true
tasks:
  - name: edit
    agent: {type: shell, instructions: "true"}
  - name: review
    worktree: {from: edit}
    agent: {type: shell, instructions: "true"}
  - name: elsewhere
    worktree: false
    agent: {type: shell, instructions: "true"}
  - name: on-main
    worktree: {base: main}
    agent: {type: shell, instructions: "true"}
"""


def test_file_default_per_task_override_and_from_by_name() -> None:
    tasks = {t.name: t for t in load_task_text(FILE, "w.yaml").tasks}
    assert tasks["edit"].worktree is not None and tasks["edit"].worktree.base == ""
    review = tasks["review"].worktree
    assert review is not None and review.from_ == tasks["edit"].id
    # Working on another task's branch waits for it.
    assert tasks["review"].depends_on == [tasks["edit"].id]
    assert tasks["elsewhere"].worktree is None
    assert tasks["on-main"].worktree is not None and tasks["on-main"].worktree.base == "main"
    # Stored and read back as written.
    assert tasks["review"].to_yaml_dict()["worktree"] == {"base": "", "from": tasks["edit"].id}


def test_from_an_unknown_task_names_the_field() -> None:
    text = "name: a\nworktree: {from: nothere}\nagent: {type: shell, instructions: x}\n"
    with pytest.raises(TaskFileError) as e:
        load_task_text(text, "bad.yaml")
    said = str(e.value.issues[0])
    assert "bad.yaml:2" in said and "worktree.from" in said and "nothere" in said


def test_unknown_worktree_key_is_an_error() -> None:
    text = "name: a\nworktree: {bse: main}\nagent: {type: shell, instructions: x}\n"
    with pytest.raises(TaskFileError) as e:
        load_task_text(text, "bad.yaml")
    assert "bse" in str(e.value.issues[0])
