"""Classification by a classifier agent (issue 12): a task that leaves `agent.type` out and
that no `[settings] classify` rule classifies waits PENDING — shown as classifying — on a
`classify:NAME` task running the configured classifier; its answer becomes the task's agent,
stored as the task queues. Real SQLite files, real shell subprocesses (a scripted classifier
reading the task from $TUI_CONTEXT_FILE and answering JSON)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from tests.conftest import wait_state
from tui.engine.scheduler import Engine
from tui.model.classify import ClassifyRule
from tui.model.loader import load_task_text
from tui.model.states import State
from tui.model.task import Task
from tui.store.db import Store
from tui.store.records import TaskRecord

# Picks shell for a task tagged `script`, else gemini (with a model); before answering it
# reads one line from $GATE when that names a FIFO, so a test can look while it runs.
CLASSIFIER = (
    '[ -n "$GATE" ] && read -r _ < "$GATE"; '
    "python3 -c 'import json, os; "
    't = json.load(open(os.environ["TUI_CONTEXT_FILE"]))["task"]; '
    'print(json.dumps({"agent": "shell" if "script" in t["tags"] else "gemini", '
    '"model": "gemini-2.5-flash"}))\''
)


def pipeline(prompt: str = CLASSIFIER, build_extra: str = "") -> str:
    return f"""
classifier: {{agent: shell, prompt: {json.dumps(prompt)}}}
tasks:
  - name: build
    tags: [script]
    description: Build the thing.{build_extra}
    agent: {{instructions: "echo built by $0"}}
  - name: chosen
    agent: {{type: shell, instructions: "echo mine"}}
  - name: report
    depends_on: [build]
    context: {{from: all}}
    agent: {{type: shell, instructions: 'cat "$TUI_CONTEXT_FILE"'}}
"""


def load(text: str, rules: list[ClassifyRule] | None = None) -> list[Task]:
    return load_task_text(text, "wf.yaml", classify=lambda: list(rules or [])).tasks


async def run_all(store: Store, tasks: list[Task]) -> dict[str, TaskRecord]:
    async with Engine(store) as e:
        await e.submit(tasks)
        await e.wait_settled([t.id for t in tasks])
    return {r.name: r for r in await store.list_tasks()}


def test_the_loader_adds_a_classifier_task_only_where_no_rule_and_no_type_chose() -> None:
    tasks = load(pipeline())
    by = {t.name: t for t in tasks}
    assert [t.name for t in tasks] == ["classify:build", "build", "chosen", "report"]
    c, build = by["classify:build"], by["build"]
    assert c.classifies == build.id and c.tags == ["classification"]
    assert c.agent.type == "shell" and c.output_format is not None
    assert build.classify_by == c.id and build.depends_on == [c.id]
    # A rule that matches classifies at load: no classifier task.
    ruled = load(pipeline(), [ClassifyRule(tags=["script"], agent="shell")])
    assert [t.name for t in ruled] == ["build", "chosen", "report"]
    assert ruled[0].agent.type == "shell" and not ruled[0].classify_by
    # No classifier and no rule: the default agent, as before.
    plain = load("tasks:\n  - {name: build, agent: {instructions: hi}}\n")
    assert [(t.name, t.agent.type, t.classify_by) for t in plain] == [("build", "claude", "")]


async def test_a_task_is_classifying_while_its_classifier_runs_then_runs_as_chosen(
    store: Store, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    tasks = load(pipeline(CLASSIFIER.replace("$GATE", str(gate))))
    ids = {t.name: t.id for t in tasks}
    async with Engine(store) as e:
        await e.submit(tasks)
        await wait_state(e, ids["classify:build"], State.RUNNING)
        waiting = await e.get(ids["build"])
        assert waiting is not None and waiting.state == State.PENDING
        assert waiting.phase == "classifying" and waiting.to_json()["phase"] == "classifying"
        # Opening the FIFO for writing lets the classifier read its line and answer.
        await asyncio.to_thread(gate.write_text, "go\n")
        await e.wait_settled(list(ids.values()))
    recs = {r.name: r for r in await store.list_tasks()}  # read back from the file
    build = recs["build"]
    assert build.state == State.COMPLETED, build.reason
    assert build.task.agent.type == "shell" and not build.task.classify_by
    assert build.task.agent.model == ""  # a shell task takes no model: the answer's is moot
    assert build.phase == "" and build.parsed_result.startswith("built by ")
    [queued] = [why for _, _, to, why, _ in await store.transitions(ids["build"]) if to == "QUEUED"]
    assert queued == "classified as shell by classify:build; ready to run"
    # The classifier's own result is not part of the dependent's context.
    lines = [ln.text for ln in await store.read_output(recs["report"].id) if ln.stream == 1]
    assert list(json.loads("".join(lines))) == ["build"]
    assert recs["chosen"].state == State.COMPLETED


async def test_the_classifier_sees_the_task_and_its_answer_sets_agent_and_model(
    store: Store,
) -> None:
    text = pipeline().replace("tags: [script]", "tags: [web]")
    recs = await run_all(store, [t for t in load(text) if t.name != "report"])
    # gemini was chosen: the CLI is not there in this test's PATH or fails; what matters is
    # that the stored task is a gemini task with the answer's model.
    build = recs["build"]
    assert build.task.agent.type == "gemini"
    assert build.task.agent.model == "gemini-2.5-flash"
    assert build.task.agent.instructions == "echo built by $0"


async def test_an_answer_the_task_cannot_take_fails_it_naming_why(store: Store) -> None:
    # `system:` is for agents with a system prompt: a shell task cannot have one.
    recs = await run_all(store, load(pipeline(build_extra="\n    system: Be brief.")))
    build = recs["build"]
    assert build.state == State.FAILED
    assert build.reason.startswith("build: classified as shell, which this task cannot be: ")
    assert recs["report"].state == State.CANCELLED


async def test_a_classifier_that_fails_cancels_the_task(store: Store) -> None:
    recs = await run_all(store, load(pipeline("echo not json")))
    assert recs["classify:build"].state == State.FAILED
    assert recs["build"].state == State.CANCELLED
    assert recs["chosen"].state == State.COMPLETED
