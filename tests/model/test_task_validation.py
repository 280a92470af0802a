"""Each validation rule: the field, the line and a useful part of the message and fix."""

import pytest

from tui.model.issues import TaskFileError
from tui.model.loader import load_task_text


def test_valid_single_task(load_ok):
    result = load_ok(
        """
        name: build
        agent:
          instructions: make it
        """
    )
    assert [t.name for t in result.tasks] == ["build"]
    assert result.warnings == []


def test_name_required(one_error):
    issue = one_error(
        """
        description: no name
        agent:
          instructions: x
        """
    )
    assert (issue.field, issue.line) == ("name", 1)
    assert issue.message == "name is required"
    assert "name: <short title>" in issue.fix


def test_name_empty(one_error):
    issue = one_error(
        """
        name: "  "
        agent: {instructions: x}
        """
    )
    assert (issue.field, issue.line) == ("name", 1)
    assert "must not be empty" in issue.message
    assert "name:" in issue.fix


def test_name_without_value_counts_as_missing(one_error):
    issue = one_error(
        """
        agent: {instructions: x}
        name:
        """
    )
    assert (issue.field, issue.line, issue.message) == ("name", 2, "name is required")


def test_agent_required(one_error):
    issue = one_error("name: build\n")
    assert (issue.field, issue.message) == ("agent", "agent is required")
    assert "instructions:" in issue.fix


def test_instructions_required(one_error):
    issue = one_error(
        """
        name: build
        agent:
          type: shell
        """
    )
    assert (issue.field, issue.line) == ("agent.instructions", 2)
    assert issue.message == "agent.instructions is required"
    assert "instructions:" in issue.fix


def test_instructions_empty(one_error):
    issue = one_error(
        """
        name: build
        agent:
          instructions: ""
        """
    )
    assert (issue.field, issue.line) == ("agent.instructions", 3)
    assert "must not be empty" in issue.message


def test_budget_negative(one_error):
    issue = one_error(
        """
        name: build
        agent:
          instructions: x
          max_budget_usd: -1
        """
    )
    assert (issue.field, issue.line) == ("agent.max_budget_usd", 4)
    assert "must be >= 0; got -1" in issue.message
    assert "0 for no budget limit" in issue.fix


def test_budget_not_a_number(one_error):
    issue = one_error(
        """
        name: build
        agent: {instructions: x, max_budget_usd: lots}
        """
    )
    assert issue.field == "agent.max_budget_usd"
    assert "must be a number; got 'lots'" in issue.message


@pytest.mark.parametrize(
    ("value", "needle"),
    [('"-5s"', "must be >= 0"), ('"10 minutes"', "invalid duration"), ("-3", "must be >= 0")],
)
def test_timeout_invalid(one_error, value, needle):
    issue = one_error(
        f"""
        name: build
        agent: {{instructions: x}}
        timeout: {value}
        """
    )
    assert (issue.field, issue.line) == ("timeout", 3)
    assert needle in issue.message
    assert '"1h30m"' in issue.fix


def test_timeout_forms(load_ok):
    tasks = load_ok(
        """
        tasks:
          - {name: a, agent: {instructions: x}, timeout: 1h30m}
          - {name: b, agent: {instructions: x}, timeout: 90}
          - {name: c, agent: {instructions: x}, timeout: 0}
          - {name: d, agent: {instructions: x}}
        """
    ).tasks
    assert [t.timeout for t in tasks] == [5400.0, 90.0, 0.0, 0.0]


@pytest.mark.parametrize(
    ("value", "needle"),
    [("0", "must be >= 1; got 0"), ("2.5", "must be a whole number"), ("many", "whole number")],
)
def test_max_attempts(one_error, value, needle):
    issue = one_error(
        f"""
        name: build
        agent: {{instructions: x}}
        retry:
          max_attempts: {value}
        """
    )
    assert (issue.field, issue.line) == ("retry.max_attempts", 4)
    assert needle in issue.message
    assert "1 means no retries" in issue.fix


def test_backoff(one_error):
    issue = one_error(
        """
        name: build
        agent: {instructions: x}
        retry:
          backoff: expo
        """
    )
    assert (issue.field, issue.line) == ("retry.backoff", 4)
    assert "must be one of none, linear, exponential (or leave it out); got 'expo'" in issue.message
    assert "exponential (the default), linear, or none" in issue.fix


def test_retry_delay(load_ok, one_error):
    task = load_ok("name: a\nagent: {instructions: x}\nretry: {delay: 2s, backoff: linear}\n")
    assert task.tasks[0].retry.delay == 2.0
    issue = one_error("name: a\nagent: {instructions: x}\nretry:\n  delay: soon\n")
    assert (issue.field, issue.line) == ("retry.delay", 4)
    assert '"2s"' in issue.fix


def test_priority(one_error):
    issue = one_error(
        """
        name: build
        agent: {instructions: x}
        priority: urgent
        """
    )
    assert (issue.field, issue.line) == ("priority", 3)
    assert issue.message == (
        "priority must be one of critical, high, normal, low (or leave it out); got 'urgent'"
    )
    assert "critical, high, normal or low" in issue.fix


