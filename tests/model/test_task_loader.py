"""Files, directories and file shapes."""

import pytest

from tui.model.issues import TaskFileError
from tui.model.loader import load_task_files

SINGLE = "name: solo\nagent:\n  instructions: x\n"
BATCH = """\
tasks:
  - name: one
    agent: {instructions: x}
  - name: two
    agent: {instructions: y}
"""


def _errors(paths, known_ids=()):
    with pytest.raises(TaskFileError) as caught:
        load_task_files(paths, known_ids)
    return caught.value.issues


def test_single_and_batch_files(tmp_path):
    (tmp_path / "a.yaml").write_text(SINGLE)
    (tmp_path / "b.yml").write_text(BATCH)
    result = load_task_files([tmp_path / "a.yaml", str(tmp_path / "b.yml")])
    assert [t.name for t in result.tasks] == ["solo", "one", "two"]


def test_directory_loads_yaml_files_sorted(tmp_path):
    (tmp_path / "b.yaml").write_text(SINGLE)
    (tmp_path / "a.yml").write_text(BATCH)
    (tmp_path / "notes.txt").write_text("not a task")
    result = load_task_files([tmp_path])
    assert [t.name for t in result.tasks] == ["one", "two", "solo"]


def test_same_file_twice_loads_once(tmp_path):
    path = tmp_path / "a.yaml"
    path.write_text("id: fixed\n" + SINGLE)
    assert len(load_task_files([path, tmp_path]).tasks) == 1


def test_empty_directory(tmp_path):
    (issue,) = _errors([tmp_path])
    assert issue.message == "directory has no YAML files"


def test_missing_file(tmp_path):
    (issue,) = _errors([tmp_path / "nope.yaml"])
    assert (issue.line, issue.message) == (None, "file not found")
    assert str(issue) == f"{tmp_path / 'nope.yaml'}: file not found. Fix: check the path"


def test_wrong_extension(tmp_path):
    path = tmp_path / "task.json"
    path.write_text("{}")
    (issue,) = _errors([path])
    assert ".yaml or .yml" in issue.fix


def test_empty_file(tmp_path):
    path = tmp_path / "e.yaml"
    path.write_text("# only a comment\n")
    (issue,) = _errors([path])
    assert issue.message == "file is empty"
    assert "tasks:" in issue.fix


def test_top_level_list(tmp_path):
    path = tmp_path / "l.yaml"
    path.write_text("- name: a\n")
    (issue,) = _errors([path])
    assert "not a mapping" in issue.message
    assert "`tasks:`" in issue.fix


