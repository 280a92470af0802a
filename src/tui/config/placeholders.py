"""``{placeholder}`` substitution in prompts: plain text in our own process, one pass, so a
value's own braces, quotes, ``$()`` or backticks arrive exactly as they were."""

from __future__ import annotations

import re
from collections.abc import Mapping

from tui.model.suggest import did_you_mean

PLACEHOLDERS = ("instructions", "file", "file_contents", "command", "command_output", "date")
NEEDS = {"file": "file", "file_contents": "file", "command": "command", "command_output": "command"}
# Doubled braces are literal braces; a single brace opens or closes a placeholder.
_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")


def check(text: str, given: set[str]) -> list[tuple[str, str]]:
    """(message, fix) for every problem in ``text``; ``given`` holds "file"/"command" when set."""
    problems: list[tuple[str, str]] = []
    for m in _TOKEN.finditer(text):
        token = m.group(0)
        if token in ("{{", "}}"):
            continue
        if m.group(1) is None:
            problems.append(
                (f"lone {token!r} at character {m.start() + 1}", f"write it doubled: {token * 2}")
            )
            continue
        name = m.group(1)
        if name not in PLACEHOLDERS:
            guess = did_you_mean(name, PLACEHOLDERS)
            hint = f"did you mean {{{guess[0]}}}? " if guess else ""
            problems.append(
                (
                    f"unknown placeholder {{{name}}}",
                    f"{hint}known: {', '.join('{' + p + '}' for p in PLACEHOLDERS)}; "
                    "write {{ and }} for literal braces",
                )
            )
        elif name in NEEDS and NEEDS[name] not in given:
            key = NEEDS[name]
            problems.append(
                (f"{{{name}}} is used but no {key} is set", f'add {key} = "..." next to the prompt')
            )
    return problems


def used(text: str) -> set[str]:
    """The placeholders ``text`` uses (assumes ``check`` found nothing)."""
    return {m.group(1) for m in _TOKEN.finditer(text) if m.group(1) is not None}


def substitute(text: str, values: Mapping[str, str]) -> str:
    def one(m: re.Match[str]) -> str:
        token = m.group(0)
        if token in ("{{", "}}"):
            return token[0]
        return values[m.group(1)]

    return _TOKEN.sub(one, text)
