"""The Claude adapter driving the real `claude` CLI against the scripted model server.

Each test scripts the model's turns, runs a task through the engine and checks what the engine
stored (states, questions, runs, cost, sessions) and what the CLI's real tools did on disk.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
from pathlib import Path

from tests.agents.claude.conftest import claude_task, needs_cli
from tests.agents.claude.model_server import ModelServer, text, tool_use
from tests.agents.cli_support import BareContext, output, raw_lines, settled
from tests.conftest import question, stored, wait_state
from tui.agents.claude import ClaudeAdapter
from tui.engine.scheduler import Engine
from tui.model.states import State
from tui.store.db import Store
from tui.store.records import RunRecord

pytestmark = needs_cli

DB_QUESTION = {
    "question": "Which database should the service use?",
    "header": "Database",
    "multiSelect": False,
    "options": [
        {"label": "SQLite", "description": "Embedded, zero setup"},
        {"label": "PostgreSQL", "description": "Server, scales further"},
    ],
}


async def test_question_answered_with_context_files(
    engine: Engine, store: Store, model: ModelServer, project: Path
) -> None:
    (project / "notes.md").write_text("use the fast path\n")
    model.script(
        "zq-ask",
        [
            tool_use("AskUserQuestion", {"questions": [DB_QUESTION]}, say="Let me ask."),
            text("Using SQLite."),
        ],
    )
    t = claude_task(
        "ask", "zq-ask: pick a database", project, agent={"context_files": ["notes.md"]}
    )
    await engine.submit([t])
    q = await question(engine, t.id)
    assert q.kind == "question"
    assert q.payload == {"questions": [{**DB_QUESTION}]}
    assert (await stored(engine, t.id)).state == State.READY
    await engine.answer(q.id, {"answers": {DB_QUESTION["question"]: "SQLite"}})
    await settled(engine, t.id)

    rec = await engine.get(t.id)
    assert rec is not None and rec.state == State.COMPLETED, rec and rec.reason
    [run] = await store.runs(t.id)
    assert run.session_id and run.cost_usd > 0
    assert (run.tokens_in, run.tokens_out) == (200, 40)
    assert rec.cost_usd == run.cost_usd
    first = model.main_requests("zq-ask")[0].flat_text()
    assert "=== Context file: notes.md ===" in first and "use the fast path" in first
    [result] = model.main_requests("zq-ask")[-1].tool_results()
    assert '"Which database should the service use?"="SQLite"' in result["content"]
    lines = await output(store, t.id)
    assert "Let me ask." in lines and "Using SQLite." in lines
    assert any(ln.startswith("→ AskUserQuestion: Which database") for ln in lines)
    raw = await raw_lines(store, t.id)
    assert raw[0]["type"] == "system" and raw[0]["session_id"] == run.session_id
    assert raw[-1]["type"] == "result"


async def test_several_questions_multiselect_and_free_text(
    engine: Engine, model: ModelServer, project: Path
) -> None:
    colors = {
        "question": "Which colors?",
        "header": "Colors",
        "multiSelect": True,
        "options": [
            {"label": "red", "description": "warm"},
            {"label": "blue", "description": "cool"},
            {"label": "green", "description": "calm"},
        ],
    }
    name = {
        "question": "What name?",
        "header": "Name",
        "multiSelect": False,
        "options": [
            {"label": "Alpha", "description": "first"},
            {"label": "Beta", "description": "second"},
        ],
    }
    model.script(
        "zq-multi", [tool_use("AskUserQuestion", {"questions": [colors, name]}), text("ok")]
    )
    t = claude_task("multi", "zq-multi", project)
    await engine.submit([t])
    q = await question(engine, t.id)
    assert [x["question"] for x in q.payload["questions"]] == ["Which colors?", "What name?"]
    assert q.payload["questions"][0]["multiSelect"] is True
    answers = {"Which colors?": ["red", "green"], "What name?": "Zed, my own"}
    await engine.answer(q.id, {"answers": answers})
    await settled(engine, t.id)
    assert (await stored(engine, t.id)).state == State.COMPLETED
    [result] = model.main_requests()[-1].tool_results()
    assert '"Which colors?"="red, green"' in result["content"]
    assert '"What name?"="Zed, my own"' in result["content"]


async def test_bash_allowed_runs_and_write_denied_is_refused(
    engine: Engine, store: Store, model: ModelServer, project: Path
) -> None:
    model.script(
        "zq-perm",
        [
            tool_use("Bash", {"command": "touch made-by-bash.txt", "description": "make a file"}),
            tool_use("Write", {"file_path": str(project / "denied.txt"), "content": "no\n"}),
            text("finished"),
        ],
    )
    t = claude_task("perm", "zq-perm", project)
    await engine.submit([t])
    bash = await question(engine, t.id)
    assert bash.kind == "approval" and bash.payload["tool"] == "Bash"
    assert bash.payload["summary"] == "touch made-by-bash.txt"
    assert "make a file" in bash.payload["detail"]
    assert bash.payload["input"]["command"] == "touch made-by-bash.txt"
    assert any(s.get("type") == "addRules" for s in bash.payload["suggestions"])
    await engine.answer(bash.id, {"behavior": "allow"})
    write = await question(engine, t.id)
    assert write.payload["tool"] == "Write" and write.payload["summary"] == "denied.txt"
    assert write.payload["detail"] == "denied.txt\n\nno\n"
    await engine.answer(write.id, {"behavior": "deny", "message": "not in this repo"})
    await settled(engine, t.id)

    assert (await stored(engine, t.id)).state == State.COMPLETED
    assert (project / "made-by-bash.txt").exists()
    assert not (project / "denied.txt").exists()
    results = model.main_requests()[-1].tool_results()
    assert results[0].get("is_error") in (None, False)
    assert results[1]["is_error"] is True and "not in this repo" in json.dumps(results[1])
    lines = await output(store, t.id)
    assert "→ Bash: touch made-by-bash.txt" in lines and "→ Write: denied.txt" in lines


async def test_allow_always_and_allowed_tools_do_not_ask_again(
    engine: Engine, store: Store, model: ModelServer, project: Path
) -> None:
    (project / "seed.txt").write_text("seed\n")
    model.script(
        "zq-always",
        [
            tool_use("Bash", {"command": "cp seed.txt one.txt"}),
            tool_use("Bash", {"command": "cp seed.txt two.txt"}),
            tool_use("Bash", {"command": "sh -c 'echo free > free.txt'"}),
            text("done"),
        ],
    )
    t = claude_task("always", "zq-always", project, agent={"allowed_tools": ["Bash(sh -c:*)"]})
    await engine.submit([t])
    q = await question(engine, t.id)
    assert q.payload["summary"] == "cp seed.txt one.txt"
    await engine.answer(q.id, {"behavior": "allow_always"})
    await settled(engine, t.id)
    assert (await stored(engine, t.id)).state == State.COMPLETED
    assert len(await store.questions(task_id=t.id, open_only=False)) == 1
    assert {p.name for p in project.iterdir()} >= {"one.txt", "two.txt", "free.txt"}
    # The permission stays in the session, never in the project's settings.
    assert not (project / ".claude" / "settings.local.json").exists()


async def test_plan_rejected_then_approved_then_executed(
    engine: Engine, store: Store, model: ModelServer, project: Path
) -> None:
    model.script(
        "zq-plan",
        [
            tool_use("ExitPlanMode", {"plan": "1. Write plan-out.txt"}),
            tool_use("ExitPlanMode", {"plan": "1. Write plan-out.txt\n2. Add a test"}),
            tool_use("Write", {"file_path": str(project / "plan-out.txt"), "content": "done\n"}),
            text("Plan executed."),
        ],
    )
    t = claude_task("plan", "zq-plan", project, agent={"skip_planning": False})
    await engine.submit([t])
    first = await question(engine, t.id)
    assert first.kind == "approval" and first.payload["tool"] == "ExitPlanMode"
    assert (first.payload["summary"], first.payload["detail"]) == ("plan", "1. Write plan-out.txt")
    await engine.answer(first.id, {"behavior": "deny", "message": "add a test step"})
    second = await question(engine, t.id)
    assert second.payload["detail"].endswith("2. Add a test")
    await engine.answer(second.id, {"behavior": "allow"})
    write = await question(engine, t.id)  # after the plan the CLI is in `default` mode: it asks
    assert write.payload["tool"] == "Write"
    await engine.answer(write.id, {"behavior": "allow"})
    await settled(engine, t.id)

    assert (await stored(engine, t.id)).state == State.COMPLETED
    assert (project / "plan-out.txt").read_text() == "done\n"
    rejected = model.main_requests()[1].tool_results()[-1]
    assert rejected["is_error"] is True and "add a test step" in json.dumps(rejected)
    raw = await raw_lines(store, t.id)
    assert raw[0]["permissionMode"] == "plan"
    modes = [m["permissionMode"] for m in raw if m.get("subtype") == "status"]
    assert modes == ["default"]


async def test_budget_exceeded(
    engine: Engine, store: Store, model: ModelServer, project: Path
) -> None:
    model.script("zq-budget", [text("pricey", input_tokens=1_000_000), text("more")])
    t = claude_task("budget", "zq-budget", project, agent={"max_budget_usd": 0.0001})
    await engine.submit([t])
    await settled(engine, t.id)
    rec = await engine.get(t.id)
    assert rec is not None and rec.state == State.BUDGET_EXCEEDED
    assert "budget" in rec.reason.lower()
    [run] = await store.runs(t.id)
    assert run.exit_code == 1 and run.cost_usd > 1 and run.tokens_in == 1_000_000
    assert len(model.main_requests()) == 1


async def transcript_has(home: Path, needle: str) -> None:
    """Wait until the CLI's session transcript on disk mentions ``needle``."""

    async def look() -> None:
        while not any(needle in f.read_text() for f in home.glob(".claude/projects/*/*.jsonl")):
            await asyncio.sleep(0.02)

    await asyncio.wait_for(look(), 30)


