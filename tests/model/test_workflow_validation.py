"""Workflow fields in task files (issue 12): every mistake a load error with file, line, field
and fix — before anything runs."""

from __future__ import annotations

import pytest

from tui.model.issues import TaskFileError
from tui.model.loader import load_task_text
from tui.model.task import Task
from tui.model.workflow import OnError, OnMaxRetries


def load(text: str) -> list[Task]:
    return load_task_text(text, "wf.yaml").tasks


def errors(text: str) -> list[str]:
    with pytest.raises(TaskFileError) as e:
        load_task_text(text, "wf.yaml")
    return [str(i) for i in e.value.issues]


HEAD = """
tasks:
  - name: build
    agent: {type: shell, instructions: make}
  - name: review-code
    depends_on: [build]
"""


def test_a_valid_workflow_loads_with_file_defaults() -> None:
    tasks = load(
        """
on_max_retries: skip
hooks: {on_complete: "notify-send 'task done'", timeout: 5s}
tasks:
  - name: build
    agent: {type: shell, instructions: make}
  - name: use
    depends_on: [build]
    when: "needs.build.state == 'COMPLETED' and len(needs['build'].result) > 0"
    context: {from: [build], transfer: minimal}
    on_error: skip
    hooks: {on_start: [echo, start]}
    agent: {type: claude, instructions: "Ship {{needs.build.result.files.0}}"}
"""
    )
    build, use = tasks
    assert build.on_max_retries == OnMaxRetries.SKIP and build.on_error == OnError.NONE
    assert use.on_error == OnError.SKIP
    assert build.hooks is not None and build.hooks.on_complete == ["notify-send", "task done"]
    assert build.hooks.timeout == 5
    # A task's own hooks and the file's are merged event by event.
    assert use.hooks is not None and use.hooks.on_start == ["echo", "start"]
    assert use.hooks.on_complete == ["notify-send", "task done"]
    assert use.context is not None and use.context.from_ == ["build"]
    # The spec round-trips through the store's JSON.
    assert Task.model_validate_json(use.model_dump_json()) == use


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        (
            "when: needs.biuld.state == 'COMPLETED'",
            "wf.yaml:7: tasks[1].when: needs.biuld names 'biuld', which is not in this "
            "task's depends_on. Fix: did you mean 'build'?",
        ),
        (
            "when: needs.build.sate == 'COMPLETED'",
            "tasks[1].when: needs.build: unknown field 'sate'. Fix: did you mean 'state'?",
        ),
        ("when: build == 1", "tasks[1].when: unknown name 'build'"),
        ('when: "needs.build.state =="', "tasks[1].when: not a valid expression"),
        ("when: \"__import__('os')\"", "calls __import__(), which is not available"),
        ('when: "[x for x in needs]"', "ListComp expressions are not allowed here"),
        ("when: needs.build.__class__", "'__class__' is not allowed"),
        ("context: {from: [lint]}", "tasks[1].context.from[0]: context.from names 'lint'"),
        ("summarizer: {strategy: terse}", "summarizer.strategy must be one of aggressive"),
        ("summarizer: {agent: taskfile}", "summarizer.agent must be one of claude"),
        ("summarizer: {stratgy: aggressive}", "unknown key 'stratgy'"),
        ("context: {transfer: all}", "context.transfer must be one of full, summary, minimal"),
        ("context: {preserve: [everything]}", "context.preserve must be one of outputs"),
        (
            "summarizer: {compaction: {threshold: 0}}",
            "tasks[1].summarizer.compaction.threshold: summarizer.compaction.threshold must be "
            ">= 1; got 0. Fix: use a number of characters >= 1",
        ),
        (
            "summarizer: {compaction: {trigger: sometimes}}",
            "compaction.trigger must be one of on_threshold, on_completion, every; got "
            "'sometimes'. Fix: use on_threshold (the default), on_completion, or every with "
            "every: N",
        ),
        (
            "summarizer: {compaction: {trigger: every}}",
            "tasks[1].summarizer.compaction: compaction.trigger every needs every: N (N >= 1)",
        ),
        (
            "summarizer: {compaction: {every: 3}}",
            "compaction.every applies only with trigger: every",
        ),
        ("summarizer: {compaction: {treshold: 5}}", "did you mean `threshold`?"),
        ("context: {frm: all}", "did you mean `from`?"),
        ("on_error: ignore", "on_error must be one of retry, skip, fail"),
        ("on_max_retries: retry", "on_max_retries must be one of skip, fail"),
        ("hooks: {on_done: [x]}", "unknown key 'on_done'"),
        ('hooks: {on_start: "echo \'open"}', "cannot be split into words"),
        ("hooks: {on_start: ''}", "hook command is empty"),
        ("hooks: {timeout: 0s}", "hooks.timeout must be more than 0"),
        ("retry: {backoff: quadratic}", "retry.backoff must be one of none, linear"),
    ],
)
def test_workflow_mistakes_are_load_errors(fields: str, expected: str) -> None:
    text = HEAD + f"    {fields}\n    agent: {{type: shell, instructions: 'true'}}\n"
    found = errors(text)
    assert any(expected in e for e in found), found


def test_template_references_are_checked_in_instructions() -> None:
    found = errors(
        HEAD + "    agent: {type: claude, instructions: '{{needs.bild.result}} "
        "{{needs.build.output}} {{needs.build.state.x}}'}\n"
    )
    assert len(found) == 3, found
    assert "{{needs.bild.result}} names 'bild', which is not in this task's depends_on" in found[0]
    assert "unknown field 'output'" in found[1] and "needs.NAME.result" in found[1]
    assert "only result has fields" in found[2]
    # Every error names the file, the line and the field.
    assert all(e.startswith("wf.yaml:7: tasks[1].agent.instructions:") for e in found), found


def test_a_dependency_written_by_id_may_be_named_by_id() -> None:
    tasks = load(
        """
tasks:
  - {id: b-1, name: build, agent: {type: shell, instructions: make}}
  - name: use
    depends_on: [b-1]
    when: needs['b-1'].state == 'COMPLETED'
    agent: {type: shell, instructions: 'echo "{{needs.b-1.result}}"'}
"""
    )
    assert tasks[1].when


def test_retries_that_can_never_happen_are_a_warning() -> None:
    result = load_task_text(
        "name: t\non_error: fail\nretry: {max_attempts: 3}\n"
        "agent: {type: shell, instructions: 'true'}\n",
        "wf.yaml",
    )
    assert [w.field for w in result.warnings] == ["on_error"]
    assert "never used" in result.warnings[0].message


def test_bad_file_defaults_are_errors_at_their_line() -> None:
    found = errors("on_error: never\ntasks:\n  - {name: a, agent: {instructions: x}}\n")
    assert found == [
        "wf.yaml:1: on_error: on_error must be one of retry, skip, fail (or leave it out); "
        "got 'never'. Fix: use retry, skip or fail, or leave it out for retry"
    ]
