"""The Codex adapter driving the real `codex` CLI against the scripted Responses API server.

Each test scripts the model's turns, runs a task through the engine and checks what the engine
stored (states, runs, tokens, cost, sessions, output) and what the CLI's real tools did on disk.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agents.cli_support import BareContext, continued, output, raw_lines, settled
from tests.agents.codex.conftest import codex_task, needs_cli
from tests.agents.codex.responses_server import ResponsesServer, call, fail, say
from tests.conftest import stored, wait_state
from tui.agents.codex import CodexAdapter
from tui.engine.scheduler import Engine
from tui.model.states import State
from tui.store.db import Store
from tui.store.records import STDERR, RunRecord

pytestmark = needs_cli


async def test_simple_run_stores_result_tokens_cost_and_thread(
    engine: Engine, store: Store, responses: ResponsesServer, project: Path
) -> None:
    responses.script("zc-hello", [say("Hello from codex.", input_tokens=1000, output_tokens=50)])
    t = codex_task("hello", "zc-hello: say hello", project, review=True)
    await engine.submit([t])
    await wait_state(engine, t.id, State.READY)
    [review] = await engine.questions(t.id)
    assert review.payload["result"] == "Hello from codex."
    await engine.accept(t.id)

    [run] = await store.runs(t.id)
    assert run.exit_code == 0 and run.outcome == "COMPLETED"
    assert (run.tokens_in, run.tokens_out) == (1000, 50)
    assert run.cost_usd == pytest.approx((1000 * 1.25 + 50 * 10.0) / 1e6)  # gpt-5 list price
    raw = await raw_lines(store, t.id)
    assert raw[0]["type"] == "thread.started" and run.session_id == raw[0]["thread_id"]
    assert raw[-1]["type"] == "turn.completed"
    lines = await output(store, t.id)
    assert lines[0] == f"[codex] thread {run.session_id}"
    assert "Hello from codex." in lines and lines[-1].startswith("[codex] done")
    stderr = await output(store, t.id, STDERR)
    assert not any("PATH aliases" in ln or "Reading additional input" in ln for ln in stderr)
    [request] = responses.turn_requests("zc-hello")
    assert request.body["model"] == "gpt-5"


async def test_shell_command_writes_a_file_in_the_workspace_sandbox(
    engine: Engine, store: Store, responses: ResponsesServer, project: Path
) -> None:
    responses.script(
        "zc-write",
        [call("exec_command", {"cmd": "echo hi > out.txt"}), say("Wrote out.txt.")],
    )
    t = codex_task("write", "zc-write", project)
    await engine.submit([t])
    await settled(engine, t.id)

    rec = await engine.get(t.id)
    assert rec is not None and rec.state == State.COMPLETED, rec and rec.reason
    assert (project / "out.txt").read_text() == "hi\n"
    [result] = responses.turn_requests("zc-write")[-1].outputs()
    assert "Exit code: 0" in json.dumps(result) or "exit" in json.dumps(result).lower()
    lines = await output(store, t.id)
    assert any(ln.startswith("→ shell: ") and "echo hi > out.txt" in ln for ln in lines)
    assert "Wrote out.txt." in lines


async def test_read_only_sandbox_blocks_the_write(
    engine: Engine, store: Store, responses: ResponsesServer, project: Path
) -> None:
    responses.script(
        "zc-ro", [call("exec_command", {"cmd": "echo no > blocked.txt"}), say("Could not.")]
    )
    t = codex_task("ro", "zc-ro", project, agent={"permission_mode": "plan"})
    await engine.submit([t])
    await settled(engine, t.id)

    assert (await stored(engine, t.id)).state == State.COMPLETED
    assert not (project / "blocked.txt").exists()
    # The refused command's result went back to the model (codex does not always print an
    # item for it on stdout, so the request the model server got is the evidence).
    last = responses.turn_requests("zc-ro")[-1]
    assert last.outputs(), last.items


async def test_api_error_fails_with_the_cli_error_text(
    engine: Engine, store: Store, responses: ResponsesServer, project: Path
) -> None:
    responses.script("zc-err", [fail(400, "scripted: the request was refused")])
    t = codex_task("err", "zc-err", project)
    await engine.submit([t])
    await settled(engine, t.id)

    rec = await engine.get(t.id)
    assert rec is not None and rec.state == State.FAILED
    assert rec.reason.endswith("codex turn failed: scripted: the request was refused")
    [run] = await store.runs(t.id)
    assert run.exit_code == 1 and run.session_id
    lines = await output(store, t.id)
    assert "[codex] failed: scripted: the request was refused" in lines


async def test_retry_resumes_the_same_thread(
    engine: Engine, store: Store, responses: ResponsesServer, project: Path
) -> None:
    responses.script(
        "zc-retry",
        [
            call("exec_command", {"cmd": "echo first >> trail.txt"}),
            fail(400, "scripted: bad request", once=True, then="Recovered answer."),
        ],
    )
    t = codex_task(
        "retry", "zc-retry: do the thing", project, retry={"max_attempts": 2, "delay": "0s"}
    )
    await engine.submit([t])
    await settled(engine, t.id)

    rec = await engine.get(t.id)
    assert rec is not None and rec.state == State.COMPLETED, rec and rec.reason
    first, second = await store.runs(t.id)
    assert first.outcome == "FAILED" and "scripted: bad request" in first.error
    assert first.session_id and second.session_id == first.session_id
    assert (project / "trail.txt").read_text() == "first\n"  # not run again
    last = responses.turn_requests()[-1]
    history = last.flat_text()
    assert "zc-retry: do the thing" in history and "echo first >> trail.txt" in history
    assert "The previous attempt ended" in history and "Continue the task." in history
    assert "Recovered answer." in await output(store, t.id)
    # turn.completed counts the whole thread: the failed run's tokens land in this one.
    assert (second.tokens_in, second.tokens_out) == (200, 40)


async def test_review_rejection_resumes_and_counts_only_this_runs_tokens(
    engine: Engine, store: Store, responses: ResponsesServer, project: Path
) -> None:
    responses.script("zc-review", [say("draft one"), say("draft two")])
    t = codex_task("review", "zc-review", project, review=True)
    await engine.submit([t])
    await wait_state(engine, t.id, State.READY)
    await engine.reject(t.id, "shorter please")
    await wait_state(engine, t.id, State.READY)
    [review] = await engine.questions(t.id)
    assert review.payload["result"] == "draft two"
    await engine.accept(t.id)

    first, second = await store.runs(t.id)
    assert second.session_id == first.session_id
    assert (first.tokens_in, second.tokens_in) == (100, 100)
    last = responses.turn_requests()[-1].flat_text()
    assert "A reviewer rejected your result: shorter please. Revise it." in last
    assert "draft one" in last


async def test_budget_exceeded_from_the_price_table(
    engine: Engine, store: Store, responses: ResponsesServer, project: Path
) -> None:
    responses.script("zc-budget", [say("pricey", input_tokens=1_000_000)])
    t = codex_task("budget", "zc-budget", project, agent={"max_budget_usd": 0.5})
    await engine.submit([t])
    await settled(engine, t.id)

    rec = await engine.get(t.id)
    assert rec is not None and rec.state == State.BUDGET_EXCEEDED, rec and rec.reason
    [run] = await store.runs(t.id)
    assert run.cost_usd == pytest.approx(1.25 + 20 * 10 / 1e6)


async def test_a_thread_the_cli_does_not_know_starts_afresh(
    adapter: CodexAdapter, responses: ResponsesServer, project: Path
) -> None:
    responses.script("zc-lost", [say("fresh start")])
    gone = "01a20068-16b6-7d43-84fc-1a82633cb399"
    previous = RunRecord(
        1, "t", 1, "e", None, None, None, 0.0, 1.0, 1, "FAILED", "boom", 0, 0, 0, gone
    )
    ctx = BareContext(codex_task("lost", "zc-lost", project), [previous])
    result = await adapter.run(ctx)  # type: ignore[arg-type]
    assert result.outcome == State.COMPLETED and result.result == "fresh start"
    assert result.session_id and result.session_id != gone
    assert ctx.sessions[-1] == result.session_id  # reported as soon as the CLI said it
    assert (2, f"[tui] session {gone} is gone; starting afresh") in ctx.lines


async def test_continue_resumes_the_thread_with_the_message(
    engine: Engine, store: Store, responses: ResponsesServer, project: Path
) -> None:
    responses.script("zc-cont", [say("first answer"), say("second answer")])
    await continued(engine, store, codex_task("cont", "zc-cont", project), responses)
