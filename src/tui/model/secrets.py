"""Known secret shapes (API keys, tokens) and how to hide them in text we log or show."""

from __future__ import annotations

import functools
import re

MASK = "***"


@functools.cache
def _patterns() -> tuple[list[tuple[str, re.Pattern[str]]], re.Pattern[str]]:
    """The key shapes (name, pattern) and the secret-name pattern, compiled at first use: 14
    patterns, ~4 ms of every start that nothing on a plain file's run ever asks for."""
    edge = r"(?<![A-Za-z0-9])"  # a key starts a word: "disk-usage-…" holds no "sk-" key
    # Provider key formats: masked in logs, refused in a stored env.
    shapes = [
        ("an Anthropic key", edge + r"sk-ant-[A-Za-z0-9_\-]{8,}"),
        ("an OpenAI key", edge + r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,}"),
        ("a Google API key", edge + r"AIza[0-9A-Za-z_\-]{30,}"),
        ("a GitHub token", edge + r"(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,})"),
        ("a Slack token", edge + r"xox[abeprs]-[A-Za-z0-9\-]{10,}"),
        ("an AWS access key", edge + r"(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Za-z0-9])"),
        ("a GitLab token", edge + r"glpat-[A-Za-z0-9_\-]{20,}"),
        ("a Hugging Face token", edge + r"hf_[A-Za-z0-9]{30,}"),
        ("an npm token", edge + r"npm_[A-Za-z0-9]{36}"),
        ("a Stripe key", edge + r"[sr]k_live_[A-Za-z0-9]{20,}"),
        ("a private key", r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
        ("a JSON web token", edge + r"eyJ[\w\-]{10,}\.eyJ[\w\-]{10,}\.[\w\-]{10,}"),
    ]
    named = re.compile(
        r"(?i)\b([A-Z0-9_]*(?:API_KEY|TOKEN|SECRET|PASSWORD|PASSWD)[A-Z0-9_]*)(\s*[=:]\s*)(\S+)"
    )
    return [(what, re.compile(p)) for what, p in shapes], named


def is_secret_name(name: str) -> bool:
    """An environment variable whose value must never be shown (ANTHROPIC_API_KEY, ...)."""
    return bool(_patterns()[1].match(f"{name}=x"))


def key_shape(value: str) -> str | None:
    """What provider's key ``value`` contains ("an OpenAI key"), or None. Matches that are
    all letters or all digits are words, not keys (keeps false positives low)."""
    for what, pattern in _patterns()[0]:
        for match in pattern.finditer(value):
            token = match.group()
            if what == "a private key" or (
                any(c.isdigit() for c in token) and any(c.isalpha() for c in token[4:])
            ):
                return what
    return None


def redact(text: str) -> str:
    shapes, named = _patterns()
    text = named.sub(lambda m: f"{m[1]}{m[2]}{MASK}", text)
    for _, pattern in shapes:
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
