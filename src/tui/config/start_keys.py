"""Keys of `start`'s configs that tui reads without using (NOT_USED, and a command template
on an agent tui drives itself): taken out before validation and reported as one "not used
by tui" warning per file, so a real `start` config loads unmodified."""

from __future__ import annotations

import os
from typing import Any

from tui.config.schema import CLI_KINDS, NOT_USED


def not_used(data: dict[str, Any]) -> list[str]:
    """The dotted names of `start` keys tui does not use, in ``data`` (one file)."""
    found = []
    for section, keys in NOT_USED.items():
        raw = data.get(section)
        if not isinstance(raw, dict):
            continue
        if section == "settings":
            found += [f"settings.{k}" for k in keys if k in raw]
            continue
        for name, body in raw.items():
            if isinstance(body, dict):
                found += [f"{section}.{name}.{k}" for k in keys if k in body]
                if section == "agents" and body.get("command") and _drives_itself(body):
                    found.append(f"agents.{name}.command")
    return found


def _drives_itself(agent: dict[str, Any]) -> bool:
    """claude, gemini and codex run through their own protocol: a command template for one
    is not used."""
    kind = agent.get("type") or os.path.basename(str(agent.get("bin") or ""))
    return kind in CLI_KINDS


def used(section: str, body: Any) -> Any:
    """``body`` without the keys of NOT_USED (they are reported once per file instead)."""
    if not isinstance(body, dict) or not NOT_USED.get(section):
        return body
    return {k: v for k, v in body.items() if k not in NOT_USED[section]}
