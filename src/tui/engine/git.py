"""Running the real ``git`` CLI: argv lists only (user text never meets a shell), a clean
environment, and one asyncio lock per repository so tui's own git operations on it never
overlap (git's index.lock guards against everyone else)."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tui.engine.errors import EngineError

# Variables that would point git somewhere else than the directory we name.
_GIT_LOCATION = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_PREFIX")


class GitError(EngineError):
    """A git command failed; the text names the command and git's own words."""


@dataclass
class GitResult:
    code: int
    out: str
    err: str


def _env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _GIT_LOCATION}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_EDITOR="true", LC_ALL="C")
    env.update(extra or {})
    return env


async def git(
    cwd: str | Path, *args: str, check: bool = True, env: Mapping[str, str] | None = None
) -> GitResult:
    """``git -C cwd ARGS``; with ``check`` a non-zero exit raises :class:`GitError`.
    ``env``: variables set for this command only (e.g. a temporary GIT_INDEX_FILE)."""
    try:
        proc = await asyncio.create_subprocess_exec(
            "git",
            "-C",
            str(cwd),
            *args,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=_env(env),
        )
    except FileNotFoundError:
        raise GitError("git is not installed (worktree tasks need the git command)") from None
    out, err = await proc.communicate()
    res = GitResult(
        proc.returncode or 0, out.decode(errors="replace"), err.decode(errors="replace")
    )
    if check and res.code != 0:
        said = res.err.strip() or res.out.strip() or f"exit code {res.code}"
        raise GitError(f"git {' '.join(args[:2])} in {cwd} failed: {said}")
    return res


class RepoLocks:
    """One lock per repository (its common git dir), for tui's git operations on it."""

    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}

    def of(self, repo: str) -> asyncio.Lock:
        return self._locks.setdefault(os.path.realpath(repo), asyncio.Lock())


def slug(name: str, limit: int = 40) -> str:
    """A branch-safe piece of a task name: lower-case letters, digits and single dashes."""
    text = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return text[:limit].rstrip("-") or "task"
