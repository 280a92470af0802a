"""`context: {transfer: summary}` with a claude summariser: the real `claude` CLI against the
scripted model server summarises a shell task's result, the summariser task is costed like any
task, and the dependent claude task's prompt carries the summary instead of the result."""

from __future__ import annotations

import json
from pathlib import Path

from tests.agents.claude.conftest import needs_cli
from tests.agents.claude.model_server import ModelServer, first_user_text, text
from tests.agents.cli_support import settled
from tui.engine.scheduler import Engine
from tui.model.loader import load_task_text
from tui.model.states import State
from tui.store.db import Store

pytestmark = needs_cli

SUMMARY = {
    "summary": "The build printed numbers up to 5000.",
    "key_outputs": ["5000"],
    "decisions": ["kept the last 15 lines"],
    "errors": [],
}


async def test_a_claude_summariser_shortens_what_the_dependent_gets(
    engine: Engine, store: Store, model: ModelServer, project: Path
) -> None:
    model.script("zq-summarise", [text(json.dumps(SUMMARY), input_tokens=2000)])
    model.script("zq-report", [text("reported")])
    tasks = load_task_text(
        f"""
summarizer: {{strategy: moderate, agent: claude, model: haiku, prompt: "zq-summarise it"}}
tasks:
  - name: build
    agent: {{type: shell, instructions: "seq 1 5000 | tail -n 15 | sed s/^/BUILT-/"}}
  - name: report
    depends_on: [build]
    context: {{transfer: summary}}
    agent: {{type: claude, instructions: "zq-report", project_dir: "{project}",
             skip_planning: true}}
""",
        "wf.yaml",
    ).tasks
    await engine.submit(tasks)
    by = {t.name: t for t in tasks}
    await settled(engine, by["report"].id)
    recs = {r.name: r for r in await store.list_tasks()}
    assert {n: r.state for n, r in recs.items()} == dict.fromkeys(
        ["build", "summarize:build", "report"], State.COMPLETED
    )
    # The summariser read the whole result; its run is costed like any task's.
    [asked] = model.main_requests("zq-summarise")
    assert "BUILT-5000" in first_user_text(asked.body)
    s = recs["summarize:build"]
    assert s.parsed_result == SUMMARY and s.cost_usd > 0 and s.tokens_in >= 2000
    # The dependent got the summary, not the result.
    [prompt] = model.main_requests("zq-report")
    got = first_user_text(prompt.body)
    assert f"<summary>{json.dumps(SUMMARY)}</summary>" in got and "BUILT-" not in got
    kept = recs["build"].to_json()["summary"]
    assert kept["by"] == s.id and kept["strategy"] == "moderate"
    assert kept["size_before"] > kept["size_after"] == len(json.dumps(SUMMARY))
