"""Run a config's ``command`` for ``{command_output}``: ``SHELL -c COMMAND`` (or the way the
configured interpreter takes a script: ``node -e``, ``python -c``...) with the command string
from the config only (user text never reaches a shell), in its own process group."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from tui.config.interpreters import script_argv
from tui.procs.process import terminate_group


@dataclass(frozen=True)
class CommandResult:
    exit_code: int | None  # None: stopped at the timeout
    output: str  # stdout and stderr, interleaved as written


async def run_command(
    command: str,
    *,
    shell: str,
    timeout: float,
    cwd: str,
    shell_args: Sequence[str] | None = None,
) -> CommandResult:
    return await run_argv(script_argv(shell, command, shell_args), timeout=timeout, cwd=cwd)


async def run_argv(argv: list[str], *, timeout: float, cwd: str | None = None) -> CommandResult:
    """Run ``argv`` to its end or ``timeout`` (0 = none); OSError when it cannot start.
    stdout and stderr share one pipe, so the output keeps the order it was written in."""
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        cwd=cwd,
        start_new_session=True,
    )
    try:
        async with asyncio.timeout(timeout or None):
            out, _ = await proc.communicate()
        code: int | None = proc.returncode
    except TimeoutError:
        out, code = b"", None
    finally:
        # Whatever it left running (or all of it, at the timeout) goes with it.
        await terminate_group(proc.pid, grace=0.5, proc=proc)
    return CommandResult(code, out.decode("utf-8", errors="replace"))
