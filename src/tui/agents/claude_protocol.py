"""Pure pieces of the Claude Code adapter: argv, prompts, protocol messages, readable lines.

Nothing here starts a process, so all of it is unit-tested on lines captured from the real CLI
(see docs/claude.md for the protocol as observed on claude-code 2.1.328).
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tui.agents.cli_process import field_object
from tui.engine.adapter import AdapterError, RunContext, RunResult
from tui.model.states import State
from tui.model.task import AgentConfig, PermissionMode
from tui.store.records import STDERR, QuestionRecord, RunRecord

BASE_ARGS = (
    "--output-format",
    "stream-json",
    "--verbose",
    "--input-format",
    "stream-json",
    "--permission-prompt-tool",
    "stdio",
)
SHORT = 200  # characters of a tool result or input shown in the readable log
SUMMARY = 120  # characters of an approval summary
QUESTION_TOOL = "AskUserQuestion"
PLAN_TOOL = "ExitPlanMode"


# -- argv ----------------------------------------------------------------------------------


def plans_first(agent: AgentConfig, resuming: bool) -> bool:
    """Whether this attempt starts in plan mode and waits for an approved plan.

    A resumed session already went through planning (its history holds the plan), and
    ``bypassPermissions`` means the task's author wants nothing gated, so neither plans again.
    """
    if agent.skip_planning or resuming:
        return False
    return agent.permission_mode not in (PermissionMode.BYPASS, PermissionMode.DONT_ASK)


def build_argv(
    binary: str,
    agent: AgentConfig,
    *,
    resume: str = "",
    plan: bool = False,
    mcp_config: str = "",
    mcp_tools: str = "",
) -> list[str]:
    """``mcp_config``: JSON for --mcp-config (tui's MCP server); ``mcp_tools``: the
    --allowedTools rule that lets the model use its tools without asking."""
    argv = [binary, *BASE_ARGS]
    if agent.model:
        argv += ["--model", agent.model]
    mode = PermissionMode.PLAN.value if plan else agent.permission_mode.value
    if mode:
        argv += ["--permission-mode", mode]
    allowed = [*agent.allowed_tools, *([mcp_tools] if mcp_tools else [])]
    if allowed:
        argv += ["--allowedTools", *allowed]
    if agent.disallowed_tools:
        argv += ["--disallowedTools", *agent.disallowed_tools]
    if agent.system_prompt_append:
        argv += ["--append-system-prompt", agent.system_prompt_append]
    if agent.max_budget_usd > 0:
        argv += ["--max-budget-usd", _money(agent.max_budget_usd)]
    if agent.max_turns:
        argv += ["--max-turns", str(agent.max_turns)]
    if mcp_config:
        argv += ["--mcp-config", mcp_config]
    if resume:
        argv += ["--resume", resume]
    argv += list(agent.additional_args)
    return argv


def _money(value: float) -> str:
    text = f"{value:.6f}".rstrip("0").rstrip(".")
    return text or "0"


# -- prompts -------------------------------------------------------------------------------


def read_context_files(agent: AgentConfig, cwd: str | None) -> list[tuple[str, str]]:
    """(name relative to the project, text) of every context file; a missing one is an error."""
    base = cwd or os.getcwd()
    out: list[tuple[str, str]] = []
    for name in agent.context_files:
        path = os.path.join(base, os.path.expanduser(name))
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except FileNotFoundError:
            raise AdapterError(f"context file {name!r} not found (looked in {base})") from None
        except IsADirectoryError:
            raise AdapterError(f"context file {name!r} is a directory, not a file") from None
        except OSError as e:
            raise AdapterError(f"cannot read context file {name!r}: {e.strerror}") from None
        rel = os.path.relpath(os.path.abspath(path), os.path.abspath(base))
        out.append((rel if not rel.startswith("..") else os.path.abspath(path), text))
    return out


def first_prompt(instructions: str, files: Sequence[tuple[str, str]]) -> str:
    parts = []
    for name, text in files:
        body = text if text.endswith("\n") else text + "\n"
        parts.append(f"=== Context file: {name} ===\n{body}=== End of {name} ===\n")
    if parts:
        parts.append("=== Instructions ===\n")
    parts.append(instructions)
    return "\n".join(parts) if len(parts) > 1 else instructions


def latest_session(previous_runs: Sequence[RunRecord]) -> str:
    for run in reversed(previous_runs):
        if run.session_id:
            return run.session_id
    return ""


def resume_prompt(
    previous_runs: Sequence[RunRecord],
    rejection_comment: str,
    late_answers: Sequence[QuestionRecord],
) -> str:
    """What to tell a resumed session about why it runs again."""
    parts: list[str] = []
    last = previous_runs[-1] if previous_runs else None
    if last is not None and last.outcome == State.COMPLETED.value and rejection_comment.strip():
        parts.append(f"A reviewer rejected your result: {rejection_comment.strip()}. Revise it.")
    elif last is not None and last.outcome != State.COMPLETED.value:
        outcome = (last.outcome or "interrupted").lower().replace("_", " ")
        what = last.error or outcome
        if last.error and outcome not in last.error.lower():
            what = f"{outcome} ({last.error})"
        parts.append(f"The previous attempt ended: {what}. Continue the task.")
    said = [str((q.answer or {}).get("text", "")) for q in late_answers if q.kind == "message"]
    if said:  # `tui continue`: the person's words are the new turn
        return "\n\n".join([*parts, *said])
    for q in late_answers:
        for question, answer in _answer_pairs(q):
            parts.append(f"While you were stopped, the user answered: {question} → {answer}")
    if not parts:
        parts.append("Continue the task.")
    return "\n".join(parts)


async def resume_or_afresh(
    ctx: RunContext,
    resume: Callable[[str, str], Awaitable[RunResult | None]],
    afresh: Callable[[], Awaitable[RunResult]],
) -> RunResult:
    """A new attempt resumes the latest session, told why it runs again (``resume(session,
    prompt)``); when the CLI no longer has that session (``resume`` returns None) it says so on
    stderr and starts afresh."""
    session = latest_session(ctx.previous_runs)
    if session:
        prompt = resume_prompt(ctx.previous_runs, ctx.rejection_comment, ctx.late_answers)
        result = await resume(session, prompt)
        if result is not None:
            return result
        await ctx.output(STDERR, [f"[tui] session {session} is gone; starting afresh"])
    return await afresh()


def _answer_pairs(q: QuestionRecord) -> list[tuple[str, str]]:
    answer = q.answer or {}
    if isinstance(answer.get("answers"), dict):
        return [(k, _answer_text(v)) for k, v in answer["answers"].items()]
    if q.kind == "approval":
        tool = str(q.payload.get("tool") or "a tool")
        summary = str(q.payload.get("summary") or "")
        verdict = str(answer.get("behavior") or "no decision").replace("_", " ")
        if answer.get("message"):
            verdict = f"{verdict}: {answer['message']}"
        return [
            (f"may you use {tool} ({summary})?" if summary else f"may you use {tool}?", verdict)
        ]
    return [(q.kind, json.dumps(answer, ensure_ascii=False))]


def _answer_text(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


def user_message(text: str) -> dict[str, Any]:
    return {
        "type": "user",
        "message": {"role": "user", "content": text},
        "parent_tool_use_id": None,
        "session_id": "",
    }


# -- control responses ---------------------------------------------------------------------


def control_response(request_id: str, response: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "control_response",
        "response": {"subtype": "success", "request_id": request_id, "response": response},
    }


def control_error(request_id: str, error: str) -> dict[str, Any]:
    return {
        "type": "control_response",
        "response": {"subtype": "error", "request_id": request_id, "error": error},
    }


def allow(tool_input: dict[str, Any], permissions: list[dict[str, Any]] | None = None) -> dict:
    out: dict[str, Any] = {"behavior": "allow", "updatedInput": tool_input}
    if permissions:
        out["updatedPermissions"] = permissions
    return out


def deny(message: str) -> dict[str, Any]:
    return {"behavior": "deny", "message": message}


def question_payload(tool_input: dict[str, Any]) -> dict[str, Any]:
    """QuestionJSON for an AskUserQuestion call: the tool's own questions, as the CLI sent them."""
    return {"questions": list(tool_input.get("questions") or [])}


def answer_question(tool_input: dict[str, Any], answer: dict[str, Any] | None) -> dict:
    """The control response for an AskUserQuestion given the person's answer (None = expired).

    The CLI wants ``updatedInput`` = the original input plus ``answers`` mapping each question
    text to one string; several labels of a multiSelect question are joined with ", " (the CLI
    renders a JSON list as "a,b" and calls it a free-form answer).
    """
    if answer is None:
        return deny(
            "Nobody answered in time. Choose the most reasonable option yourself, say which "
            "one you chose and why, and continue."
        )
    answers = answer.get("answers")
    if not isinstance(answers, dict) or not answers:
        return deny(str(answer.get("message") or "The user declined to answer."))
    return allow({**tool_input, "answers": {str(k): _answer_text(v) for k, v in answers.items()}})


def answer_approval(
    tool_input: dict[str, Any], suggestions: list[dict[str, Any]], answer: dict[str, Any] | None
) -> dict[str, Any]:
    """allow | allow_always | deny (+ message) → the CLI's permission result."""
    if answer is None:
        return deny("Nobody approved this in time, so it was not done. Do not retry it.")
    behavior = str(answer.get("behavior") or "")
    if not behavior and isinstance(answer.get("accept"), bool):
        behavior = "allow" if answer["accept"] else "deny"
    if behavior == "allow":
        return allow(tool_input)
    if behavior == "allow_always":
        return allow(tool_input, session_permissions(suggestions))
    message = str(answer.get("message") or answer.get("comment") or "").strip()
    return deny(message or "The user refused this.")


def session_permissions(suggestions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The CLI's permission suggestions, kept to this session: never written into the
    project's .claude/settings.local.json (the CLI suggests ``localSettings`` for Bash)."""
    return [{**s, "destination": "session"} for s in suggestions if isinstance(s, dict)]


def approval_payload(
    tool: str, tool_input: dict[str, Any], suggestions: list[dict[str, Any]], cwd: str | None
) -> dict[str, Any]:
    summary, detail = describe_tool(tool, tool_input, cwd)
    return {
        "tool": tool,
        "input": tool_input,
        "summary": summary,
        "detail": detail,
        "suggestions": suggestions,
    }


def describe_tool(tool: str, tool_input: dict[str, Any], cwd: str | None) -> tuple[str, str]:
    """(short human summary, full detail) of a tool call a person is asked to approve."""
    path = _rel(str(tool_input.get("file_path") or tool_input.get("notebook_path") or ""), cwd)
    if tool == PLAN_TOOL:
        return "plan", str(tool_input.get("plan") or "")
    if tool == "Bash":
        command = str(tool_input.get("command") or "")
        detail = command
        if tool_input.get("description"):
            detail = f"{command}\n\n# {tool_input['description']}"
        return _clip(command.splitlines()[0] if command else "", SUMMARY), detail
    if tool == "Write":
        return path, f"{path}\n\n{tool_input.get('content') or ''}"
    if tool == "Edit":
        return path, _diff(path, tool_input.get("old_string"), tool_input.get("new_string"))
    if tool == "MultiEdit":
        edits = tool_input.get("edits") or []
        diffs = [_diff(path, e.get("old_string"), e.get("new_string")) for e in edits]
        return path, "\n".join(diffs)
    if path:
        return path, f"{path}\n\n{json.dumps(tool_input, indent=2, ensure_ascii=False)}"
    short = short_input(tool, tool_input)
    return _clip(short or tool, SUMMARY), json.dumps(tool_input, indent=2, ensure_ascii=False)


def _diff(path: str, old: Any, new: Any) -> str:
    a = str(old or "").splitlines(keepends=True)
    b = str(new or "").splitlines(keepends=True)
    lines = difflib.unified_diff(a, b, f"a/{path}", f"b/{path}")
    return "".join(ln if ln.endswith("\n") else ln + "\n" for ln in lines)


def _rel(path: str, cwd: str | None) -> str:
    if path and cwd and os.path.isabs(path):
        rel = os.path.relpath(path, cwd)
        if not rel.startswith(".."):
            return rel
    return path


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


# -- the result line -----------------------------------------------------------------------


@dataclass
class Outcome:
    state: State
    error: str = ""
    result: str | None = None
    cost_usd: float = 0.0
    tokens_in: int = 0
    tokens_out: int = 0
    session_id: str = ""


def parse_result(line: dict[str, Any], max_budget: float = 0.0, spent: float = 0.0) -> Outcome:
    """The attempt's outcome from the CLI's ``result`` line.

    ``total_cost_usd`` and ``modelUsage`` add up the whole session, earlier (resumed) runs
    included, so this run's share comes from ``model_usage_since_last_result`` when present.
    Input tokens count cache reads and cache writes too: they are all prompt the model read.
    """
    cost, tokens_in, tokens_out = _run_usage(line)
    subtype = str(line.get("subtype") or "")
    errors = line.get("errors") or []
    error_text = "; ".join(str(e) for e in errors) if isinstance(errors, list) else str(errors)
    out = Outcome(
        State.COMPLETED,
        cost_usd=cost,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        session_id=str(line.get("session_id") or ""),
    )
    if subtype == "error_max_budget_usd":
        out.state = State.BUDGET_EXCEEDED
        out.error = error_text or "reached the maximum budget"
    elif subtype != "success" or line.get("is_error"):
        out.state = State.FAILED
        text = error_text or str(line.get("result") or "")
        out.error = f"claude: {text or subtype or 'error'}"
    else:
        out.result = str(line.get("result") or "")
    if out.state != State.BUDGET_EXCEEDED and max_budget > 0 and spent + cost > max_budget:
        out.state = State.BUDGET_EXCEEDED
        out.error = f"spent ${spent + cost:.4f} of a ${max_budget:g} budget" + (
            f" (earlier attempts ${spent:.4f})" if spent else ""
        )
    return out


def _run_usage(line: dict[str, Any]) -> tuple[float, int, int]:
    per_model = line.get("model_usage_since_last_result")
    if isinstance(per_model, dict) and per_model:
        cost, tin, tout = 0.0, 0, 0
        for u in per_model.values():
            if not isinstance(u, dict):
                continue
            cost += float(u.get("costUSD") or 0)
            tin += int(u.get("inputTokens") or 0)
            tin += int(u.get("cacheReadInputTokens") or 0)
            tin += int(u.get("cacheCreationInputTokens") or 0)
            tout += int(u.get("outputTokens") or 0)
        return cost, tin, tout
    usage = field_object(line, "usage")
    tin = sum(
        int(usage.get(k) or 0)
        for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    )
    return float(line.get("total_cost_usd") or 0), tin, int(usage.get("output_tokens") or 0)


# -- readable lines ------------------------------------------------------------------------


def short_input(tool: str, tool_input: dict[str, Any], cwd: str | None = None) -> str:
    """The one thing worth showing of a tool call: the command, the path, the pattern..."""
    for key in ("command", "file_path", "notebook_path", "path", "pattern", "url", "query"):
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            if key in ("file_path", "notebook_path", "path"):
                value = _rel(value, cwd)
            return _clip(value.splitlines()[0] if value.strip() else value, SHORT)
    if tool == QUESTION_TOOL:
        qs = tool_input.get("questions") or []
        return _clip(" / ".join(str(q.get("question", "")) for q in qs), SHORT)
    if tool == PLAN_TOOL:
        return "plan ready for approval"
    if not tool_input:
        return ""
    return _clip(json.dumps(tool_input, ensure_ascii=False), SHORT)


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) if isinstance(b, dict) else str(b) for b in content)
    return "" if content is None else str(content)


