"""Workflows (issue 12): results, {{needs...}} and context, when:, on_error / on_max_retries,
skipped tasks. Real SQLite files, real shell subprocesses, tasks loaded from YAML as a user
writes them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import stored
from tests.engine.workflow_support import load, run_all, task_record
from tui.engine.scheduler import Engine
from tui.engine.workflow import WorkflowError, context_block, prepare
from tui.model.states import State
from tui.model.workflow import RESULT_CHARS
from tui.store.db import Store
from tui.store.records import TaskRecord


async def stdout_of(store: Store, rec: TaskRecord) -> list[str]:
    return [ln.text for ln in await store.read_output(rec.id) if ln.stream == 1]


# -- results -----------------------------------------------------------------------------------


async def test_every_task_keeps_a_result(store: Store) -> None:
    recs = await run_all(
        store,
        """
tasks:
  - name: lines
    agent: {type: shell, instructions: "seq 1 30"}
  - name: json
    output_format: {type: json, schema: object}
    agent: {type: shell, instructions: "echo '{\\"n\\": 2}'"}
  - name: broken
    agent: {type: shell, instructions: "echo partial; exit 3"}
""",
    )
    # A shell task's result is its last 20 stdout lines; a declared format's is the value.
    assert recs["lines"].parsed_result == "\n".join(str(i) for i in range(11, 31))
    assert recs["json"].parsed_result == {"n": 2}
    # A failed attempt keeps what it printed: a dependent's condition may read it.
    assert recs["broken"].state == State.FAILED
    assert recs["broken"].parsed_result == "partial"
    assert recs["lines"].to_json()["result"] == recs["lines"].parsed_result


async def test_a_long_result_is_capped_keeping_its_end(store: Store) -> None:
    # 20 lines of 16,384 characters (a line's stored chunk size) are past the cap.
    script = 'python3 -c "import sys; [print(str(i) * 16384) for i in range(10)]"'
    recs = await run_all(
        store, f"tasks:\n  - name: big\n    agent: {{type: shell, instructions: '{script}'}}\n"
    )
    result = recs["big"].parsed_result
    assert len(result) == RESULT_CHARS
    assert result.startswith("…") and result.endswith("9" * 100)


# -- {{needs...}} and context ------------------------------------------------------------------

SCAN = """
  - name: scan
    output_format: {type: json, schema: object}
    agent:
      type: shell
      instructions: |
        echo '{"files": ["a b.txt", "$(touch pwned)"], "count": 2}'
"""


async def test_needs_reach_a_shell_script_as_variables_never_as_its_text(
    store: Store, tmp_path: Path
) -> None:
    recs = await run_all(
        store,
        f"""
tasks:{SCAN}
  - name: use
    depends_on: [scan]
    agent:
      type: shell
      project_dir: {tmp_path}
      instructions: |
        printf '%s\\n' "{{{{needs.scan.result.files}}}}" "{{{{needs.scan.state}}}}"
        printf '%s\\n' "{{{{needs.scan.result.files.1}}}}" "$TUI_NEEDS_SCAN_RESULT_COUNT"
""",
    )
    assert recs["use"].state == State.COMPLETED, recs["use"].reason
    out = await stdout_of(store, recs["use"])
    assert out == ['["a b.txt", "$(touch pwned)"]', "COMPLETED", "$(touch pwned)", ""]
    assert not (tmp_path / "pwned").exists()


async def test_a_missing_field_fails_the_run_naming_it(store: Store) -> None:
    recs = await run_all(
        store,
        f"""
tasks:{SCAN}
  - name: use
    depends_on: [scan]
    agent: {{type: shell, instructions: 'echo "{{{{needs.scan.result.dirs}}}}"'}}
""",
    )
    assert recs["use"].state == State.FAILED
    assert "{{needs.scan.result.dirs}}" in recs["use"].reason
    assert "its keys: files, count" in recs["use"].reason


async def test_context_reaches_a_shell_task_as_a_json_file(store: Store) -> None:
    recs = await run_all(
        store,
        f"""
