"""Pure pieces of the Codex CLI adapter: argv, `codex exec --json` events → readable lines,
usage and the outcome of a run. Nothing here starts a process (see docs/codex.md; checked on
@openai/codex 0.169.0)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tui.agents.claude_protocol import describe_result
from tui.agents.cli_process import describe_exit, field_object
from tui.agents.gemini_protocol import Price, price_for
from tui.engine.adapter import AdapterError
from tui.model.states import State
from tui.model.task import AgentConfig, PermissionMode
from tui.store.records import RunRecord

PRICES_ENV = "TUI_CODEX_PRICES"
SHORT = 200
MAX_ARG_PROMPT = 100_000  # bytes; a longer prompt goes through stdin (`-`), under Linux's 128 KiB
BYPASS = "--dangerously-bypass-approvals-and-sandbox"

# permission_mode → sandbox (`codex exec` never asks for approval: approval policy `never`).
SANDBOXES: dict[PermissionMode, str] = {
    PermissionMode.NONE: "workspace-write",
    PermissionMode.DEFAULT: "workspace-write",
    PermissionMode.ACCEPT_EDITS: "workspace-write",
    PermissionMode.DONT_ASK: "workspace-write",
    PermissionMode.DELEGATE: "workspace-write",
    PermissionMode.PLAN: "read-only",
}

# USD per 1M tokens (standard list prices); the model is agent.model ("" = the CLI's default,
# priced by the `*` row like gpt-5).
DEFAULT_PRICES: tuple[tuple[str, Price], ...] = (
    ("gpt-5*-nano*", Price(0.05, 0.40, 0.005)),
    ("gpt-5*-mini*", Price(0.25, 2.00, 0.025)),
    ("gpt-5*", Price(1.25, 10.00, 0.125)),
    ("gpt-4.1-nano*", Price(0.10, 0.40, 0.025)),
    ("gpt-4.1-mini*", Price(0.40, 1.60, 0.10)),
    ("gpt-4.1*", Price(2.00, 8.00, 0.50)),
    ("o4-mini*", Price(1.10, 4.40, 0.275)),
    ("o3*", Price(2.00, 8.00, 0.50)),
    ("*", Price(1.25, 10.00, 0.125)),
)

# stderr lines that say nothing about the task: dropped.
NOISE = (
    re.compile(r"^WARNING: proceeding, even though we could not create PATH aliases"),
    re.compile(r"^Reading additional input from stdin"),
    re.compile(r"^Stack backtrace:$"),
    re.compile(r"^\s*\d+: <unknown>$"),
)
NO_THREAD = "no rollout found for thread id"  # `resume` of a thread this CODEX_HOME lacks


def is_noise(line: str) -> bool:
    return any(p.search(line) for p in NOISE)


# -- argv ----------------------------------------------------------------------------------


def build_argv(
    binary: str, agent: AgentConfig, prompt: str, *, resume: str = ""
) -> tuple[list[str], bytes | None]:
    """The command line and what to write to stdin (None: stdin stays closed).

    ``codex exec [resume ID] --json --skip-git-repo-check [-m M] <sandbox> [args] -- PROMPT``;
    options follow ``resume`` because that subcommand has no ``--sandbox`` of its own, so the
    sandbox is given as ``-c sandbox_mode=...`` in both forms.
    """
    if agent.disallowed_tools or agent.allowed_tools:
        raise AdapterError(
            "codex has no per-tool allow/deny lists: remove agent.allowed_tools / "
            "agent.disallowed_tools and choose a permission_mode (sandbox) instead"
        )
    argv = [binary, "exec"]
    if resume:
        argv.append("resume")
    argv += ["--json", "--skip-git-repo-check"]
    if agent.model:
        argv += ["-m", agent.model]
    if agent.permission_mode == PermissionMode.BYPASS:
        argv.append(BYPASS)
    else:
        argv += ["-c", f'sandbox_mode="{SANDBOXES[agent.permission_mode]}"']
    argv += list(agent.additional_args)
    if resume:
        argv.append(resume)
    stdin: bytes | None = None
    data = prompt.encode()
    if len(data) > MAX_ARG_PROMPT:
        argv += ["-"]
        stdin = data
    else:
        argv += ["--", prompt]
    return argv, stdin


# -- usage and outcome ---------------------------------------------------------------------


@dataclass
class Usage:
    tokens_in: int = 0
    cached_in: int = 0
    tokens_out: int = 0

    @staticmethod
    def of(line: dict[str, Any]) -> Usage:
        u = field_object(line, "usage")
        return Usage(
            _int(u.get("input_tokens")),
            _int(u.get("cached_input_tokens")),
            _int(u.get("output_tokens")),
        )


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def earlier_usage(previous_runs: Sequence[RunRecord], thread: str) -> tuple[int, int]:
    """Tokens earlier runs of this thread already recorded (turn.completed is cumulative)."""
    tin = tout = 0
    for run in previous_runs:
        if thread and run.session_id == thread:
            tin += run.tokens_in
            tout += run.tokens_out
    return tin, tout


def error_text(message: Any) -> str:
    """The API's error message, unwrapped from the JSON body codex quotes verbatim."""
    text = str(message or "")
    try:
        data = json.loads(text)
    except ValueError:
        return text
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
        if isinstance(err, str):
            return err
    return text


@dataclass
class Outcome:
    state: State
    error: str = ""
    result: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0


@dataclass
class Tally:
    """What one process said, for the outcome."""

    thread_id: str = ""
    completed: Usage | None = None  # the last turn.completed usage (thread totals)
    failed: str = ""  # turn.failed message
    errors: list[str] = field(default_factory=list)
    last_message: str = ""