def describe_result(content: Any, is_error: bool = False) -> str:
    text = _result_text(content).rstrip("\n")
    lines = text.splitlines()
    if is_error:
        return f"← error: {_clip(' '.join(lines), SHORT)}" if lines else "← error"
    if len(lines) > 1:
        return f"← {len(lines)} lines"
    return f"← {_clip(text, SHORT)}" if text else "← (no output)"


def render(msg: dict[str, Any], cwd: str | None = None) -> list[str]:
    """Readable log lines for one stdout JSON object (empty for pure protocol chatter)."""
    kind = msg.get("type")
    if kind == "assistant":
        out: list[str] = []
        for block in (msg.get("message") or {}).get("content") or []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and block.get("text"):
                out.extend(str(block["text"]).splitlines())
            elif block.get("type") == "tool_use":
                name = str(block.get("name") or "?")
                arg = short_input(name, block.get("input") or {}, cwd)
                out.append(f"→ {name}: {arg}" if arg else f"→ {name}")
        return out
    if kind == "user":
        content = (msg.get("message") or {}).get("content")
        if not isinstance(content, list):
            return []
        return [
            describe_result(b.get("content"), bool(b.get("is_error")))
            for b in content
            if isinstance(b, dict) and b.get("type") == "tool_result"
        ]
    if kind == "system":
        sub = msg.get("subtype")
        if sub == "init":
            model = msg.get("model") or "?"
            mode = msg.get("permissionMode") or "default"
            return [f"[claude] session {msg.get('session_id', '')} · {model} · mode {mode}"]
        if sub == "status" and msg.get("permissionMode"):
            return [f"[claude] permission mode is now {msg['permissionMode']}"]
        return []
    if kind == "result":
        cost = float(msg.get("total_cost_usd") or 0)
        turns = msg.get("num_turns")
        if msg.get("subtype") == "success" and not msg.get("is_error"):
            return [f"[claude] done · {turns} turns · session total ${cost:.4f}"]
        errors = msg.get("errors") or [msg.get("result") or msg.get("subtype")]
        return [f"[claude] error: {e}" for e in errors if e]
    if kind == "control_request":
        req = msg.get("request") or {}
        if req.get("subtype") == "can_use_tool":
            tool = req.get("tool_name") or "?"
            if tool == QUESTION_TOOL:
                return ["[claude] waiting for an answer"]
            return [f"[claude] waiting for approval: {tool}"]
    return []
