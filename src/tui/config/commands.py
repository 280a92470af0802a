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
    output: str  # stdout and stderr, interleaved as they arrived
    stdout: str = ""  # each stream alone: a failing command's message shows stderr first
    stderr: str = ""


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
    stdout and stderr are read from two pipes, so an error can show stderr on its own; the
    output joins their chunks in the order they arrived."""
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=cwd,
        start_new_session=True,
    )
    chunks: list[tuple[bool, bytes]] = []  # (from stderr, data) in arrival order

    async def drain(stream: asyncio.StreamReader | None, is_err: bool) -> None:
        assert stream is not None
        while data := await stream.read(65536):
            chunks.append((is_err, data))

    async def finish() -> None:
        await asyncio.gather(drain(proc.stdout, False), drain(proc.stderr, True))
        await proc.wait()

    try:
        await asyncio.wait_for(finish(), timeout or None)
        code: int | None = proc.returncode
    except TimeoutError:
        chunks, code = [], None
    finally:
        # Whatever it left running (or all of it, at the timeout) goes with it.
        await terminate_group(proc.pid, grace=0.5, proc=proc)

    def text(which: set[bool]) -> str:
        return b"".join(d for e, d in chunks if e in which).decode("utf-8", errors="replace")

    return CommandResult(code, text({False, True}), text({False}), text({True}))