tasks:{SCAN}
  - name: note
    agent: {{type: shell, instructions: "echo noted"}}
  - name: use
    depends_on: [scan, note]
    context: {{from: [scan]}}
    agent:
      type: shell
      instructions: |
        echo "$TUI_CONTEXT_FILE"; cat "$TUI_CONTEXT_FILE"; echo; echo "$TUI_NEEDS_SCAN_STATE"
""",
    )
    path, body, state = await stdout_of(store, recs["use"])
    assert json.loads(body) == {
        "scan": {
            "id": recs["scan"].id,
            "state": "COMPLETED",
            "result": {"files": ["a b.txt", "$(touch pwned)"], "count": 2},
        }
    }
    assert state == "COMPLETED"
    assert not Path(path).exists()  # removed once the run is over


def test_a_prompt_gets_the_values_and_the_context_block() -> None:
    tasks = load(
        """
tasks:
  - {name: scan, agent: {type: shell, instructions: "true"}}
  - {name: lint, agent: {type: shell, instructions: "false"}}
  - name: fix
    depends_on: [scan, lint]
    context: {from: all}
    agent: {type: claude, instructions: "Fix {{needs.scan.result.files}} ({{needs.lint.state}})"}
  - name: brief
    depends_on: [scan, lint]
    context: {from: all, transfer: minimal}
    agent: {type: claude, instructions: "Go."}
"""
    )
    scan, lint, fix, brief = tasks
    records = {
        scan.id: task_record(scan, State.COMPLETED, {"files": ["x.py"]}),
        lint.id: task_record(lint, State.FAILED, "E1 bad"),
    }
    prepared = prepare(task_record(fix), records.get)
    text = prepared.rec.task.agent.instructions
    assert text == (
        "<upstream_results>\n"
        '<task name="scan" state="COMPLETED">\n<result>\n{"files": ["x.py"]}\n</result>\n'
        "</task>\n"
        '<task name="lint" state="FAILED">\n<result>\nE1 bad\n</result>\n'
        "<error>exit code 4</error>\n</task>\n"
        "</upstream_results>\n\n"
        'Fix ["x.py"] (FAILED)'
    )
    assert fix.agent.instructions.startswith("Fix {{")  # the stored task is unchanged
    prepared.cleanup()
    minimal = prepare(task_record(brief), records.get)
    assert minimal.rec.task.agent.instructions.startswith(
        '<upstream_results>\n<task name="scan" state="COMPLETED"/>\n'
        '<task name="lint" state="FAILED"/>\n</upstream_results>\n\nGo.'
    )
    minimal.cleanup()
    assert context_block({}) == "<upstream_results>\n</upstream_results>"


# -- when: -------------------------------------------------------------------------------------

BRANCHES = """
tasks:
  - name: analyze
    output_format: {type: json, schema: object}
    agent: {type: shell, instructions: "echo '{\\"sentiment\\": \\"positive\\"}'"}
  - name: celebrate
    depends_on: [analyze]
    when: needs.analyze.result.sentiment == 'positive'
    agent: {type: shell, instructions: "echo yay"}
  - name: console
    depends_on: [analyze]
    when: needs.analyze.result.sentiment == 'negative'
    agent: {type: shell, instructions: "echo there there"}
  - name: after-console
    depends_on: [console]
    when: needs.console.state == 'COMPLETED'
    agent: {type: shell, instructions: "echo never"}
  - name: report
    depends_on: [celebrate, console]
    agent: {type: shell, instructions: 'echo "{{needs.celebrate.state}} {{needs.console.state}}"'}
"""


async def test_a_condition_takes_one_branch_and_skips_the_other(store: Store) -> None:
    recs = await run_all(store, BRANCHES)
    assert {n: r.state for n, r in recs.items()} == {
        "analyze": State.COMPLETED,
        "celebrate": State.COMPLETED,
        "console": State.SKIPPED,
        "after-console": State.SKIPPED,  # its condition reads the skip
        "report": State.COMPLETED,  # a skipped dependency does not hold it back
    }
    assert "when: needs.analyze.result.sentiment == 'negative' is false" in recs["console"].reason
    assert await stdout_of(store, recs["report"]) == ["COMPLETED SKIPPED"]
    assert await store.runs(recs["console"].id) == []  # never ran
    assert recs["console"].settled


async def test_a_condition_that_cannot_be_evaluated_fails_its_task(store: Store) -> None:
    recs = await run_all(
        store,
        f"""
