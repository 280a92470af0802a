"""depends_on: ids, names within one file, unknown references and cycles."""

import pytest

from tui.model.issues import TaskFileError
from tui.model.loader import load_task_files


def test_names_resolve_to_ids(load_ok):
    tasks = load_ok(
        """
        tasks:
          - name: build
            agent: {instructions: x}
          - name: test
            agent: {instructions: x}
            depends_on: [build]
          - id: fixed-id
            name: ship
            agent: {instructions: x}
            depends_on: [test, build, build]
        """
    ).tasks
    build, test, ship = tasks
    assert test.depends_on == [build.id]
    assert ship.depends_on == [test.id, build.id]  # repeated entries collapse
    assert ship.id == "fixed-id"


def test_single_string_depends_on(load_ok):
    tasks = load_ok(
        """
        tasks:
          - {name: a, agent: {instructions: x}}
          - {name: b, agent: {instructions: x}, depends_on: a}
        """
    ).tasks
    assert tasks[1].depends_on == [tasks[0].id]


def test_ids_from_database_and_other_files(tmp_path):
    (tmp_path / "a.yaml").write_text("id: a1\nname: a\nagent: {instructions: x}\n")
    (tmp_path / "b.yaml").write_text("name: b\nagent: {instructions: x}\ndepends_on: [a1, db-7]\n")
    result = load_task_files([tmp_path], known_ids={"db-7"})
    assert result.tasks[1].depends_on == ["a1", "db-7"]


def test_names_do_not_cross_files(tmp_path):
    (tmp_path / "a.yaml").write_text("name: build\nagent: {instructions: x}\n")
    (tmp_path / "b.yaml").write_text("name: b\nagent: {instructions: x}\ndepends_on: [build]\n")
    with pytest.raises(TaskFileError) as caught:
        load_task_files([tmp_path])
    (issue,) = caught.value.issues
    assert issue.file.endswith("b.yaml")
    assert "depends on 'build'" in issue.message


def test_unknown_reference_lists_close_matches(one_error):
    issue = one_error(
        """
        tasks:
          - name: build
            agent: {instructions: x}
          - name: test
            agent: {instructions: x}
            depends_on:
              - biuld
        """,
        known_ids=("db-task-1",),
    )
    assert (issue.field, issue.line) == ("tasks[1].depends_on[0]", 7)
    assert "depends on 'biuld'" in issue.message
    assert "did you mean 'build'?" in issue.fix


def test_cycle_chain(one_error):
    issue = one_error(
        """
        tasks:
          - name: build
            agent: {instructions: x}
            depends_on: [test]
          - name: test
            agent: {instructions: x}
            depends_on: [lint]
          - name: lint
            agent: {instructions: x}
            depends_on: [build]
        """
    )
    assert issue.message == "dependency cycle: build -> test -> lint -> build"
    assert (issue.field, issue.line) == ("tasks[0].depends_on[0]", 4)
    assert "remove one of these depends_on entries" in issue.fix


def test_two_task_cycle_reported_once(load_errors):
    issues = load_errors(
        """
        tasks:
          - {name: build, agent: {instructions: x}, depends_on: [test]}
          - {name: test, agent: {instructions: x}, depends_on: [build]}
        """
    )
    assert [i.message for i in issues] == ["dependency cycle: build -> test -> build"]


def test_cycle_across_files_by_id(tmp_path):
    (tmp_path / "a.yaml").write_text("id: a\nname: A\nagent: {instructions: x}\ndepends_on: b\n")
    (tmp_path / "b.yaml").write_text("id: b\nname: B\nagent: {instructions: x}\ndepends_on: a\n")
    with pytest.raises(TaskFileError) as caught:
        load_task_files([tmp_path])
    assert [i.message for i in caught.value.issues] == ["dependency cycle: A -> B -> A"]


def test_self_dependency_by_name(one_error):
    issue = one_error(
        """
        tasks:
          - name: build
            agent: {instructions: x}
            depends_on: [build]
        """
    )
    assert issue.message == "task depends on itself: build -> build"
    assert (issue.field, issue.line) == ("tasks[0].depends_on[0]", 4)
    assert "remove 'build' from its own depends_on" in issue.fix


def test_self_dependency_by_id_in_single_file(one_error):
    issue = one_error("id: me\nname: solo\nagent: {instructions: x}\ndepends_on: [me]\n")
    assert issue.message == "task depends on itself: solo -> solo"


def test_reference_to_invalid_task_is_not_unknown(load_errors):
    issues = load_errors(
        """
        tasks:
          - {name: build, agent: {instructions: x}, priority: urgent}
          - {name: test, agent: {instructions: x}, depends_on: [build]}
        """
    )
    assert [i.field for i in issues] == ["tasks[0].priority"]


def test_invalid_task_still_gets_reference_errors(load_errors):
    issues = load_errors(
        """
        tasks:
          - {name: build, agent: {instructions: x}, priority: urgent, depends_on: [nope]}
        """
    )
    assert [i.field for i in issues] == ["tasks[0].priority", "tasks[0].depends_on[0]"]
