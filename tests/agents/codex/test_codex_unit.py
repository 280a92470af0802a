"""Unit tests of the Codex adapter's pure parts, on events as the real CLI 0.169.0 prints them."""

from __future__ import annotations

from typing import Any

import pytest

from tui.agents.codex_protocol import (
    BYPASS,
    DEFAULT_PRICES,
    MAX_ARG_PROMPT,
    PRICES_ENV,
    Renderer,
    Tally,
    Usage,
    build_argv,
    earlier_usage,
    error_text,
    is_noise,
    outcome,
    see,
)
from tui.agents.gemini_protocol import Price, price_for, price_table
from tui.engine.adapter import AdapterError
from tui.model.states import State
from tui.model.task import AgentConfig
from tui.store.records import RunRecord

CMD_STARTED = {
    "type": "item.started",
    "item": {
        "id": "item_1",
        "type": "command_execution",
        "command": "/bin/bash -lc 'ls'",
        "aggregated_output": "",
        "exit_code": None,
        "status": "in_progress",
    },
}
CMD_DONE: dict[str, Any] = {
    "type": "item.completed",
    "item": {
        "id": "item_1",
        "type": "command_execution",
        "command": "/bin/bash -lc 'ls'",
        "aggregated_output": "a\nb\n",
        "exit_code": 0,
        "status": "completed",
    },
}
API_ERROR = '{"error": {"message": "scripted refusal", "type": "invalid_request_error"}}'


def agent(**kw: object) -> AgentConfig:
    return AgentConfig.model_validate({"type": "codex", "instructions": "x", **kw})


@pytest.mark.parametrize(
    ("mode", "expect"),
    [
        ("", ["-c", 'sandbox_mode="workspace-write"']),
        ("default", ["-c", 'sandbox_mode="workspace-write"']),
        ("acceptEdits", ["-c", 'sandbox_mode="workspace-write"']),
        ("plan", ["-c", 'sandbox_mode="read-only"']),
        ("bypassPermissions", [BYPASS]),
    ],
)
def test_argv_sandbox(mode: str, expect: list[str]) -> None:
    argv, stdin = build_argv("codex", agent(permission_mode=mode), "-do it")
    assert argv == ["codex", "exec", "--json", "--skip-git-repo-check", *expect, "--", "-do it"]
    assert stdin is None


def test_argv_resume_model_and_extra_args() -> None:
    a = agent(model="gpt-5", additional_args=["-c", "x=1"])
    argv, _ = build_argv("codex", a, "go on", resume="tid")
    assert argv == [
        "codex",
        "exec",
        "resume",
        "--json",
        "--skip-git-repo-check",
        "-m",
        "gpt-5",
        "-c",
        'sandbox_mode="workspace-write"',
        "-c",
        "x=1",
        "tid",
        "--",
        "go on",
    ]


def test_long_prompt_goes_to_stdin() -> None:
    prompt = "x" * (MAX_ARG_PROMPT + 1)
    argv, stdin = build_argv("codex", agent(), prompt)
    assert argv[-1] == "-" and stdin == prompt.encode()


def test_tool_lists_are_refused() -> None:
    with pytest.raises(AdapterError, match="allow/deny"):
        build_argv("codex", agent(disallowed_tools=["shell"]), "p")


def test_renderer() -> None:
    r = Renderer()
    assert r.render({"type": "thread.started", "thread_id": "t1"}) == ["[codex] thread t1"]
    assert r.render({"type": "turn.started"}) == []
    assert r.render(CMD_STARTED) == ["→ shell: /bin/bash -lc 'ls'"]
    assert r.render(CMD_DONE) == ["← 2 lines"]
    failed = {**CMD_DONE["item"], "id": "item_2", "exit_code": 1, "aggregated_output": "denied\n"}
    assert r.render({"type": "item.completed", "item": failed}) == [
        "→ shell: /bin/bash -lc 'ls'",
        "← exit 1: denied",
    ]
    msg = {"type": "item.completed", "item": {"type": "agent_message", "text": "one\ntwo"}}
    assert r.render(msg) == ["one", "two"]
    change = {
        "type": "file_change",
        "changes": [{"path": "a.py", "kind": "add"}],
        "status": "completed",
    }
    assert r.render({"type": "item.completed", "item": change}) == ["→ edit: add a.py", "← applied"]
    warn = {"type": "item.completed", "item": {"type": "error", "message": "Model metadata"}}
    assert r.render(warn) == ["[codex] warning: Model metadata"]
    assert r.render({"type": "error", "message": API_ERROR}) == ["[codex] error: scripted refusal"]
    assert r.render({"type": "turn.failed", "error": {"message": API_ERROR}}) == [
        "[codex] failed: scripted refusal"
    ]
    done = {
        "type": "turn.completed",
        "usage": {"input_tokens": 200, "cached_input_tokens": 50, "output_tokens": 40},
    }
    assert r.render(done) == ["[codex] done · thread total 200 tokens in (50 cached), 40 out"]


def _tally(*msgs: dict) -> Tally:
    t = Tally()
    for m in msgs:
        see(t, m)
    return t


PRICE = Price(1.25, 10.0, 0.125)
COMPLETED = {
    "type": "turn.completed",
    "usage": {"input_tokens": 300, "cached_input_tokens": 100, "output_tokens": 60},
}


def test_outcome_success_counts_this_runs_share() -> None:
    t = _tally(
        {"type": "thread.started", "thread_id": "t"},
        {"type": "item.completed", "item": {"type": "agent_message", "text": "Done."}},
        COMPLETED,
    )
    out = outcome(0, t, [], PRICE, earlier=(100, 20))
    assert (out.state, out.result, out.tokens_in, out.tokens_out) == (
        State.COMPLETED,
        "Done.",
        200,
        40,
    )
    assert out.cost_usd == pytest.approx((100 * 1.25 + 100 * 0.125 + 40 * 10) / 1e6)


def test_outcome_failures() -> None:
    t = _tally(
        {"type": "error", "message": API_ERROR},
        {"type": "turn.failed", "error": {"message": API_ERROR}},
    )
    assert outcome(1, t, [], PRICE).error == "codex turn failed: scripted refusal"
    assert (
        outcome(1, Tally(), ["Error: boom"], PRICE).error == "codex exited with code 1: Error: boom"
    )
    assert outcome(-9, Tally(), [], PRICE).error == "codex was killed by SIGKILL"


def test_outcome_budget() -> None:
    out = outcome(0, _tally(COMPLETED), [], PRICE, max_budget=0.0001)
    assert out.state == State.BUDGET_EXCEEDED and "price table" in out.error


def test_earlier_usage_only_counts_the_thread() -> None:
    def run(sid: str, tin: int) -> RunRecord:
        return RunRecord(1, "t", 1, "e", None, None, None, 0, 1, 0, "COMPLETED", "", 0, tin, 5, sid)

    assert earlier_usage([run("a", 10), run("b", 100), run("a", 20)], "a") == (30, 10)


def test_prices_and_noise() -> None:
    table = price_table(
        env={PRICES_ENV: '{"gpt-5": [1, 2]}'}, env_name=PRICES_ENV, defaults=DEFAULT_PRICES
    )
    assert price_for("gpt-5", table) == Price(1, 2)
    assert price_for("gpt-5-mini", table).input == 0.25
    assert price_for("", table) == DEFAULT_PRICES[-1][1]
    assert is_noise("Reading additional input from stdin...")
    assert is_noise("  12: <unknown>") and not is_noise("real trouble")
    assert error_text("plain") == "plain" and Usage.of({}) == Usage()
