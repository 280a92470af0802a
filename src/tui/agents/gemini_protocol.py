"""Pure pieces of the Gemini CLI adapter: argv, prices, stream-json events → readable lines,
the outcome of a run. Nothing here starts a process (see docs/gemini.md; checked on
@google/gemini-cli 0.61.0)."""

from __future__ import annotations

import fnmatch
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tui.agents.claude_protocol import describe_result, short_input
from tui.agents.cli_process import describe_exit as exit_text
from tui.agents.cli_process import field_object
from tui.engine.adapter import AdapterError
from tui.model.states import State
from tui.model.task import AgentConfig, PermissionMode

PRICES_ENV = "TUI_GEMINI_PRICES"
SHORT = 200

# permission_mode → --approval-mode. `dontAsk` means "refuse whatever is not allowed", which is
# what gemini's headless `default` does (tools that need approval are not offered at all).
APPROVAL_MODES: dict[PermissionMode, str] = {
    PermissionMode.DEFAULT: "default",
    PermissionMode.DONT_ASK: "default",
    PermissionMode.DELEGATE: "default",
    PermissionMode.ACCEPT_EDITS: "auto_edit",
    PermissionMode.BYPASS: "yolo",
    PermissionMode.PLAN: "plan",
}

# What the CLI's exit codes mean (FatalError subclasses in @google/gemini-cli 0.61.0).
EXIT_CODES: dict[int, str] = {
    1: "error",
    41: "authentication error",
    42: "input error",
    44: "sandbox error",
    52: "configuration error",
    53: "turn limit reached",
    54: "tool execution error",
    55: "untrusted workspace",
    130: "cancelled",
}

# stderr lines the CLI prints on every run that say nothing about the task: dropped.
NOISE_PREFIXES = (
    "Warning: 256-color support not detected",
    "Ripgrep is not available",
    "[STARTUP]",
    "YOLO mode is enabled",
)

NO_SESSION = "Error resuming session"  # what --resume of an unknown session id prints (exit 42)


# -- prices --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float
    cached: float | None = None  # cached input; defaults to a quarter of `input`

    def cost(self, fresh_in: int, cached_in: int, out: int) -> float:
        cached = self.input / 4 if self.cached is None else self.cached
        return (fresh_in * self.input + cached_in * cached + out * self.output) / 1_000_000


# First matching glob wins (matched against the model name in the result stats). Standard
# (<=200k prompt) paid-tier list prices; unknown models fall through to `*`, priced like a pro
# model so that a budget errs on stopping early. Override with TUI_GEMINI_PRICES or prices=.
DEFAULT_PRICES: tuple[tuple[str, Price], ...] = (
    ("*flash-lite*", Price(0.10, 0.40, 0.025)),
    ("gemini-2.5-flash*", Price(0.30, 2.50, 0.075)),
    ("gemini-2.0-flash*", Price(0.10, 0.40, 0.025)),
    ("*flash*", Price(0.50, 3.00, 0.05)),
    ("gemini-2.5-pro*", Price(1.25, 10.00, 0.31)),
    ("*pro*", Price(2.00, 12.00, 0.20)),
    ("*", Price(2.00, 12.00, 0.20)),
)


def parse_prices(text: str, env_name: str = PRICES_ENV) -> list[tuple[str, Price]]:
    """``{"glob": {"input": 1.25, "output": 10, "cached": 0.31}, ...}`` (USD per 1M tokens)."""
    try:
        data = json.loads(text)
    except ValueError as e:
        raise AdapterError(f"{env_name} is not JSON: {e}") from None
    if not isinstance(data, dict):
        raise AdapterError(f'{env_name} must be an object like {{"gemini-*": {{...}}}}')
    out: list[tuple[str, Price]] = []
    for pattern, p in data.items():
        try:
            if isinstance(p, dict):
                cached = p.get("cached")
                price = Price(
                    float(p["input"]), float(p["output"]), None if cached is None else float(cached)
                )
            else:
                price = Price(float(p[0]), float(p[1]), float(p[2]) if len(p) > 2 else None)
        except (KeyError, IndexError, TypeError, ValueError):
            raise AdapterError(
                f"{env_name}: price of {pattern!r} needs input and output (USD per 1M tokens)"
            ) from None
        out.append((str(pattern), price))
    return out


