"""Key remapping from the user's config: ``[settings.keys]`` in ``config.toml`` maps command
ids (see ``actions.COMMANDS`` or the help screen) to keys, e.g. ``cancel_task = "ctrl+k"``."""

from __future__ import annotations

import difflib
import tomllib

from tui.app.actions import BY_ID
from tui.app.themes import user_config_dir


def load_keymap() -> tuple[dict[str, str], list[str]]:
    """(command id → key, problems). A missing file is no problem; a broken one never raises."""
    path = user_config_dir() / "config.toml"
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}, []
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        return {}, [f"{path}: {e}; key bindings left as default"]
    keys = data.get("settings", {}).get("keys", {})
    if not isinstance(keys, dict):
        return {}, [f'{path}: [settings.keys] must be a table of command = "key"']
    keymap: dict[str, str] = {}
    problems: list[str] = []
    for command, key in keys.items():
        if command not in BY_ID:
            close = difflib.get_close_matches(command, list(BY_ID), n=1, cutoff=0.5)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            problems.append(f"{path}: [settings.keys] {command!r} is not a command{hint}")
        elif not isinstance(key, str) or not key.strip():
            problems.append(f'{path}: [settings.keys] {command} needs a key such as "ctrl+k"')
        else:
            keymap[command] = key.strip()
    return keymap, problems
