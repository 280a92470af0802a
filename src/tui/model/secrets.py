"""Known secret shapes (API keys, tokens) and how to hide them in text we log or show."""

from __future__ import annotations

import re

_EDGE = r"(?<![A-Za-z0-9])"  # a key starts a word: "disk-usage-…" holds no "sk-" key
# Provider key formats (name, pattern): masked in logs, refused in a stored env.
KEY_SHAPES: list[tuple[str, re.Pattern[str]]] = [
    ("an Anthropic key", re.compile(_EDGE + r"sk-ant-[A-Za-z0-9_\-]{8,}")),
    ("an OpenAI key", re.compile(_EDGE + r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,}")),
    ("a Google API key", re.compile(_EDGE + r"AIza[0-9A-Za-z_\-]{30,}")),
    ("a GitHub token", re.compile(_EDGE + r"(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,})")),
    ("a Slack token", re.compile(_EDGE + r"xox[abeprs]-[A-Za-z0-9\-]{10,}")),
    ("an AWS access key", re.compile(_EDGE + r"(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Za-z0-9])")),
    ("a GitLab token", re.compile(_EDGE + r"glpat-[A-Za-z0-9_\-]{20,}")),
    ("a Hugging Face token", re.compile(_EDGE + r"hf_[A-Za-z0-9]{30,}")),
    ("an npm token", re.compile(_EDGE + r"npm_[A-Za-z0-9]{36}")),
    ("a Stripe key", re.compile(_EDGE + r"[sr]k_live_[A-Za-z0-9]{20,}")),
    ("a private key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")),
    ("a JSON web token", re.compile(_EDGE + r"eyJ[\w\-]{10,}\.eyJ[\w\-]{10,}\.[\w\-]{10,}")),
]
_NAMED = re.compile(
    r"(?i)\b([A-Z0-9_]*(?:API_KEY|TOKEN|SECRET|PASSWORD|PASSWD)[A-Z0-9_]*)(\s*[=:]\s*)(\S+)"
)
MASK = "***"


def is_secret_name(name: str) -> bool:
    """An environment variable whose value must never be shown (ANTHROPIC_API_KEY, ...)."""
    return bool(_NAMED.match(f"{name}=x"))


def key_shape(value: str) -> str | None:
    """What provider's key ``value`` contains ("an OpenAI key"), or None. Matches that are
    all letters or all digits are words, not keys (keeps false positives low)."""
    for what, pattern in KEY_SHAPES:
        for match in pattern.finditer(value):
            token = match.group()
            if what == "a private key" or (
                any(c.isdigit() for c in token) and any(c.isalpha() for c in token[4:])
            ):
                return what
    return None


def redact(text: str) -> str:
    text = _NAMED.sub(lambda m: f"{m[1]}{m[2]}{MASK}", text)
    for _, pattern in KEY_SHAPES:
        text = pattern.sub(MASK, text)
    return text


def redact_env(env: dict[str, str]) -> dict[str, str]:
    return {k: (MASK if is_secret_name(k) else redact(v)) for k, v in env.items()}


def refuse_secrets(env: dict[str, str]) -> dict[str, str]:
    """Validator for an ``env`` table that ends up in a stored task spec: keys and tokens
    must never reach the database, so they come from the environment tui starts in. Both
    the name (FOO_TOKEN) and the value (sk-ant-…, under any name) give one away."""
    named = sorted(k for k, v in env.items() if v and is_secret_name(k))
    shaped = sorted(f"{k} (looks like {what})" for k, v in env.items() if (what := key_shape(v)))
    found = named + [s for s in shaped if s.split(" ", 1)[0] not in named]
    if found:
        raise ValueError(
            f"{', '.join(found)} would be stored in tui's database with the task; keys and "
            "tokens never are: export them in the environment tui (and its daemon) starts "
            "from instead, and leave them out of env"
        )
    return env