tasks:{SCAN}
  - name: check
    depends_on: [scan]
    when: needs.scan.result.missing > 1
    agent: {{type: shell, instructions: "echo no"}}
  - name: later
    depends_on: [check]
    agent: {{type: shell, instructions: "echo no"}}
""",
    )
    assert recs["check"].state == State.FAILED
    assert recs["check"].reason.startswith("check: when:")
    assert "missing" in recs["check"].reason
    assert recs["later"].state == State.CANCELLED


# -- on_error, on_max_retries ------------------------------------------------------------------


async def test_skip_on_max_retries_lets_the_pipeline_finish(store: Store) -> None:
    recs = await run_all(
        store,
        """
on_max_retries: skip
tasks:
  - name: flaky
    retry: {max_attempts: 2, delay: 10ms}
    agent: {type: shell, instructions: "echo attempt $TUI_ATTEMPT; exit 1"}
  - name: strict
    on_error: fail
    retry: {max_attempts: 3, delay: 10ms}
    agent: {type: shell, instructions: "exit 2"}
  - name: lenient
    on_error: skip
    agent: {type: shell, instructions: "exit 3"}
  - name: finish
    depends_on: [flaky, lenient]
    agent: {type: shell, instructions: 'echo "{{needs.flaky.state}} {{needs.flaky.result}}"'}
""",
    )
    assert recs["flaky"].state == State.SKIPPED and recs["flaky"].attempts == 2
    assert recs["flaky"].reason == "skipped (on_max_retries: skip) after 2 attempts: exit code 1"
    assert recs["strict"].state == State.FAILED and recs["strict"].attempts == 1
    assert recs["lenient"].state == State.SKIPPED and recs["lenient"].attempts == 1
    assert recs["lenient"].reason == "skipped (on_error: skip) after exit code 3"
    assert recs["finish"].state == State.COMPLETED
    assert await stdout_of(store, recs["finish"]) == ["SKIPPED attempt 2"]
    flaky_runs = await store.runs(recs["flaky"].id)
    assert [r.outcome for r in flaky_runs] == ["FAILED", "FAILED"]


async def test_engine_defaults_apply_to_tasks_that_set_nothing(store: Store) -> None:
    from tui.model.workflow import FileDefaults

    recs = await run_all(
        store,
        "tasks:\n  - {name: f, agent: {type: shell, instructions: 'exit 1'}}\n",
        defaults=FileDefaults.model_validate({"on_error": "skip"}),
    )
    assert recs["f"].state == State.SKIPPED


async def test_a_skipped_task_can_be_retried_by_hand(store: Store) -> None:
    tasks = load(
        "tasks:\n  - {name: s, on_error: skip, agent: {type: shell, instructions: "
        "'test $TUI_ATTEMPT = 2'}}\n"
    )
    async with Engine(store) as e:
        await e.submit(tasks)
        await e.wait_settled([tasks[0].id])
        assert (await stored(e, tasks[0].id)).state == State.SKIPPED
        await e.retry(tasks[0].id)
        await e.wait_settled([tasks[0].id])
        rec = await e.get(tasks[0].id)
    assert rec is not None and rec.state == State.COMPLETED


def test_a_value_too_big_for_the_environment_names_the_context_file() -> None:
    big, use = load(
        """
tasks:
  - {name: big, agent: {type: shell, instructions: "true"}}
  - name: use
    depends_on: [big]
    agent: {type: shell, instructions: 'echo "{{needs.big.result.blob}}"'}
"""
    )
    records = {big.id: task_record(big, State.COMPLETED, {"blob": "x" * 200_000})}
    with pytest.raises(WorkflowError) as e:
        prepare(task_record(use), records.get)
    assert "{{needs.big.result.blob}} is 195 KiB, too big" in str(e.value)
    assert "$TUI_CONTEXT_FILE" in str(e.value)