async def test_killed_mid_run_retries_resuming_the_same_session(
    engine: Engine, store: Store, model: ModelServer, project: Path, adapter: ClaudeAdapter
) -> None:
    gate = threading.Event()
    slow = text("resumed and done", block=gate)
    model.script("zq-kill", [tool_use("Bash", {"command": "echo first >> trail.txt"}), slow])
    t = claude_task(
        "kill",
        "zq-kill",
        project,
        agent={"allowed_tools": ["Bash"]},
        retry={"max_attempts": 2, "delay": "0s"},
    )
    await engine.submit([t])
    await model.wait_reached(slow)
    [first] = await store.runs(t.id)
    assert first.pgid is not None
    # The CLI writes its session transcript in batches (~0.1 s); killed before the batch with
    # the tool result lands, a resume would drop that tool call. Kill once it is on disk.
    await transcript_has(Path(adapter.extra_env["HOME"]), "tool_result")
    os.killpg(first.pgid, signal.SIGKILL)
    await settled(engine, t.id)

    rec = await engine.get(t.id)
    assert rec is not None and rec.state == State.COMPLETED, rec and rec.reason
    first, second = await store.runs(t.id)
    assert first.outcome == "FAILED" and "SIGKILL" in first.error
    assert first.session_id and second.session_id == first.session_id
    assert (project / "trail.txt").read_text() == "first\n"  # the tool call was not repeated
    resumed = model.main_requests()[-1]
    history = resumed.flat_text()
    assert "echo first >> trail.txt" in history  # the earlier turns came back with --resume
    assert "The previous attempt ended" in history and "Continue the task." in history


