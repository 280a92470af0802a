"""Turn one pydantic error into a human message and a fix; never pydantic's own wording."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic_core import ErrorDetails

from tui.model.agent_kinds import AGENT_TYPES, DEFAULT_TYPE
from tui.model.classify import Classifier
from tui.model.output_format import OutputFormat
from tui.model.resources import CUSTOM_FIX, LABELS_FIX, MEMORY_FIX, Resources
from tui.model.suggest import did_you_mean
from tui.model.task import AgentConfig, RetryConfig, Task
from tui.model.variables import Variable
from tui.model.workflow import Compaction, ContextSpec, Hooks, Summarizer

_DURATION_FIX = 'write a Go duration such as "30m", "1h30m" or "45s", or 0 for no limit'
_LIST_FIX = "write a list, e.g. [a, b] or one '- item' per line"

# What to write instead, by field path inside a task (list indexes dropped).
FIXES: dict[str, str] = {
    "resources.memory": MEMORY_FIX,
    "resources.custom": CUSTOM_FIX,
    "resources.labels": LABELS_FIX,
    "id": "give the task a unique id, or leave `id` out to get a generated one",
    "name": "add `name: <short title>` to the task",
    "agent": "add an `agent:` mapping with at least `instructions: <what to do>`",
    "agent.instructions": "add `instructions: <what the agent should do>` under `agent:`",
    "agent.task": "add `task: <name>` under `agent:`, a task listed by `task --list-all`",
    "agent.type": f"use one of {', '.join(AGENT_TYPES)}; leave it out for {DEFAULT_TYPE}",
    "agent.permission_mode": "use one of the listed modes, or leave it out for the default",
    "agent.max_budget_usd": "use a dollar amount >= 0, or 0 for no budget limit",
    "agent.max_turns": "remove it, or make the task a claude or gemini task (agent.type: claude)",
    "agent.env": "remove it from env; export it in the shell that starts tui instead",
    "timeout": _DURATION_FIX,
    "retry.delay": 'write a Go duration such as "2s" or "500ms"',
    "retry.max_attempts": "use a whole number from 1 to 1000 (1 means no retries)",
    "retry.backoff": "use exponential (the default), linear, or none for a fixed delay",
    "when": "write an expression over needs.NAME.state / needs.NAME.result, e.g. "
    "needs.build.state == 'COMPLETED'",
    "context": "write {from: [names] | all, transfer: full | summary | minimal, "
    "preserve: [outputs, decisions, errors]}",
    "context.from": "list names of tasks in depends_on, or write all",
    "context.transfer": "use full, summary or minimal",
    "summarizer": "write {strategy: aggressive | moderate | comprehensive, agent, model, prompt, "
    "compaction}",
    "summarizer.compaction": "write {threshold: N} (trigger: on_threshold, the default), "
    "{trigger: on_completion}, or {trigger: every, every: N} (N >= 1); with any trigger but "
    "every, leave every out",
    "summarizer.compaction.threshold": "use a number of characters >= 1",
    "summarizer.compaction.trigger": "use on_threshold (the default), on_completion, or every "
    "with every: N",
    "summarizer.compaction.every": "use a whole number >= 1 with trigger: every, or leave it out",
    "summarizer.strategy": "use aggressive (one line, no agent), moderate or comprehensive",
    "summarizer.prompt": "write prompt: a bash script reading $TUI_CONTEXT_FILE (it prints the "
    "summary), or use another agent (claude, gemini, codex) for the built-in prompt",
    "summarizer.agent": "use claude, gemini, codex, or shell (a script reading $TUI_CONTEXT_FILE)",
    "context.preserve": "list some of outputs, decisions, errors",
    "classifier": "write {agent, model, prompt}: the agent that picks the agent of a task "
    "that leaves agent.type out",
    "classifier.prompt": "write prompt: the bash script it runs (it prints "
    '{"agent": ...}), or use another agent (claude, gemini, codex) for the built-in prompt',
    "classifier.agent": "use claude, gemini, codex, or shell (a script reading $TUI_CONTEXT_FILE)",
    "on_error": "use retry, skip or fail, or leave it out for retry",
    "on_max_retries": "use skip or fail, or leave it out for fail",
    "hooks": "write {on_start: [cmd, arg], on_complete: ..., on_error: ..., on_skip: ..., "
    "on_progress: ...}",
    "hooks.timeout": 'write a Go duration such as "30s"',
    **{
        f"hooks.{event}": "write the command as a list of words, e.g. [notify-send, done]"
        for event in ("on_start", "on_complete", "on_error", "on_skip", "on_progress")
    },
    "priority": "use critical, high, normal or low, or leave it out",
    "depends_on": "list task ids or names of tasks in the same file",
    "tags": "write tags as a list of strings, e.g. [backend, urgent]",
    "variables": "write a list of {name, type, default, required}",
    "variables.type": "use string, number or boolean",
    "vars": "write a mapping of variable name to value",
    "output_format": "write {type: json, schema: object} or {type: text}",
    "output_format.type": "use json or text",
    "output_format.schema": (
        "use object, array, [], string[], number or boolean, or a JSON Schema mapping "
        "(needs type: json)"
    ),
    "output_format.validate": "write the command as a list, e.g. [python3, check.py]",
    "output_format.validate_timeout": 'write a Go duration such as "30s" (at most 1h)',
    "output_format.on_parse_error": "use fail or keep (keep needs type: json)",
}

_CONTAINERS: dict[tuple[str, ...], type[BaseModel]] = {
    (): Task,
    ("agent",): AgentConfig,
    ("retry",): RetryConfig,
    ("output_format",): OutputFormat,
    ("variables",): Variable,
    ("resources",): Resources,
    ("context",): ContextSpec,
    ("hooks",): Hooks,
    ("summarizer",): Summarizer,
    ("summarizer", "compaction"): Compaction,
    ("classifier",): Classifier,
}


def field_key(loc: tuple[str | int, ...]) -> str:
    """Dotted field path without list indexes, for looking up ``FIXES``."""
    return ".".join(str(p) for p in loc if isinstance(p, str))


def human_error(err: ErrorDetails) -> tuple[str, str]:
    """(message, fix) for one pydantic error whose loc is relative to a task mapping."""
    loc = tuple(err["loc"])
    kind = err["type"]
    key = field_key(loc)
    name = key or "task"
    value: Any = err.get("input")
    fix = FIXES.get(key, "")

    if kind == "extra_forbidden":
        owner = _CONTAINERS.get(tuple(p for p in loc[:-1] if isinstance(p, str)))
        fields = owner.model_fields.items() if owner else []
        allowed = [f.alias or name for name, f in fields]  # as written in the file
        guess = did_you_mean(str(loc[-1]), allowed)
        if guess:
            fix = f"did you mean `{guess[0]}`?"
        else:
            fix = f"remove it; allowed keys here: {', '.join(allowed)}"
        return f"unknown key '{loc[-1]}'", fix
    if kind == "missing":
        return f"{name} is required", fix
    if kind == "value_error":
        ctx = err.get("ctx") or {}
        message = str(ctx.get("error", "invalid value"))
        return message, fix or "correct the value"
    if kind in ("string_type", "string_sub_type"):
        plain = isinstance(value, int | float | bool)
        return f"{name} must be text; got {value!r}", fix or (
            f'quote it: "{value}"' if plain else "write plain text"
        )
    if kind == "list_type":
        return f"{name} must be a list; got {value!r}", fix or _LIST_FIX
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        message = f"{name} must be a mapping of settings; got {value!r}"
        return message, fix or "indent its keys under it"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return f"{name} must be a whole number; got {value!r}", fix or "write a whole number"
    if kind in ("float_type", "float_parsing", "finite_number"):
        return f"{name} must be a number; got {value!r}", fix or "write a number"
    if kind in ("bool_type", "bool_parsing"):
        return f"{name} must be true or false; got {value!r}", "write true or false"
    if kind in ("greater_than_equal", "greater_than"):
        ctx = err.get("ctx") or {}
        bound = f"{ctx.get('ge', ctx.get('gt', 0)):g}"
        op = ">=" if kind == "greater_than_equal" else ">"
        return f"{name} must be {op} {bound}; got {value!r}", fix or f"use a value {op} {bound}"
    if kind in ("less_than_equal", "less_than"):
        ctx = err.get("ctx") or {}
        bound = f"{ctx.get('le', ctx.get('lt', 0)):g}"
        op = "<=" if kind == "less_than_equal" else "<"
        return f"{name} must be {op} {bound}; got {value!r}", fix or f"use a value {op} {bound}"
    if kind in ("string_too_long", "too_long"):
        ctx = err.get("ctx") or {}
        most = ctx.get("max_length", "?")
        return f"{name} is too long (at most {most})", fix or "shorten it"
    # Unforeseen kinds: pydantic's short message (no URL), still tied to the field.
    return f"{name}: {err['msg']}", fix or "correct the value"
