"""``context: {transfer: summary}`` with the aggressive summariser (issue 12): the dependent
gets one line per upstream task instead of its result, the summary and its size before and
after are kept with the upstream task. Real SQLite files, real shell subprocesses."""

from __future__ import annotations

import json

from tests.engine.workflow_support import load, run_all, task_record
from tui.engine.workflow import prepare
from tui.model.states import State
from tui.model.task import Task, default_worktree
from tui.model.workflow import Strategy
from tui.store.db import Store

PIPELINE = """
summarizer: {strategy: aggressive}
tasks:
  - name: build
    agent: {type: shell, instructions: "seq 1 5000 | tail -n 15"}
  - name: lint
    on_error: skip
    retry: {max_attempts: 1}
    agent: {type: shell, instructions: "echo lint broke; exit 2"}
  - name: report
    depends_on: [build, lint]
    context: {transfer: summary}
    agent: {type: shell, instructions: 'cat "$TUI_CONTEXT_FILE"'}
"""


async def test_a_dependent_gets_one_line_per_upstream_and_the_sizes_are_kept(
    store: Store,
) -> None:
    recs = await run_all(store, PIPELINE)
    assert recs["report"].state == State.COMPLETED
    lines = [ln.text for ln in await store.read_output(recs["report"].id) if ln.stream == 1]
    got = json.loads("".join(lines))
    assert got == {
        "build": {
            "id": recs["build"].id,
            "state": "COMPLETED",
            "summary": "build completed: success",
        },
        "lint": {"id": recs["lint"].id, "state": "SKIPPED", "summary": "lint skipped"},
    }
    assert "4999" not in "".join(lines)  # the full result did not travel
    build = recs["build"].to_json()["summary"]
    full = recs["build"].parsed_result
    assert build == {
        "strategy": "aggressive",
        "summary": "build completed: success",
        "size_before": len(full),
        "size_after": len("build completed: success"),
    }
    assert build["size_before"] > build["size_after"]
    assert recs["lint"].to_json()["summary"]["summary"] == "lint skipped"
    # A task no one summarised has none.
    assert recs["report"].to_json()["summary"] is None


def test_a_prompt_carries_the_summary_instead_of_the_result() -> None:
    scan, fix = load(
        """
tasks:
  - {name: scan, agent: {type: shell, instructions: "true"}}
  - name: fix
    depends_on: [scan]
    context: {transfer: summary}
    agent: {type: claude, instructions: "Fix it."}
"""
    )
    assert fix.summarizer is None  # no file or config default: aggressive, built in
    records = {scan.id: task_record(scan, State.COMPLETED, "a very long report " * 100)}
    prepared = prepare(task_record(fix, State.PENDING), records.get)
    assert prepared.rec.task.agent.instructions == (
        '<upstream_results>\n<task name="scan" state="COMPLETED">\n'
        "<summary>scan completed: success</summary>\n</task>\n</upstream_results>\n\nFix it."
    )
    kept = json.loads(prepared.summaries[scan.id])
    assert kept["size_before"] == len("a very long report " * 100)
    assert kept["size_after"] == len("scan completed: success")
    prepared.cleanup()


def test_a_file_summarizer_applies_to_its_tasks_and_a_task_may_set_its_own() -> None:
    tasks = load(
        """
summarizer: {strategy: aggressive, agent: claude, model: haiku}
tasks:
  - {name: a, agent: {type: shell, instructions: "true"}}
  - name: b
    summarizer: {model: other}
    agent: {type: shell, instructions: "true"}
"""
    )
    a, b = tasks
    assert a.summarizer is not None and a.summarizer.model == "haiku"
    assert a.summarizer.strategy == Strategy.AGGRESSIVE
    assert b.summarizer is not None and b.summarizer.model == "other"
    again = Task.model_validate_json(a.model_dump_json())  # stored and read back the same
    assert again.summarizer == a.summarizer


# -- agent strategies: a summariser task per upstream task -------------------------------------

# A shell stand-in for the summariser agent: it reads the upstream result from its context file
# (as an agent reads the <upstream_results> block) and answers with the summary object.
STAND_IN = (
    'n=$(wc -c < "$TUI_CONTEXT_FILE"); '
    'printf \'{"summary": "build printed %s bytes", "key_outputs": ["5000"], '
    '"decisions": [], "errors": []}\\n\' "$n"'
)


def agent_pipeline(stand_in: str = STAND_IN) -> str:
    return f"""
summarizer: {{strategy: moderate, agent: shell, prompt: {json.dumps(stand_in)}}}
tasks:
  - name: build
    agent: {{type: shell, instructions: "seq 1 5000 | tail -n 15"}}
  - name: lint
    agent: {{type: shell, instructions: "echo clean"}}
  - name: report
    depends_on: [build, lint]
    context: {{from: [build], transfer: summary}}
    agent: {{type: shell, instructions: 'cat "$TUI_CONTEXT_FILE"'}}
  - name: notify
    depends_on: [build]
    context: {{transfer: summary}}
    agent: {{type: shell, instructions: 'cat "$TUI_CONTEXT_FILE"'}}
"""


def test_the_loader_adds_one_summariser_task_per_summarised_upstream() -> None:
    tasks = load(agent_pipeline())
    names = [t.name for t in tasks]
    assert names.count("summarize:build") == 1  # shared by report and notify
    assert "summarize:lint" not in names  # report takes only build's (context.from)
    by = {t.name: t for t in tasks}
    s = by["summarize:build"]
    assert s.depends_on == [by["build"].id] and s.summarizes == by["build"].id
    assert s.agent.type == "shell" and s.output_format is not None
    assert s.id in by["report"].depends_on and s.id in by["notify"].depends_on
    assert names.index("summarize:build") < names.index("report")
    # config.toml's `worktree = true` gives the file's tasks a checkout, never a summariser.
    default_worktree(tasks, True)
    assert s.worktree is None and by["report"].worktree is not None


async def test_a_summariser_task_runs_and_its_summary_reaches_the_dependents(
    store: Store,
) -> None:
    recs = await run_all(store, agent_pipeline())
    assert {n: r.state for n, r in recs.items()} == dict.fromkeys(
        ["build", "lint", "report", "notify", "summarize:build"], State.COMPLETED
    )
    s = recs["summarize:build"]
    expected = {
        "summary": s.parsed_result["summary"],
        "key_outputs": ["5000"],
        "decisions": [],
        "errors": [],
    }
    assert s.parsed_result["summary"].startswith("build printed ")
    for name in ("report", "notify"):
        lines = [ln.text for ln in await store.read_output(recs[name].id) if ln.stream == 1]
        got = json.loads("".join(lines))
        # Only the upstream named: never the summariser task itself, never the full result.
        assert got == {"build": {"id": recs["build"].id, "state": "COMPLETED", "summary": expected}}
    kept = recs["build"].to_json()["summary"]
    assert kept == {
        "strategy": "moderate",
        "summary": expected,
        "by": s.id,
        "size_before": len(recs["build"].parsed_result),
        "size_after": len(json.dumps(expected)),
    }
    assert recs["lint"].to_json()["summary"] is None


async def test_a_summariser_that_fails_stops_the_dependent_not_the_upstream(
    store: Store,
) -> None:
    recs = await run_all(store, agent_pipeline("echo not json"))
    assert recs["build"].state == State.COMPLETED
    assert recs["summarize:build"].state == State.FAILED
    assert recs["report"].state == State.CANCELLED
