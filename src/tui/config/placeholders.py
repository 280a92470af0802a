"""``{placeholder}`` substitution in prompts: plain text in our own process, one pass, so a
value's own braces, quotes, ``$()`` or backticks arrive exactly as they were."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping

from tui.model.suggest import did_you_mean

PLACEHOLDERS = (
    "instructions",
    "file",
    "file_contents",
    "command",
    "command_output",
    "date",
    "model",
)
NEEDS = {"file": "file", "file_contents": "file", "command": "command", "command_output": "command"}
# ``{{name}}`` is a template variable where the template declares any; otherwise doubled
# braces are literal braces, and a single brace opens or closes a placeholder.
_TOKEN = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}|\{\{|\}\}|\{([^{}]*)\}|[{}]")


def check(
    text: str, given: set[str], variables: Collection[str] = ()
) -> list[tuple[str, str, str]]:
    """(message, fix, severity) for every problem in ``text``; ``given`` holds "file" and
    "command" when set, ``variables`` the template's declared variable names. A placeholder
    whose source is not set is empty (as in `start`): a warning."""
    problems: list[tuple[str, str, str]] = []
    for m in _TOKEN.finditer(text):
        token = m.group(0)
        if m.group(1) is not None:
            if variables and m.group(1) not in variables:
                guess = did_you_mean(m.group(1), list(variables))
                hint = f"did you mean {{{{{guess[0]}}}}}? " if guess else ""
                fix = f"{hint}declare it in the template's variables"
                problems.append((f"unknown variable {token}", fix, "error"))
            continue
        if token in ("{{", "}}"):
            continue
        if m.group(2) is None:
            problems.append(
                (
                    f"lone {token!r} at character {m.start() + 1}",
                    f"write it doubled: {token * 2}",
                    "error",
                )
            )
            continue
        name = m.group(2)
        if name not in PLACEHOLDERS:
            guess = did_you_mean(name, PLACEHOLDERS)
            hint = f"did you mean {{{guess[0]}}}? " if guess else ""
            problems.append(
                (
                    f"unknown placeholder {{{name}}}",
                    f"{hint}known: {', '.join('{' + p + '}' for p in PLACEHOLDERS)}; "
                    "write {{ and }} for literal braces",
                    "error",
                )
            )
        elif name in NEEDS and NEEDS[name] not in given:
            key = NEEDS[name]
            problems.append(
                (
                    f"{{{name}}} is used but no {key} is set: it will be empty",
                    f'add {key} = "..." next to the prompt, or remove {{{name}}}',
                    "warning",
                )
            )
    return problems


def used(text: str) -> set[str]:
    """The placeholders ``text`` uses (assumes ``check`` found nothing)."""
    return {m.group(2) for m in _TOKEN.finditer(text) if m.group(2) is not None}


def substitute(
    text: str, values: Mapping[str, str], variables: Mapping[str, str] | None = None
) -> str:
    """Placeholders from ``values`` and declared ``variables`` in one pass."""
    variables = variables or {}

    def one(m: re.Match[str]) -> str:
        if m.group(1) is not None:
            if m.group(1) in variables:
                return variables[m.group(1)]
            return m.group(0)[1:-1]  # not a variable: doubled braces are literal
        token = m.group(0)
        if token in ("{{", "}}"):
            return token[0]
        return values[m.group(2)]

    return _TOKEN.sub(one, text)