def test_permission_mode(one_error):
    issue = one_error(
        """
        name: build
        agent:
          instructions: x
          permission_mode: acceptedits
        """
    )
    assert (issue.field, issue.line) == ("agent.permission_mode", 4)
    assert "default, acceptEdits, bypassPermissions, plan, dontAsk, delegate" in issue.message
    assert "did you mean 'acceptEdits'?" in issue.message
    assert "leave it out" in issue.fix


def test_agent_type(one_error):
    issue = one_error(
        """
        name: build
        agent:
          type: bash
          instructions: x
        """
    )
    assert (issue.field, issue.line) == ("agent.type", 3)
    assert "must be one of claude, shell, gemini, codex, taskfile" in issue.message
    assert "claude" in issue.fix


def test_enum_values_accepted(load_ok):
    task = load_ok(
        """
        name: build
        priority: low
        agent: {instructions: x, type: shell, permission_mode: bypassPermissions}
        retry: {backoff: exponential, max_attempts: 3}
        """
    ).tasks[0]
    assert (task.priority, task.agent.type, task.agent.permission_mode) == (
        "low",
        "shell",
        "bypassPermissions",
    )
    assert (task.retry.backoff, task.retry.max_attempts) == ("exponential", 3)


def test_tags_must_be_a_list(one_error):
    issue = one_error("name: a\nagent: {instructions: x}\ntags: urgent\n")
    assert (issue.field, issue.line) == ("tags", 3)
    assert "must be a list" in issue.message
    assert "[backend, urgent]" in issue.fix


def test_tag_items_must_be_strings(one_error):
    issue = one_error("name: a\nagent: {instructions: x}\ntags:\n  - ok\n  - 42\n")
    assert (issue.field, issue.line) == ("tags[1]", 5)
    assert "must be text; got 42" in issue.message


def test_agent_must_be_mapping(one_error):
    issue = one_error("name: a\nagent: do the thing\n")
    assert (issue.field, issue.line) == ("agent", 2)
    assert "must be a mapping" in issue.message


def test_bool_field(one_error):
    issue = one_error("name: a\nagent: {instructions: x}\nreview: maybe\n")
    assert (issue.field, issue.line) == ("review", 3)
    assert "true or false" in issue.fix


@pytest.mark.parametrize("spelling", ["depends-on", "dependsOn", "Depends_On", "depends_onn"])
def test_unknown_key_did_you_mean(one_error, spelling):
    issue = one_error(f"name: a\nagent: {{instructions: x}}\n{spelling}: [b]\n")
    assert (issue.field, issue.line) == (spelling, 3)
    assert issue.message == f"unknown key '{spelling}'"
    assert issue.fix == "did you mean `depends_on`?"


def test_unknown_nested_key(one_error):
    issue = one_error("name: a\nagent:\n  instructions: x\n  instuctions: y\n")
    assert (issue.field, issue.line) == ("agent.instuctions", 4)
    assert issue.fix == "did you mean `instructions`?"


def test_unknown_key_without_close_match(one_error):
    issue = one_error("name: a\nagent: {instructions: x}\nretry: {zzz: 1}\n")
    assert issue.field == "retry.zzz"
    assert "allowed keys here: max_attempts, backoff, delay" in issue.fix


def test_duplicate_key(one_error):
    issue = one_error("name: a\nagent: {instructions: x}\nname: b\n")
    assert (issue.field, issue.line) == ("name", 3)
    assert "first at line 1" in issue.message


def test_runtime_field_is_a_warning(load_ok):
    result = load_ok("name: a\nagent: {instructions: x}\nstate: RUNNING\ncreated_at: 2024-01-01\n")
    assert len(result.tasks) == 1
    fields = [(w.field, w.line, w.severity) for w in result.warnings]
    assert fields == [("state", 3, "warning"), ("created_at", 4, "warning")]
    assert "runtime field set by the engine" in result.warnings[0].message
    assert "state" in result.warnings[0].message


def test_batch_field_paths(load_errors):
    issues = load_errors(
        """
        tasks:
          - name: a
            agent: {instructions: x}
          - name: b
            agent:
              instructions: ""
          - name: c
            agent: {instructions: x}
            priority: soon
        """
    )
    assert [(i.field, i.line) for i in issues] == [
        ("tasks[1].agent.instructions", 6),
        ("tasks[2].priority", 9),
    ]


def test_duplicate_names_in_batch(one_error):
    issue = one_error(
        """
        tasks:
          - name: a
            agent: {instructions: x}
          - name: a
            agent: {instructions: y}
        """
    )
    assert (issue.field, issue.line) == ("tasks[1].name", 4)
    assert "duplicate task name 'a' (first at line 2)" in issue.message


def test_duplicate_ids(one_error):
    issue = one_error(
        """
        tasks:
          - {id: t1, name: a, agent: {instructions: x}}
          - {id: t1, name: b, agent: {instructions: x}}
        """
    )
    assert (issue.field, issue.line) == ("tasks[1].id", 3)
    assert "duplicate task id 't1' (also at t.yaml:2)" in issue.message


def test_messages_have_no_pydantic_text():
    text = "name: 5\nagent: {instructions: [1], type: 3, skip_planning: x, bogus: 1}\ntimeout: x\n"
    with pytest.raises(TaskFileError) as caught:
        load_task_text(text, "t.yaml")
    shown = str(caught.value)
    assert len(caught.value.issues) >= 5
    for banned in ("pydantic", "errors.pydantic.dev", "Traceback", "Input should", "[type="):
        assert banned not in shown
