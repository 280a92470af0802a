"""The Gemini adapter driving the real `gemini` CLI against the scripted Gemini API server.

Each test scripts the model's turns, runs a task through the engine and checks what the engine
stored (states, runs, tokens, cost, sessions, output) and what the CLI's real tools did on disk.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agents.cli_support import BareContext, continued, output, raw_lines, settled
from tests.agents.gemini.conftest import gemini_task, needs_cli
from tests.agents.gemini.gemini_server import GeminiServer, call, fail, say
from tests.conftest import stored, wait_state
from tui.agents.gemini import GeminiAdapter
from tui.engine.scheduler import Engine
from tui.model.states import State
from tui.store.db import Store
from tui.store.records import STDERR, RunRecord

pytestmark = needs_cli


async def test_simple_run_stores_result_tokens_cost_and_session(
    engine: Engine, store: Store, gemini: GeminiServer, project: Path
) -> None:
    gemini.script("zg-hello", [say("Hello there.\nAll done.", input_tokens=1000, output_tokens=50)])
    t = gemini_task("hello", "zg-hello: say hello", project, review=True)
    await engine.submit([t])
    await wait_state(engine, t.id, State.READY)
    [review] = await engine.questions(t.id)
    assert review.payload["result"] == "Hello there.\nAll done."  # the final text is the result
    await engine.accept(t.id)

    rec = await engine.get(t.id)
    assert rec is not None and rec.state == State.COMPLETED, rec and rec.reason
    [run] = await store.runs(t.id)
    assert run.exit_code == 0
    assert (run.tokens_in, run.tokens_out) == (1000, 50)
    # gemini-2.5-flash in the default table: $0.30 in, $2.50 out per million tokens.
    assert run.cost_usd == pytest.approx((1000 * 0.30 + 50 * 2.50) / 1e6)
    raw = await raw_lines(store, t.id)
    assert [m["type"] for m in raw] == ["init", "message", "message", "result"]
    assert run.session_id and run.session_id == raw[0]["session_id"]
    lines = await output(store, t.id)
    assert lines[0] == f"[gemini] session {run.session_id} · gemini-2.5-flash"
    assert "Hello there." in lines and "All done." in lines
    assert lines[-1].startswith("[gemini] done · 0 tool calls")
    stderr = await output(store, t.id, STDERR)
    assert not any("256-color" in ln or "Ripgrep" in ln for ln in stderr)
    [request] = gemini.turn_requests("zg-hello")
    assert request.model == "gemini-2.5-flash"


async def test_write_file_through_the_cli_tool_in_auto_edit_mode(
    engine: Engine, store: Store, gemini: GeminiServer, project: Path
) -> None:
    target = project / "out.txt"
    gemini.script(
        "zg-write",
        [
            call("write_file", {"file_path": str(target), "content": "hi\n"}, text="Writing."),
            say("Wrote out.txt."),
        ],
    )
    t = gemini_task("write", "zg-write", project, agent={"permission_mode": "acceptEdits"})
    await engine.submit([t])
    await settled(engine, t.id)

    rec = await engine.get(t.id)
    assert rec is not None and rec.state == State.COMPLETED, rec and rec.reason
    assert target.read_text() == "hi\n"
    [run] = await store.runs(t.id)
    assert (run.tokens_in, run.tokens_out) == (200, 40)
    [response] = gemini.turn_requests("zg-write")[-1].function_responses()
    assert response["name"] == "write_file"
    lines = await output(store, t.id)
    assert "Writing." in lines and "→ write_file: out.txt" in lines and "← ok" in lines


async def test_default_mode_does_not_offer_tools_that_need_approval(
    engine: Engine, store: Store, gemini: GeminiServer, project: Path
) -> None:
    target = project / "nope.txt"
    gemini.script(
        "zg-deny",
        [call("write_file", {"file_path": str(target), "content": "x"}), say("Could not.")],
    )
    t = gemini_task("deny", "zg-deny", project, agent={"permission_mode": "default"})
    await engine.submit([t])
    await settled(engine, t.id)

    assert (await stored(engine, t.id)).state == State.COMPLETED
    assert not target.exists()
    [response] = gemini.turn_requests("zg-deny")[-1].function_responses()
    assert "not found" in json.dumps(response)
    lines = await output(store, t.id)
    assert any(ln.startswith('← error: Tool "write_file" not found') for ln in lines)


async def test_api_error_fails_with_the_cli_error_text(
    engine: Engine, store: Store, gemini: GeminiServer, project: Path
) -> None:
    gemini.script("zg-err", [fail(400, "scripted: the request was refused")])
    t = gemini_task("err", "zg-err", project)
    await engine.submit([t])
    await settled(engine, t.id)

    rec = await engine.get(t.id)
    assert rec is not None and rec.state == State.FAILED
    assert "scripted: the request was refused" in rec.reason
    [run] = await store.runs(t.id)
    assert run.exit_code == 144  # the CLI exits with the HTTP status (400 % 256)
    assert "scripted: the request was refused" in run.error
    assert run.session_id
    lines = await output(store, t.id)
    assert any(ln.startswith("[gemini] error: ") for ln in lines)


async def test_retry_resumes_the_same_session(
    engine: Engine, store: Store, gemini: GeminiServer, project: Path
) -> None:
    (project / "seed.txt").write_text("seed\n")
    # The failure comes after a model turn: a session whose only turn failed keeps nothing
    # resumable (the CLI rolls the prompt back), and the next attempt then starts afresh.
    gemini.script(
        "zg-retry",
        [
            call("list_directory", {"dir_path": str(project)}),
            fail(400, "scripted: bad request", once=True, then="Recovered answer."),
        ],
    )
    t = gemini_task(
        "retry", "zg-retry: do the thing", project, retry={"max_attempts": 2, "delay": "0s"}
    )
    await engine.submit([t])
    await settled(engine, t.id)

    rec = await engine.get(t.id)
    assert rec is not None and rec.state == State.COMPLETED, rec and rec.reason
    first, second = await store.runs(t.id)
    assert first.outcome == "FAILED" and "scripted: bad request" in first.error
    assert first.session_id and second.session_id == first.session_id
    last = gemini.turn_requests()[-1]
    history = last.flat_text()
    assert "zg-retry: do the thing" in history  # the earlier conversation came back
    assert any(r["name"] == "list_directory" for r in last.function_responses())
    assert "The previous attempt ended" in history and "Continue the task." in history
    assert "Recovered answer." in await output(store, t.id)


async def test_review_rejection_resumes_with_the_comment(
    engine: Engine, store: Store, gemini: GeminiServer, project: Path
) -> None:
    gemini.script("zg-review", [say("draft one"), say("draft two")])
    t = gemini_task("review", "zg-review", project, review=True)
    await engine.submit([t])
    await wait_state(engine, t.id, State.READY)
    [review] = await engine.questions(t.id)
    assert review.payload["result"] == "draft one"
    await engine.reject(t.id, "shorter please")
    await wait_state(engine, t.id, State.READY)
    [review] = await engine.questions(t.id)
    assert review.payload["result"] == "draft two"
    await engine.accept(t.id)

    first, second = await store.runs(t.id)
    assert second.session_id == first.session_id
    last = gemini.turn_requests()[-1].flat_text()
    assert "A reviewer rejected your result: shorter please. Revise it." in last
    assert "draft one" in last


async def test_budget_exceeded_from_the_price_table(
    engine: Engine, store: Store, gemini: GeminiServer, project: Path
) -> None:
    gemini.script("zg-budget", [say("pricey", input_tokens=1_000_000, output_tokens=1000)])
    t = gemini_task(
        "budget", "zg-budget", project, agent={"model": "gemini-2.5-pro", "max_budget_usd": 0.5}
    )
    await engine.submit([t])
    await settled(engine, t.id)

    rec = await engine.get(t.id)
    assert rec is not None and rec.state == State.BUDGET_EXCEEDED, rec and rec.reason
    assert "budget" in rec.reason and "price table" in rec.reason
    [run] = await store.runs(t.id)
    assert run.tokens_in == 1_000_000
    assert run.cost_usd == pytest.approx(1.25 + 1000 * 10 / 1e6)


async def test_a_session_the_cli_does_not_know_starts_afresh(
    adapter: GeminiAdapter, gemini: GeminiServer, project: Path
) -> None:
    gemini.script("zg-lost", [say("fresh start")])
    gone = "11111111-2222-3333-4444-555555555555"
    previous = RunRecord(
        1, "t", 1, "e", None, None, None, 0.0, 1.0, 1, "FAILED", "boom", 0, 0, 0, gone
    )
    ctx = BareContext(gemini_task("lost", "zg-lost", project), [previous])
    result = await adapter.run(ctx)  # type: ignore[arg-type]
    assert result.outcome == State.COMPLETED and result.result == "fresh start"
    assert result.session_id and result.session_id != gone
    assert ctx.sessions[-1] == result.session_id  # reported as soon as the CLI said it
    assert (2, f"[tui] session {gone} is gone; starting afresh") in ctx.lines
    assert "zg-lost" in gemini.turn_requests()[0].flat_text()


async def test_continue_resumes_the_session_with_the_message(
    engine: Engine, store: Store, gemini: GeminiServer, project: Path
) -> None:
    gemini.script("zg-cont", [say("first answer"), say("second answer")])
    await continued(engine, store, gemini_task("cont", "zg-cont", project), gemini)


async def test_max_turns_stops_the_cli_through_its_own_settings(
    engine: Engine, store: Store, gemini: GeminiServer, project: Path, home: Path
) -> None:
    """`agent.max_turns` reaches gemini as model.maxSessionTurns in the run's own copy of
    settings.json: the real CLI stops at the limit and the attempt fails with its reason;
    the user's settings.json is left as it was."""
    user_settings = (home / ".gemini" / "settings.json").read_text()
    looks = [call("list_directory", {"dir_path": str(project)}) for _ in range(4)]
    gemini.script("zg-turns", [*looks, say("Looked enough.")])
    t = gemini_task("turns", "zg-turns: look around", project, agent={"max_turns": 2})
    await engine.submit([t])
    await settled(engine, t.id)

    rec = await engine.get(t.id)
    assert rec is not None and rec.state == State.FAILED
    assert "Reached max session turns" in rec.reason
    assert len(gemini.turn_requests("zg-turns")) == 2  # the third turn was never asked for
    assert (home / ".gemini" / "settings.json").read_text() == user_settings

    # The same conversation under a higher limit runs to its end.
    gemini.script("zg-turns-ok", [*looks, say("Looked enough.")])
    ok = gemini_task("turns-ok", "zg-turns-ok: look around", project, agent={"max_turns": 10})
    await engine.submit([ok])
    await settled(engine, ok.id)
    done = await engine.get(ok.id)
    assert done is not None and done.state == State.COMPLETED, done and done.reason
    assert "Looked enough." in await output(store, ok.id)
