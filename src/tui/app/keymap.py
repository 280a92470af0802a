"""Key remapping from the user's config: ``[settings.keys]`` in ``config.toml`` maps command
ids (see ``actions.COMMANDS`` or the help screen) to keys, e.g. ``cancel_task = "ctrl+k"``."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from tui.app.actions import BY_ID


def keymap_from(keys: Mapping[str, Any]) -> tuple[dict[str, str], list[str]]:
    keymap: dict[str, str] = {}
    problems: list[str] = []
    for command, key in keys.items():
        if command not in BY_ID:
            close = difflib.get_close_matches(command, list(BY_ID), n=1, cutoff=0.5)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            problems.append(f"config.toml: [settings.keys] {command!r} is not a command{hint}")
        elif not isinstance(key, str) or not key.strip():
            problems.append(f'config.toml: [settings.keys] {command} needs a key such as "ctrl+k"')
        else:
            keymap[command] = key.strip()
    return keymap, problems