def price_table(
    overrides: Mapping[str, Price] | None = None,
    env: Mapping[str, str] | None = None,
    *,
    env_name: str = PRICES_ENV,
    defaults: tuple[tuple[str, Price], ...] = DEFAULT_PRICES,
) -> list[tuple[str, Price]]:
    """The env's and the constructor's prices first, then the defaults (ending with ``*``)."""
    table: list[tuple[str, Price]] = []
    text = (env or {}).get(env_name) or os.environ.get(env_name) or ""
    if text.strip():
        table += parse_prices(text, env_name)
    table += list((overrides or {}).items())
    table += list(defaults)
    return table


def price_for(model: str, table: list[tuple[str, Price]]) -> Price:
    for pattern, price in table:
        if fnmatch.fnmatchcase(model, pattern):
            return price
    return table[-1][1] if table else DEFAULT_PRICES[-1][1]


# -- argv ----------------------------------------------------------------------------------


def approval_mode(agent: AgentConfig) -> str:
    return APPROVAL_MODES.get(agent.permission_mode, "")


def build_argv(binary: str, agent: AgentConfig, *, resume: str = "") -> list[str]:
    """The command line. The prompt is not in it: it goes to stdin (no argv size limit, and a
    prompt starting with ``-`` cannot be taken for a flag)."""
    if agent.disallowed_tools:
        raise AdapterError(
            "gemini has no way to forbid single tools from the command line: remove "
            "agent.disallowed_tools, or use a policy file (agent.additional_args: "
            "[--policy, FILE]) or permission_mode"
        )
    argv = [binary, "--output-format", "stream-json"]
    if agent.model:
        argv += ["--model", agent.model]
    mode = approval_mode(agent)
    if mode:
        argv += ["--approval-mode", mode]
    if agent.allowed_tools:
        argv += ["--allowed-tools", *agent.allowed_tools]
    if resume:
        argv += ["--resume", resume]
    argv += list(agent.additional_args)
    return argv


def with_system_append(prompt: str, agent: AgentConfig) -> str:
    """gemini (and codex) have no --append-system-prompt: the text leads the first prompt."""
    extra = agent.system_prompt_append.strip()
    if not extra:
        return prompt
    return (
        f"=== Standing instructions ===\n{extra}\n=== End of standing instructions ===\n\n{prompt}"
    )


# -- the outcome ---------------------------------------------------------------------------


@dataclass
class Usage:
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    models: dict[str, tuple[int, int, int]] = field(default_factory=dict)  # in, cached, out


def usage_of(stats: Any, table: list[tuple[str, Price]]) -> Usage:
    """Tokens and computed cost from a ``result`` line's ``stats`` (this process only).

    Per model: input = ``input_tokens`` (the whole prompt, cached part included), billed as
    (input - cached) fresh + cached; output = ``output_tokens``, or ``total - input`` when that
    is larger (thinking tokens are billed as output but only show up in the total).
    """
    out = Usage()
    if not isinstance(stats, dict):
        return out
    models = stats.get("models")
    if not isinstance(models, dict) or not models:
        models = {"": stats}
    for name, m in models.items():
        if not isinstance(m, dict):
            continue
        tin = _int(m.get("input_tokens"))
        cached = min(_int(m.get("cached")), tin)
        tout = max(_int(m.get("output_tokens")), _int(m.get("total_tokens")) - tin)
        if not (tin or tout):
            continue
        out.models[str(name)] = (tin, cached, tout)
        out.tokens_in += tin
        out.tokens_out += tout
        out.cost_usd += price_for(str(name), table).cost(tin - cached, cached, tout)
    return out


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def describe_exit(code: int) -> str:
    return exit_text(code, EXIT_CODES)


@dataclass
class Outcome:
    state: State
    error: str = ""
    result: str | None = None
    usage: Usage = field(default_factory=Usage)


