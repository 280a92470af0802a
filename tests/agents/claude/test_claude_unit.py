"""Unit tests of the Claude adapter's pure parts, on lines captured from the real CLI 2.1.328
(reference_lines.jsonl, copied from the protocol reference: transcripts allow/deny/budget/plan)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.agents.claude.conftest import claude_task
from tests.conftest import stored, wait_state
from tui.agents.claude import NOT_FOUND, ClaudeAdapter
from tui.agents.claude_protocol import (
    answer_approval,
    answer_question,
    build_argv,
    describe_tool,
    first_prompt,
    latest_session,
    parse_result,
    plans_first,
    read_context_files,
    render,
    resume_prompt,
)
from tui.agents.shell import ShellAdapter
from tui.engine.adapter import Adapter, AdapterError
from tui.engine.scheduler import Engine
from tui.model.states import State
from tui.model.task import AgentConfig
from tui.store.db import Store
from tui.store.records import QuestionRecord, RunRecord

HERE = Path(__file__).parent


def reference(transcript: str) -> list[dict[str, Any]]:
    rows = [json.loads(ln) for ln in (HERE / "reference_lines.jsonl").read_text().splitlines()]
    return [json.loads(r["line"]) for r in rows if r["transcript"] == transcript]


def agent(**fields: Any) -> AgentConfig:
    return AgentConfig.model_validate({"type": "claude", "instructions": "do it", **fields})


def run_record(outcome: str, error: str = "", session: str = "") -> RunRecord:
    return RunRecord(
        1, "t", 1, "e", None, None, None, 0.0, 1.0, 0, outcome, error, 0, 0, 0, session
    )


# -- argv ----------------------------------------------------------------------------------


def test_argv_minimal_is_the_two_way_stream_json_channel() -> None:
    assert build_argv("claude", agent()) == [
        "claude",
        "--output-format",
        "stream-json",
        "--verbose",
        "--input-format",
        "stream-json",
        "--permission-prompt-tool",
        "stdio",
    ]


def test_argv_maps_every_agent_field_to_separate_items() -> None:
    a = agent(
        model="opus",
        permission_mode="acceptEdits",
        allowed_tools=["Bash(git:*)", "Read"],
        disallowed_tools=["WebFetch"],
        system_prompt_append="Be brief; use 'quotes'",
        max_budget_usd=1.5,
        max_turns=7,
        additional_args=["--mcp-config", "mcp.json"],
    )
    argv = build_argv("/x/claude", a, resume="sess-1")
    tail = argv[8:]
    assert tail == [
        "--model",
        "opus",
        "--permission-mode",
        "acceptEdits",
        "--allowedTools",
        "Bash(git:*)",
        "Read",
        "--disallowedTools",
        "WebFetch",
        "--append-system-prompt",
        "Be brief; use 'quotes'",
        "--max-budget-usd",
        "1.5",
        "--max-turns",
        "7",
        "--resume",
        "sess-1",
        "--mcp-config",
        "mcp.json",
    ]


def test_plan_mode_replaces_the_configured_mode_for_the_first_attempt() -> None:
    a = agent(permission_mode="acceptEdits")
    assert plans_first(a, resuming=False)
    argv = build_argv("claude", a, plan=True)
    assert argv[argv.index("--permission-mode") + 1] == "plan"
    assert argv.count("--permission-mode") == 1
    assert not plans_first(a, resuming=True)
    assert not plans_first(agent(skip_planning=True), resuming=False)
    assert not plans_first(agent(permission_mode="bypassPermissions"), resuming=False)
    assert build_argv("claude", agent(max_budget_usd=0.0001))[-1] == "0.0001"


# -- prompts -------------------------------------------------------------------------------


def test_context_files_come_first_with_a_header_each(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("alpha")
    (tmp_path / "b.txt").write_text("beta\n")
    files = read_context_files(agent(context_files=["docs/a.md", "b.txt"]), str(tmp_path))
    prompt = first_prompt("Do the thing.", files)
    assert prompt == (
        "=== Context file: docs/a.md ===\nalpha\n=== End of docs/a.md ===\n\n"
        "=== Context file: b.txt ===\nbeta\n=== End of b.txt ===\n\n"
        "=== Instructions ===\n\nDo the thing."
    )
    assert first_prompt("Just this.", []) == "Just this."


def test_a_missing_context_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(AdapterError, match=r"context file 'nope.md' not found"):
        read_context_files(agent(context_files=["nope.md"]), str(tmp_path))


def test_resume_prompts_say_what_happened() -> None:
    failed = [run_record("FAILED", "claude was killed by SIGKILL before it finished", "s1")]
    assert latest_session([*failed, run_record("FAILED")]) == "s1"
    assert resume_prompt(failed, "", []) == (
        "The previous attempt ended: failed (claude was killed by SIGKILL before it finished)."
        " Continue the task."
    )
    timed_out = [run_record("TIMED_OUT", "timed out after 5m", "s1")]
    assert resume_prompt(timed_out, "", []).startswith("The previous attempt ended: timed out")
    reviewed = [run_record("COMPLETED", "", "s1")]
    assert resume_prompt(reviewed, "shorter", []) == (
        "A reviewer rejected your result: shorter. Revise it."
    )
    late = QuestionRecord(
        "q", "t", 1, "question", {}, "answered", {"answers": {"Which DB?": ["a", "b"]}}, 0, 2
    )
    assert resume_prompt(failed[:0], "", [late]) == (
        "While you were stopped, the user answered: Which DB? → a, b"
    )
    approval = QuestionRecord(
        "q2",
        "t",
        1,
        "approval",
        {"tool": "Bash", "summary": "make"},
        "answered",
        {"behavior": "deny", "message": "not now"},
        0,
        2,
    )
    assert resume_prompt(failed, "", [approval]).endswith(
        "While you were stopped, the user answered: may you use Bash (make)? → deny: not now"
    )


# -- answers -------------------------------------------------------------------------------


def test_question_answers_become_updated_input() -> None:
    tool_input = {"questions": [{"question": "Q1?"}, {"question": "Q2?"}]}
    out = answer_question(tool_input, {"answers": {"Q1?": ["x", "y"], "Q2?": "free text"}})
    assert out == {
        "behavior": "allow",
        "updatedInput": {**tool_input, "answers": {"Q1?": "x, y", "Q2?": "free text"}},
    }
    assert answer_question(tool_input, None)["behavior"] == "deny"


def test_approval_answers() -> None:
    suggestions = [
        {"type": "addRules", "rules": [{"toolName": "Bash"}], "destination": "localSettings"}
    ]
    assert answer_approval({"c": 1}, suggestions, {"behavior": "allow"}) == {
        "behavior": "allow",
        "updatedInput": {"c": 1},
    }
    always = answer_approval({"c": 1}, suggestions, {"behavior": "allow_always"})
    assert always["updatedPermissions"] == [{**suggestions[0], "destination": "session"}]
    assert answer_approval({}, [], {"behavior": "deny", "message": "no"}) == {
        "behavior": "deny",
        "message": "no",
    }
    assert answer_approval({}, [], None)["behavior"] == "deny"


def test_approval_summaries(tmp_path: Path) -> None:
    cwd = str(tmp_path)
    assert describe_tool("Bash", {"command": "ls -la\necho hi"}, cwd) == (
        "ls -la",
        "ls -la\necho hi",
    )
    assert describe_tool("Write", {"file_path": f"{cwd}/a/b.py", "content": "x=1\n"}, cwd) == (
        "a/b.py",
        "a/b.py\n\nx=1\n",
    )
    summary, diff = describe_tool(
        "Edit", {"file_path": f"{cwd}/m.py", "old_string": "a = 1\n", "new_string": "a = 2\n"}, cwd
    )
    assert summary == "m.py"
    assert diff == "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-a = 1\n+a = 2\n"
    assert describe_tool("ExitPlanMode", {"plan": "1. x"}, cwd) == ("plan", "1. x")
    summary, detail = describe_tool("mcp__db__query", {"sql": "select 1"}, cwd)
    assert summary == '{"sql": "select 1"}' and json.loads(detail) == {"sql": "select 1"}


# -- result lines --------------------------------------------------------------------------


def test_result_success_from_the_reference() -> None:
    out = parse_result(reference("allow")[-1])
    assert out.state == State.COMPLETED and out.result == "Done: wrote choice.txt."
    assert out.cost_usd == pytest.approx(0.0024)
    assert (out.tokens_in, out.tokens_out) == (300, 60)
    assert out.session_id == "b8983653-2686-458b-bbd9-70acd06c7556"


def test_result_budget_from_the_reference() -> None:
    out = parse_result(reference("budget")[-1])
    assert out.state == State.BUDGET_EXCEEDED
    assert out.error == "Reached maximum budget ($0.001)"
    assert out.cost_usd == pytest.approx(0.0016) and out.tokens_in == 200


def test_result_over_the_task_budget_counting_earlier_runs() -> None:
    line = reference("allow")[-1]
    assert parse_result(line, max_budget=0.003, spent=0.0).state == State.COMPLETED
    over = parse_result(line, max_budget=0.003, spent=0.001)
    assert over.state == State.BUDGET_EXCEEDED and "$0.0034 of a $0.003 budget" in over.error


def test_result_errors_and_resumed_session_costs() -> None:
    err = {
        "type": "result",
        "subtype": "error_during_execution",
        "is_error": True,
        "errors": ["API Error: 500"],
        "session_id": "s",
    }
    out = parse_result(err)
    assert out.state == State.FAILED and out.error == "claude: API Error: 500"
    # A resumed session's total_cost_usd includes earlier runs: only this run's share counts.
    resumed = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": "two",
        "total_cost_usd": 0.0041,
        "usage": {"input_tokens": 100, "output_tokens": 20},
        "model_usage_since_last_result": {
            "m": {
                "inputTokens": 100,
                "outputTokens": 20,
                "cacheReadInputTokens": 5000,
                "cacheCreationInputTokens": 300,
                "costUSD": 0.0008,
            }
        },
    }
    out = parse_result(resumed)
    assert out.cost_usd == pytest.approx(0.0008) and out.tokens_in == 5400


# -- readable lines ------------------------------------------------------------------------


def test_readable_lines_of_the_allow_transcript() -> None:
    lines = [ln for msg in reference("allow") for ln in render(msg, "<project_dir>")]
    assert lines == [
        "[claude] session b8983653-2686-458b-bbd9-70acd06c7556 · claude-opus-5-5 · mode default",
        "I need to know which database to use.",
        "→ AskUserQuestion: Which database should the service use?",
        "[claude] waiting for an answer",
        '← Your questions have been answered: "Which database should the service use?"='
        '"SQLite". You can now continue with these answers in mind.',
        "→ Write: <project_dir>/choice.txt",
        "[claude] waiting for approval: Write",
        "← The file <project_dir>/choice.txt has been updated successfully. (file state is "
        "current in your context — no need to Read it back)",
        "Done: wrote choice.txt.",
        "[claude] done · 3 turns · session total $0.0024",
    ]


def test_readable_lines_of_errors_plans_and_long_results() -> None:
    deny = [ln for msg in reference("deny") for ln in render(msg)]
    assert "← error: The user refused this." in deny
    budget = [ln for msg in reference("budget") for ln in render(msg)]
    assert budget[-1] == "[claude] error: Reached maximum budget ($0.001)"
    plan = [ln for msg in reference("plan") for ln in render(msg)]
    assert "→ ExitPlanMode: plan ready for approval" in plan
    assert "[claude] permission mode is now default" in plan
    long = {
        "type": "user",
        "message": {
            "content": [
                {"type": "tool_result", "content": "a\nb\nc\n"},
                {"type": "tool_result", "content": [{"type": "text", "text": "x" * 500}]},
            ]
        },
    }
    assert render(long) == ["← 3 lines", "← " + "x" * 199 + "…"]
    assert render(
        {
            "type": "assistant",
            "message": {
                "content": [{"type": "tool_use", "name": "Bash", "input": {"command": "ls -la"}}]
            },
        }
    ) == ["→ Bash: ls -la"]
    assert render({"type": "stream_event"}) == []


# -- the adapter without a CLI -------------------------------------------------------------


async def test_missing_binary_and_missing_context_file_fail_clearly(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TUI_CLAUDE_BIN", raising=False)
    adapters: dict[str, Adapter] = {
        "claude": ClaudeAdapter(bin="no-such-claude-binary"),
        "shell": ShellAdapter(),
    }
    with pytest.raises(AdapterError, match="claude CLI not found"):
        ClaudeAdapter(bin="no-such-claude-binary").binary({"PATH": str(tmp_path)})
    async with Engine(store, adapters=adapters) as engine:
        t = claude_task("nobin", "x", tmp_path)
        await engine.submit([t])
        await wait_state(engine, t.id, State.FAILED)
        assert (await stored(engine, t.id)).reason.startswith(NOT_FOUND)

    monkeypatch.setenv("TUI_CLAUDE_BIN", "/bin/true")  # the override wins over bin
    store2 = await Store.open(tmp_path / "second.db")
    try:
        async with Engine(store2, adapters=adapters) as engine:
            t = claude_task("nofile", "x", tmp_path, agent={"context_files": ["gone.md"]})
            await engine.submit([t])
            await wait_state(engine, t.id, State.FAILED)
            rec = await engine.get(t.id)
            assert rec is not None and "context file 'gone.md' not found" in rec.reason
            [run] = await store2.runs(t.id)
            assert run.pid is None  # nothing was started
    finally:
        await store2.close()
