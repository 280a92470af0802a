"""How each interpreter named as a config's `shell` takes a script given as an argument:
`bash -c`, `node -e`, `python -c`... (or the table's own `shell_args`)."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

# How each interpreter runs a script given as an argument; others need `shell_args`.
SCRIPT_FLAGS = {
    "sh": ["-c"],
    "bash": ["-c"],
    "zsh": ["-c"],
    "dash": ["-c"],
    "ksh": ["-c"],
    "fish": ["-c"],
    "pwsh": ["-Command"],
    "node": ["-e"],
    "deno": ["eval"],
    "bun": ["-e"],
    "python": ["-c"],
    "ruby": ["-e"],
    "perl": ["-e"],
    "php": ["-r"],
    "lua": ["-e"],
}
_VERSIONED = re.compile(r"^(python|ruby|perl|php|lua)[0-9.]*$")


def script_argv(shell: str, command: str, shell_args: Sequence[str] | None = None) -> list[str]:
    """``[shell, *flags, command]``: ``shell_args`` when given, else the interpreter's own
    flag. ValueError for an interpreter tui does not know (the message says to set
    shell_args)."""
    if shell_args is not None:
        return [shell, *shell_args, command]
    base = os.path.basename(shell)
    flags = SCRIPT_FLAGS.get(base)
    if flags is None and (m := _VERSIONED.match(base)):
        flags = SCRIPT_FLAGS[m.group(1)]
    if flags is None:
        known = ", ".join(SCRIPT_FLAGS)
        raise ValueError(
            f"tui does not know how {shell!r} takes a script (it knows {known}); "
            'set shell_args, e.g. shell_args = ["-c"]'
        )
    return [shell, *flags, command]