async def test_review_rejected_resumes_with_the_comment_then_accepted(
    engine: Engine, store: Store, model: ModelServer, project: Path
) -> None:
    model.script("zq-review", [text("draft one"), text("draft two")])
    t = claude_task("review", "zq-review", project, review=True)
    await engine.submit([t])
    await wait_state(engine, t.id, State.READY)
    [review] = await engine.questions(t.id)
    assert review.kind == "review" and review.payload["result"] == "draft one"
    await engine.reject(t.id, "shorter please")
    await wait_state(engine, t.id, State.READY)
    [review] = await engine.questions(t.id)
    assert review.payload["result"] == "draft two"
    await engine.accept(t.id)

    assert (await stored(engine, t.id)).state == State.COMPLETED
    first, second = await store.runs(t.id)
    assert second.session_id == first.session_id
    last = model.main_requests()[-1].flat_text()
    assert "A reviewer rejected your result: shorter please. Revise it." in last
    assert "draft one" in last


async def test_a_session_the_cli_does_not_know_starts_afresh(
    adapter: ClaudeAdapter, model: ModelServer, project: Path
) -> None:
    model.script("zq-lost", [text("fresh start")])
    gone = "11111111-2222-3333-4444-555555555555"
    previous = RunRecord(
        1, "t", 1, "e", None, None, None, 0.0, 1.0, 1, "FAILED", "boom", 0, 0, 0, gone
    )
    ctx = BareContext(claude_task("lost", "zq-lost", project), [previous])
    result = await adapter.run(ctx)  # type: ignore[arg-type]
    assert result.outcome == State.COMPLETED and result.result == "fresh start"
    assert result.session_id and result.session_id != gone
    assert ctx.sessions[-1] == result.session_id  # reported as soon as the CLI said it
    assert (2, f"[tui] session {gone} is gone; starting afresh") in ctx.lines
    assert "zq-lost" in model.main_requests()[0].flat_text()
