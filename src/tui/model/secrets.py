"""Known secret shapes (API keys, tokens) and how to hide them in text we log or show."""

from __future__ import annotations

import re

# Provider key formats, then any NAME=value whose name says it is a secret.
_PATTERNS = [
    re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}"),  # Anthropic
    re.compile(r"sk-(?:proj-)?[A-Za-z0-9_\-]{16,}"),  # OpenAI
    re.compile(r"AIza[0-9A-Za-z_\-]{30,}"),  # Google
    re.compile(r"gh[pousr]_[A-Za-z0-9]{20,}"),  # GitHub
    re.compile(r"xox[abprs]-[A-Za-z0-9\-]{10,}"),  # Slack
]
_NAMED = re.compile(
    r"(?i)\b([A-Z0-9_]*(?:API_KEY|TOKEN|SECRET|PASSWORD|PASSWD)[A-Z0-9_]*)(\s*[=:]\s*)(\S+)"
)
MASK = "***"


def is_secret_name(name: str) -> bool:
    """An environment variable whose value must never be shown (ANTHROPIC_API_KEY, ...)."""
    return bool(_NAMED.match(f"{name}=x"))


def redact(text: str) -> str:
    text = _NAMED.sub(lambda m: f"{m[1]}{m[2]}{MASK}", text)
    for p in _PATTERNS:
        text = p.sub(MASK, text)
    return text


def redact_env(env: dict[str, str]) -> dict[str, str]:
    return {k: (MASK if is_secret_name(k) else redact(v)) for k, v in env.items()}


def refuse_secrets(env: dict[str, str]) -> dict[str, str]:
    """Validator for an ``env`` table that ends up in a stored task spec: keys and tokens
    must never reach the database, so they come from the environment tui starts in."""
    named = sorted(k for k, v in env.items() if v and is_secret_name(k))
    if named:
        raise ValueError(
            f"{', '.join(named)} would be stored in tui's database with the task; keys and "
            "tokens never are: export them in the environment tui (and its daemon) starts "
            "from instead, and leave them out of env"
        )
    return env