def outcome(
    code: int,
    result_line: dict[str, Any] | None,
    text: str,
    errors: list[str],
    stderr_tail: list[str],
    table: list[tuple[str, Price]],
    max_budget: float = 0.0,
    spent: float = 0.0,
) -> Outcome:
    """How the run ended: the result line's status, else the exit code and what was said."""
    usage = usage_of((result_line or {}).get("stats"), table)
    if result_line is not None and result_line.get("status") == "success" and code == 0:
        out = Outcome(State.COMPLETED, result=text, usage=usage)
    else:
        said = ""
        if result_line is not None:
            err = result_line.get("error")
            said = str(err.get("message") or "") if isinstance(err, dict) else str(err or "")
        if not said and errors:
            said = errors[-1]
        if not said and stderr_tail:
            said = " · ".join(stderr_tail)
        if result_line is not None and code == 0:
            head = "gemini reported an error"
        else:
            head = f"gemini {describe_exit(code)}"
        out = Outcome(State.FAILED, error=f"{head}: {said}" if said else head, usage=usage)
    cost = usage.cost_usd
    if max_budget > 0 and spent + cost > max_budget:
        out.state = State.BUDGET_EXCEEDED
        out.error = f"spent ${spent + cost:.4f} of a ${max_budget:g} budget" + (
            f" (earlier attempts ${spent:.4f})" if spent else ""
        )
        out.error += " (gemini reports no cost: computed from tokens and the price table)"
    return out


# -- readable lines ------------------------------------------------------------------------


def tool_summary(name: str, params: Any, cwd: str | None = None) -> str:
    if not isinstance(params, dict):
        return ""
    for key in ("dir_path", "absolute_path", "directory"):
        if isinstance(params.get(key), str) and "path" not in params:
            params = {**params, "path": params[key]}
            break
    return short_input(name, params, cwd)


def _clip(text: str, n: int = SHORT) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


class Renderer:
    """stream-json events → readable lines. Assistant text arrives as deltas: it is kept until
    a line is complete (or another event comes) so a sentence is not cut into pieces."""

    def __init__(self, cwd: str | None = None) -> None:
        self.cwd = cwd
        self.pending = ""

    def flush(self) -> list[str]:
        out = [self.pending] if self.pending.strip() else []
        self.pending = ""
        return out

    def render(self, msg: dict[str, Any]) -> list[str]:
        kind = msg.get("type")
        if kind == "message" and msg.get("role") == "assistant":
            text = self.pending + str(msg.get("content") or "")
            *done, self.pending = text.split("\n")
            return done
        out = self.flush()
        if kind == "init":
            out.append(f"[gemini] session {msg.get('session_id', '')} · {msg.get('model') or '?'}")
        elif kind == "tool_use":
            name = str(msg.get("tool_name") or "?")
            arg = tool_summary(name, msg.get("parameters"), self.cwd)
            out.append(f"→ {name}: {arg}" if arg else f"→ {name}")
        elif kind == "tool_result":
            if msg.get("status") == "error":
                err = field_object(msg, "error")
                text = str(err.get("message") or msg.get("output") or "")
                out.append(describe_result(text, is_error=True))
            else:
                output = msg.get("output")
                out.append(describe_result(output) if output else "← ok")
        elif kind == "error":
            severity = str(msg.get("severity") or "error")
            out.append(f"[gemini] {severity}: {_clip(str(msg.get('message') or ''))}")
        elif kind == "result":
            stats = field_object(msg, "stats")
            if msg.get("status") == "success":
                out.append(
                    f"[gemini] done · {stats.get('tool_calls', 0)} tool calls · "
                    f"{stats.get('input_tokens', 0)} tokens in, "
                    f"{stats.get('output_tokens', 0)} out"
                )
            else:
                err = field_object(msg, "error")
                out.append(f"[gemini] error: {_clip(str(err.get('message') or 'unknown'))}")
        return out


class ResultText:
    """The run's answer: the assistant text after the last tool result (the final turn), or
    all of it when the final turn said nothing."""

    def __init__(self) -> None:
        self.all: list[str] = []
        self.last: list[str] = []

    def see(self, msg: dict[str, Any]) -> None:
        kind = msg.get("type")
        if kind == "message" and msg.get("role") == "assistant":
            text = str(msg.get("content") or "")
            self.all.append(text)
            self.last.append(text)
        elif kind in ("tool_use", "tool_result"):
            self.last = []

    @property
    def text(self) -> str:
        last = "".join(self.last).strip()
        return last or "".join(self.all).strip()
