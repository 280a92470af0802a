"""Run a config's ``command`` for ``{command_output}``: ``SHELL -c COMMAND`` (or the way the
configured interpreter takes a script: ``node -e``, ``python -c``...) with the command string
from the config only (user text never reaches a shell), in its own process group."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from tui.config.interpreters import script_argv
from tui.procs.groups import terminate_group


@dataclass(frozen=True)
class CommandResult:
    exit_code: int | None  # None: stopped at the timeout
    output: str  # stdout and stderr, whole lines interleaved as they arrived
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
    output interleaves their lines as they arrived (the order they were written in, unless
    both streams wrote between two reads)."""
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=cwd,
        start_new_session=True,
    )
    # Whole lines in the order they arrived (a line is placed when its newline comes, so
    # one stream's unfinished line is never glued to the other's; a last line without one
    # goes at the end), and each stream alone.
    lines: list[bytes] = []
    tails: list[bytes] = []
    streams: dict[bool, list[bytes]] = {False: [], True: []}  # is stderr → its data

    async def drain(stream: asyncio.StreamReader | None, is_err: bool) -> None:
        assert stream is not None
        partial = b""
        while data := await stream.read(65536):
            streams[is_err].append(data)
            *done, partial = (partial + data).split(b"\n")
            lines.extend(line + b"\n" for line in done)
        if partial:
            tails.append(partial)

    async def finish() -> None:
        await asyncio.gather(drain(proc.stdout, False), drain(proc.stderr, True))
        await proc.wait()

    try:
        async with asyncio.timeout(timeout or None):
            await finish()
        code: int | None = proc.returncode
    except TimeoutError:
        lines, tails, code = [], [], None
    finally:
        # Whatever it left running (or all of it, at the timeout) goes with it.
        await terminate_group(proc.pid, grace=0.5, proc=proc)

    def text(parts: list[bytes]) -> str:
        return b"".join(parts).decode("utf-8", errors="replace")

    if code is None:
        streams = {False: [], True: []}
    return CommandResult(code, text(lines + tails), text(streams[False]), text(streams[True]))