def outcome(
    code: int,
    tally: Tally,
    stderr_tail: list[str],
    price: Price,
    earlier: tuple[int, int] = (0, 0),
    max_budget: float = 0.0,
    spent: float = 0.0,
) -> Outcome:
    out = Outcome(State.FAILED)
    if tally.completed is not None:
        u = tally.completed
        out.tokens_in = max(u.tokens_in - earlier[0], 0)
        out.tokens_out = max(u.tokens_out - earlier[1], 0)
        cached = min(u.cached_in, out.tokens_in)  # cache hits of this run's share, at most
        out.cost_usd = price.cost(out.tokens_in - cached, cached, out.tokens_out)
    if tally.completed is not None and not tally.failed and code == 0:
        out.state = State.COMPLETED
        out.result = tally.last_message
    else:
        said = tally.failed or (tally.errors[-1] if tally.errors else "")
        if not said and stderr_tail:
            said = " · ".join(stderr_tail)
        head = "codex turn failed" if tally.failed else f"codex {describe_exit(code)}"
        out.error = f"{head}: {error_text(said)}" if said else head
    if max_budget > 0 and spent + out.cost_usd > max_budget:
        out.state = State.BUDGET_EXCEEDED
        out.error = (
            f"spent ${spent + out.cost_usd:.4f} of a ${max_budget:g} budget"
            + (f" (earlier attempts ${spent:.4f})" if spent else "")
            + " (codex reports no cost: computed from tokens and the price table)"
        )
    return out


def model_price(agent: AgentConfig, table: list[tuple[str, Price]]) -> Price:
    return price_for(agent.model or "", table)


# -- readable lines ------------------------------------------------------------------------


def _clip(text: str, n: int = SHORT) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _first_line(text: str) -> str:
    lines = [ln for ln in str(text).splitlines() if ln.strip()]
    return _clip(lines[0]) if lines else ""


class Renderer:
    """`codex exec --json` events → readable lines."""

    def __init__(self) -> None:
        self.started: set[str] = set()

    def render(self, msg: dict[str, Any]) -> list[str]:
        kind = msg.get("type")
        if kind == "thread.started":
            return [f"[codex] thread {msg.get('thread_id', '')}"]
        if kind in ("item.started", "item.updated", "item.completed"):
            item = field_object(msg, "item")
            return self.item(str(kind), item)
        if kind == "turn.completed":
            u = Usage.of(msg)
            return [
                f"[codex] done · thread total {u.tokens_in} tokens in "
                f"({u.cached_in} cached), {u.tokens_out} out"
            ]
        if kind == "turn.failed":
            err = field_object(msg, "error")
            return [f"[codex] failed: {_clip(error_text(err.get('message')))}"]
        if kind == "error":
            return [f"[codex] error: {_clip(error_text(msg.get('message')))}"]
        return []

    def item(self, kind: str, item: dict[str, Any]) -> list[str]:
        itype = item.get("type")
        iid = str(item.get("id") or "")
        if kind == "item.updated":
            return []
        call = self.call_line(item)
        if kind == "item.started":
            if call:
                self.started.add(iid)
                return [call]
            return []
        out: list[str] = []
        if call and iid not in self.started:
            out.append(call)
        self.started.discard(iid)
        if itype == "agent_message":
            out.extend(str(item.get("text") or "").splitlines())
        elif itype == "reasoning":
            text = _first_line(str(item.get("text") or ""))
            if text:
                out.append(f"[codex] thinking: {text}")
        elif itype == "command_execution":
            code = item.get("exit_code")
            output = str(item.get("aggregated_output") or "")
            if code not in (0, None):
                out.append(
                    f"← exit {code}: {_first_line(output)}" if output.strip() else f"← exit {code}"
                )
            else:
                out.append(describe_result(output))
        elif itype == "file_change":
            out.append("← failed" if item.get("status") == "failed" else "← applied")
        elif itype == "mcp_tool_call":
            err = item.get("error")
            if isinstance(err, dict) and err.get("message"):
                out.append(describe_result(err["message"], is_error=True))
            else:
                out.append(describe_result(json.dumps(item.get("result") or "")))
        elif itype == "error":
            out.append(f"[codex] warning: {_clip(str(item.get('message') or ''))}")
        elif itype == "todo_list":
            items = item.get("items") or []
            done = sum(1 for i in items if isinstance(i, dict) and i.get("completed"))
            out.append(f"[codex] plan: {done}/{len(items)} done")
        return out

    @staticmethod
    def call_line(item: dict[str, Any]) -> str:
        itype = item.get("type")
        if itype == "command_execution":
            return f"→ shell: {_first_line(str(item.get('command') or ''))}"
        if itype == "file_change":
            changes = item.get("changes") or []
            paths = ", ".join(
                f"{c.get('kind', '?')} {c.get('path', '?')}" for c in changes if isinstance(c, dict)
            )
            return f"→ edit: {_clip(paths)}"
        if itype == "mcp_tool_call":
            return f"→ {item.get('server', '?')}.{item.get('tool', '?')}"
        if itype == "web_search":
            return f"→ web_search: {_clip(str(item.get('query') or ''))}"
        return ""


def see(tally: Tally, msg: dict[str, Any]) -> None:
    kind = msg.get("type")
    if kind == "thread.started":
        tally.thread_id = str(msg.get("thread_id") or tally.thread_id)
    elif kind == "item.completed":
        item = field_object(msg, "item")
        if item.get("type") == "agent_message":
            tally.last_message = str(item.get("text") or "")
    elif kind == "turn.completed":
        tally.completed = Usage.of(msg)
    elif kind == "turn.failed":
        err = field_object(msg, "error")
        tally.failed = str(err.get("message") or "turn failed")
    elif kind == "error":
        tally.errors.append(str(msg.get("message") or ""))