def test_top_level_scalar(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("just words\n")
    (issue,) = _errors([path])
    assert issue.message == "top level must be a mapping; got 'just words'"


def test_malformed_yaml_line_and_column(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: a\nagent:\n  instructions: x\n   type: shell\n")
    (issue,) = _errors([path])
    assert issue.line == 4
    assert issue.message.startswith("invalid YAML: ")
    assert "(line 4, column 8)" in issue.message
    assert "indentation" in issue.fix
    assert "Traceback" not in str(issue)


def test_unclosed_flow_mapping(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: a\nagent: {instructions: x\n")
    (issue,) = _errors([path])
    assert issue.line == 3
    assert "column" in issue.message


def test_errors_from_two_files_reported_together(tmp_path):
    first = tmp_path / "first.yaml"
    second = tmp_path / "second.yaml"
    first.write_text("name: a\nagent: {instructions: x}\npriority: urgent\ntimeout: forever\n")
    second.write_text(
        "tasks:\n  - name: b\n    agent: {}\n  - name: c\n    agent: {instructions: y, type: x}\n"
    )
    issues = _errors([first, second])
    got = [(i.file, i.line, i.field) for i in issues]
    assert got == [
        (str(first), 3, "priority"),
        (str(first), 4, "timeout"),
        (str(second), 3, "tasks[0].agent.instructions"),
        (str(second), 5, "tasks[1].agent.type"),
    ]


def test_error_text_is_one_issue_per_line(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text("agent: {}\n")
    with pytest.raises(TaskFileError) as caught:
        load_task_files([path])
    lines = str(caught.value).splitlines()
    assert len(lines) == len(caught.value.issues) == 2
    assert lines[0].startswith(f"{path}:1: name: name is required. Fix: ")


def test_batch_is_recognised_before_single(tmp_path):
    path = tmp_path / "b.yaml"
    path.write_text(BATCH)
    assert len(load_task_files([path]).tasks) == 2


def test_batch_with_extra_top_level_key(tmp_path):
    path = tmp_path / "b.yaml"
    path.write_text(BATCH + "name: stray\n")
    (issue,) = _errors([path])
    assert (issue.field, issue.line) == ("name", 6)
    assert "only `tasks:`" in issue.fix


@pytest.mark.parametrize(
    ("text", "needle"),
    [("tasks: []\n", "empty"), ("tasks:\n", "empty"), ("tasks: one\n", "must be a list")],
)
def test_bad_tasks_key(tmp_path, text, needle):
    path = tmp_path / "b.yaml"
    path.write_text(text)
    (issue,) = _errors([path])
    assert (issue.field, issue.line) == ("tasks", 1)
    assert needle in issue.message


def test_batch_item_not_a_mapping(tmp_path):
    path = tmp_path / "b.yaml"
    path.write_text(BATCH + "  - just a string\n")
    (issue,) = _errors([path])
    assert (issue.field, issue.line) == ("tasks[2]", 6)


def test_yaml_merge_keys_work(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(
        "base: &agent {instructions: x, type: shell}\n"
        "tasks:\n  - name: a\n    agent:\n      <<: *agent\n      model: m\n"
    )
    (issue,) = _errors([path])  # only the stray anchor holder key is wrong
    assert issue.field == "base"


def test_a_lone_path_is_accepted(tmp_path):
    path = tmp_path / "a.yaml"
    path.write_text(SINGLE)
    assert len(load_task_files(str(path)).tasks) == 1


def test_warnings_survive_an_error(tmp_path):
    path = tmp_path / "a.yaml"
    path.write_text("name: a\nagent: {}\nupdated_at: now\n")
    with pytest.raises(TaskFileError) as caught:
        load_task_files([path])
    assert [w.field for w in caught.value.warnings] == ["updated_at"]


# A plain file is read in one pass over the parser's events; one with an anchor goes through
# libyaml's composer. Either way a problem names the same line and the values are the same.
TWINS = """\
tasks:
  - name: one
    priority: high
    timeout: 30m
    tags: [a, 'on', 2024-01-02]
    agent: {type: shell, instructions: x, env: {A: "1"}}
  - name: two
    depends_on: [one]
    agent:
      type: shell
      instructions: y
      bogus: 1
"""


@pytest.mark.parametrize("anchored", [False, True])
def test_a_plain_file_and_a_composed_one_name_the_same_lines(tmp_path, anchored):
    text = TWINS.replace("name: two", "name: &n two") if anchored else TWINS
    path = tmp_path / "t.yaml"
    path.write_text(text)
    issues = _errors([path])
    assert [(i.field, i.line, i.message) for i in issues] == [
        ("tasks[0].tags[2]", 5, "tags must be text; got datetime.date(2024, 1, 2)"),
        ("tasks[1].agent.bogus", 12, "unknown key 'bogus'"),
    ]


def test_plain_values_are_read_as_yaml_reads_them(tmp_path):
    path = tmp_path / "t.yaml"
    text = TWINS.replace("      bogus: 1\n", "").replace(", 2024-01-02", "")
    path.write_text(text.replace("priority: high", "retry: {max_attempts: 3}"))
    [one, two] = load_task_files([path]).tasks
    assert one.retry.max_attempts == 3 and one.timeout == 1800 and one.tags == ["a", "on"]
    assert one.agent.env == {"A": "1"} and two.depends_on == [one.id]


@pytest.mark.parametrize("tagged", ["!!int x", "!!float x", "!!bool x", "!!timestamp x"])
def test_a_tagged_value_that_is_not_one_is_an_error_at_its_line(tmp_path, tagged):
    path = tmp_path / "t.yaml"
    path.write_text(f"name: a\nagent: {{type: shell, instructions: x}}\ntimeout: {tagged}\n")
    (issue,) = _errors([path])
    tag = tagged.split()[0]
    assert issue.line == 3 and f"'x' is not a valid {tag} value" in issue.message
    assert issue.fix == f"write a valid {tag[2:]}, or remove the tag {tag}"
