"""Unit tests of the Gemini adapter's pure parts, on events as the real CLI 0.61.0 prints them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.agents.gemini.conftest import gemini_task
from tui.agents.gemini import NOT_FOUND, GeminiAdapter
from tui.agents.gemini_protocol import (
    PRICES_ENV,
    Price,
    Renderer,
    ResultText,
    build_argv,
    outcome,
    price_for,
    price_table,
    usage_of,
    with_system_append,
)
from tui.engine.adapter import AdapterError
from tui.model.states import State
from tui.model.task import AgentConfig

INIT = {"type": "init", "session_id": "s-1", "model": "gemini-2.5-pro"}
TOOL_USE: dict[str, Any] = {
    "type": "tool_use",
    "tool_name": "write_file",
    "tool_id": "write_file_1",
    "parameters": {"file_path": "/p/out.txt", "content": "hi\n"},
}
STATS = {
    "total_tokens": 255,
    "input_tokens": 210,
    "output_tokens": 45,
    "cached": 0,
    "input": 210,
    "duration_ms": 216,
    "tool_calls": 1,
    "models": {
        "gemini-2.5-flash-lite": {"total_tokens": 15, "input_tokens": 10, "output_tokens": 5},
        "gemini-2.5-pro": {"total_tokens": 240, "input_tokens": 200, "output_tokens": 40},
    },
}


def agent(**kw: object) -> AgentConfig:
    return AgentConfig.model_validate({"type": "gemini", "instructions": "x", **kw})


@pytest.mark.parametrize(
    ("mode", "flag"),
    [
        ("", None),
        ("default", "default"),
        ("acceptEdits", "auto_edit"),
        ("bypassPermissions", "yolo"),
        ("plan", "plan"),
        ("dontAsk", "default"),
    ],
)
def test_argv_approval_mode(mode: str, flag: str | None) -> None:
    argv = build_argv("gemini", agent(permission_mode=mode))
    assert argv[:3] == ["gemini", "--output-format", "stream-json"]
    if flag is None:
        assert "--approval-mode" not in argv
    else:
        assert argv[argv.index("--approval-mode") + 1] == flag


def test_argv_model_tools_resume_and_extra_args() -> None:
    a = agent(
        model="gemini-2.5-pro",
        allowed_tools=["run_shell_command(git)"],
        additional_args=["--debug"],
    )
    argv = build_argv("/bin/gemini", a, resume="abc")
    assert argv == [
        "/bin/gemini",
        "--output-format",
        "stream-json",
        "--model",
        "gemini-2.5-pro",
        "--allowed-tools",
        "run_shell_command(git)",
        "--resume",
        "abc",
        "--debug",
    ]
    assert "-p" not in argv and "x" not in argv  # the prompt goes to stdin


def test_disallowed_tools_are_refused() -> None:
    with pytest.raises(AdapterError, match="disallowed_tools"):
        build_argv("gemini", agent(disallowed_tools=["run_shell_command"]))


def test_system_prompt_append_leads_the_prompt() -> None:
    assert with_system_append("do it", agent()) == "do it"
    text = with_system_append("do it", agent(system_prompt_append="be terse"))
    assert text.startswith("=== Standing instructions ===\nbe terse\n") and text.endswith("do it")


def test_renderer_joins_deltas_into_lines() -> None:
    r = Renderer("/p")
    assert r.render(INIT) == ["[gemini] session s-1 · gemini-2.5-pro"]
    assert r.render({"type": "message", "role": "user", "content": "prompt"}) == []
    assert r.render({"type": "message", "role": "assistant", "content": "Hel", "delta": True}) == []
    assert r.render({"type": "message", "role": "assistant", "content": "lo\nWor"}) == ["Hello"]
    assert r.render(TOOL_USE) == ["Wor", "→ write_file: out.txt"]
    assert r.render({"type": "tool_result", "tool_id": "w", "status": "success"}) == ["← ok"]
    assert r.render({"type": "tool_result", "status": "success", "output": "a\nb\nc"}) == [
        "← 3 lines"
    ]
    err = {
        "type": "tool_result",
        "status": "error",
        "output": 'Tool "write_file" not found.',
        "error": {"type": "tool_not_registered", "message": 'Tool "write_file" not found.'},
    }
    assert r.render(err) == ['← error: Tool "write_file" not found.']
    assert r.render({"type": "error", "severity": "warning", "message": "Loop detected"}) == [
        "[gemini] warning: Loop detected"
    ]
    assert r.render({"type": "message", "role": "assistant", "content": "Bye"}) == []
    assert r.render({"type": "result", "status": "success", "stats": STATS}) == [
        "Bye",
        "[gemini] done · 1 tool calls · 210 tokens in, 45 out",
    ]
    failed = {"type": "result", "status": "error", "error": {"type": "x", "message": "boom"}}
    assert r.render(failed) == ["[gemini] error: boom"]
    assert r.flush() == []


def test_result_text_is_the_final_turn() -> None:
    t = ResultText()
    for msg in [
        {"type": "message", "role": "assistant", "content": "Writing."},
        TOOL_USE,
        {"type": "tool_result", "status": "success"},
        {"type": "message", "role": "assistant", "content": "Wrote "},
        {"type": "message", "role": "assistant", "content": "it."},
    ]:
        t.see(msg)
    assert t.text == "Wrote it."
    only_before = ResultText()
    only_before.see({"type": "message", "role": "assistant", "content": "Said it."})
    only_before.see(TOOL_USE)
    assert only_before.text == "Said it."


def test_usage_prices_each_model() -> None:
    u = usage_of(STATS, price_table())
    assert (u.tokens_in, u.tokens_out) == (210, 45)
    lite = (10 * 0.10 + 5 * 0.40) / 1e6
    pro = (200 * 1.25 + 40 * 10.0) / 1e6
    assert u.cost_usd == pytest.approx(lite + pro)


def test_usage_cached_and_thinking_tokens() -> None:
    stats = {
        "models": {
            "gemini-2.5-pro": {
                "total_tokens": 1500,
                "input_tokens": 1000,
                "cached": 400,
                "output_tokens": 100,  # + 400 thinking tokens only visible in the total
            }
        }
    }
    u = usage_of(stats, price_table())
    assert (u.tokens_in, u.tokens_out) == (1000, 500)
    assert u.cost_usd == pytest.approx((600 * 1.25 + 400 * 0.31 + 500 * 10.0) / 1e6)


def test_price_table_overrides() -> None:
    env = {PRICES_ENV: json.dumps({"gemini-2.5-pro": {"input": 1, "output": 2}, "my-*": [3, 4, 0]})}
    table = price_table({"gemini-2.5-pro": Price(9, 9)}, env)
    assert price_for("gemini-2.5-pro", table) == Price(1, 2)  # env first
    assert price_for("my-model", table) == Price(3, 4, 0)
    assert price_for("gemini-9-ultra", price_table()) == Price(2.0, 12.0, 0.20)  # the fallback
    assert price_for("gemini-3.5-flash-lite", price_table()).input == 0.10
    with pytest.raises(AdapterError, match="not JSON"):
        price_table(env={PRICES_ENV: "{"})
    with pytest.raises(AdapterError, match="needs input and output"):
        price_table(env={PRICES_ENV: '{"x": {"input": 1}}'})


def _fail(code: int, line: dict | None = None, errors: list[str] | None = None) -> str:
    out = outcome(code, line, "", errors or [], ["last stderr line"], price_table())
    assert out.state == State.FAILED
    return out.error


def test_outcome_exit_codes() -> None:
    ok = outcome(
        0, {"type": "result", "status": "success", "stats": STATS}, "Done.", [], [], price_table()
    )
    assert ok.state == State.COMPLETED and ok.result == "Done." and ok.usage.tokens_in == 210
    assert _fail(42) == "gemini exited with code 42 (input error): last stderr line"
    turn = {
        "status": "error",
        "error": {"type": "FatalTurnLimitedError", "message": "Reached max session turns"},
    }
    assert (
        _fail(53, turn)
        == "gemini exited with code 53 (turn limit reached): Reached max session turns"
    )
    assert _fail(1, None, ["stream broke"]) == "gemini exited with code 1 (error): stream broke"
    assert _fail(144, {"status": "error", "error": {"message": "[API Error: 400]"}}).endswith(
        "code 144: [API Error: 400]"
    )
    assert _fail(-9).startswith("gemini was killed by SIGKILL")
    assert _fail(0, {"status": "error", "error": {"message": "empty"}}) == (
        "gemini reported an error: empty"
    )


def test_outcome_budget() -> None:
    line = {"status": "success", "stats": STATS}
    out = outcome(0, line, "Done.", [], [], price_table(), max_budget=0.0004, spent=0.0002)
    assert out.state == State.BUDGET_EXCEEDED
    assert "earlier attempts $0.0002" in out.error and "price table" in out.error


async def test_missing_binary_is_an_adapter_error(tmp_path: Path) -> None:
    a = GeminiAdapter(bin=str(tmp_path / "nope"))
    with pytest.raises(AdapterError, match="gemini CLI not found"):
        a.binary({})
    with pytest.raises(AdapterError) as e:
        GeminiAdapter().binary({"PATH": str(tmp_path)})
    assert str(e.value) == NOT_FOUND


def test_task_helper_builds_a_gemini_task(tmp_path: Path) -> None:
    assert gemini_task("t", "x", tmp_path).agent.type == "gemini"
