"""What every CLI adapter does around its agent process, written once.

:func:`run_cli` starts the CLI in its own process group, reports it to the engine, feeds its
stdin, hands its stdout and stderr to per-batch callbacks (split by :class:`LineSplitter`), waits
for it and ends whatever it left behind — on success, failure and cancellation alike.
:func:`record_json_lines` and :class:`StderrTail` are the usual callbacks for CLIs that print one
JSON event a line; :func:`find_cli` and :func:`budget_spent` are the checks made before starting.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from tui.agents.result_tail import ResultTail
from tui.engine.adapter import AdapterError, RunContext, RunResult
from tui.model.states import State
from tui.model.task import AgentConfig
from tui.procs.groups import terminate_group
from tui.procs.lines import LineSplitter
from tui.procs.process import Child, InPipe, OutPipe
from tui.store.records import RAW, STDERR, STDOUT

READ_CHUNK = 256 * 1024
GRACE = 1.0  # seconds between SIGTERM and SIGKILL for what the CLI leaves behind

OnLines = Callable[[list[str]], Awaitable[None]]
OnStart = Callable[[Child], Awaitable[None]]
Fallback = tuple[Sequence[str], Mapping[str, str] | None]


async def run_cli(
    ctx: RunContext,
    argv: Sequence[str],
    *,
    cwd: str | None,
    env: Mapping[str, str] | None,
    on_stdout: OnLines,
    on_stderr: OnLines,
    stdin: bytes | None = None,
    on_start: OnStart | None = None,
    executable: str | None = None,
    fallback: Fallback | None = None,
    stdout_bytes: Callable[[bytes], None] | None = None,
    ends: tuple[Offset, Offset] | None = None,
) -> int:
    """Run ``argv`` to the end and return its exit code (negative: killed by that signal).

    ``stdin`` is written to the CLI and then closed; without it stdin is /dev/null, unless
    ``on_start`` is given: then stdin stays an open pipe, and ``on_start(proc)`` runs once the
    process is reported, before its output is read, to write to it (and close it) as it likes.
    ``executable`` is the file to run if not ``argv[0]``. When it cannot be started at all (its
    exec failed, so nothing of it ran), ``fallback`` (argv, env) is started instead.
    ``stdout_bytes`` sees stdout as read, before it is split into lines. ``ends`` (stdout's,
    stderr's) are kept at the byte offset where the lines handed on so far end.
    """
    keep_open = on_start is not None
    pipe = asyncio.subprocess.PIPE if stdin is not None or keep_open else asyncio.subprocess.DEVNULL
    try:
        proc = await ctx.spawner(argv, cwd=cwd, env=env, stdin=pipe, executable=executable)
    except OSError:
        if fallback is None:
            raise
        argv, env = fallback
        proc = await ctx.spawner(argv, cwd=cwd, env=env, stdin=pipe)

    # The engine told first, then ``on_start``; a run without one awaits the engine's own
    # coroutine (a closure and a coroutine fewer a run).
    started: Awaitable[None] = ctx.process_started(proc)
    if on_start is not None:
        told = started

        async def both() -> None:
            await told
            await on_start(proc)

        started = both()
    return await follow(
        proc, on_stdout, on_stderr, stdout_bytes, ends, started, stdin, close_stdin=not keep_open
    )


async def follow(
    proc: Child,
    on_stdout: OnLines,
    on_stderr: OnLines,
    stdout_bytes: Callable[[bytes], None] | None = None,
    ends: tuple[Offset, Offset] | None = None,
    started: Awaitable[None] | None = None,
    stdin: bytes | None = None,
    *,
    close_stdin: bool = True,
) -> int:
    """A started CLI to its end (``started`` awaited first, then ``stdin`` written to it): its
    output read, what it left behind ended; its exit code. Also the way an adopted agent is carried
    on (tui.engine.adoption)."""
    # While it runs each stream is read by a task of its own, awaited directly (gather() cost
    # two more callbacks a run, and a future, for nothing a caller sees).
    readers: list[asyncio.Task[None]] = []
    ended = False  # the group is known to be gone
    out_end, err_end = ends if ends is not None else (None, None)
    try:
        if started is not None:
            await started
        pipe_in = proc.stdin if stdin is not None else None
        if pipe_in is None:
            # Nothing to write to it: no reader is needed before it prints or exits (a kept
            # child says which comes first; a quiet command's exit then comes with no task).
            await proc.heard()
        if proc.returncode is None:
            loop = asyncio.get_running_loop()
            readers.append(loop.create_task(_read(proc.stdout, on_stdout, stdout_bytes, out_end)))
            readers.append(loop.create_task(_read(proc.stderr, on_stderr, None, err_end)))
            if pipe_in is not None and stdin is not None:
                readers.append(loop.create_task(_feed(pipe_in, stdin, close=close_stdin)))
            code = await proc.wait()
        else:
            # It has exited (before it printed, or before its follower came to read): its
            # output is read below, here, with no task a stream.
            code = proc.returncode
        # Whatever the CLI started and left behind (shells, servers, `sleep &`) ends with it;
        # until then it would hold the pipes open.
        await terminate_group(proc.pid, grace=GRACE)
        ended = True
        if readers:
            for reader in readers:
                await reader
        else:
            if pipe_in is not None and stdin is not None:
                await _feed(pipe_in, stdin, close=close_stdin)
            await _read(proc.stdout, on_stdout, stdout_bytes, out_end)
            await _read(proc.stderr, on_stderr, None, err_end)
    finally:
        if not ended:  # cancelled or crashed: do not leave the CLI or its group behind
            await terminate_group(proc.pid, grace=GRACE, proc=proc)
        for reader in readers:
            if not reader.done():
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await reader
            elif not reader.cancelled():
                reader.exception()  # seen: not logged as never retrieved
        proc.close_pipes()
    return code


async def run_plain(
    ctx: RunContext,
    argv: Sequence[str],
    *,
    cwd: str | None,
    env: Mapping[str, str] | None,
    executable: str | None = None,
    fallback: Fallback | None = None,
) -> tuple[int, str]:
    """Run a command whose output is plain text (a script, a Taskfile task): record stdout and
    stderr as they are, return the exit code and the last stdout lines as the result
    (tui.agents.result_tail). ``executable`` and ``fallback`` as for :func:`run_cli`."""
    tail = ResultTail()
    ends = (Offset(), Offset())
    stdout, stderr = plain_output(ctx, ends)
    code = await run_cli(
        ctx,
        argv,
        cwd=cwd,
        env=env,
        on_stdout=stdout,
        on_stderr=stderr,
        executable=executable,
        fallback=fallback,
        stdout_bytes=tail.feed,
        ends=ends,
    )
    return code, tail.result()


async def adopt_plain(
    ctx: RunContext, proc: Child, offsets: tuple[int, int], tail: list[str]
) -> tuple[int, str]:
    """:func:`run_plain` for a command a dead engine started (tui.engine.adoption): its
    output from ``offsets`` on, its result from ``tail`` (its last stored stdout lines) and
    what follows."""
    result = ResultTail()
    if tail:
        result.feed(("\n".join(tail) + "\n").encode())
    ends = (Offset(offsets[0]), Offset(offsets[1]))
    stdout, stderr = plain_output(ctx, ends)
    code = await follow(proc, stdout, stderr, result.feed, ends)
    return code, result.result()


class Offset:
    """How far into one stream of the agent the lines handed on so far reach, in bytes (at
    a line's end: a partial line is not counted until it is whole)."""

    __slots__ = ("at", "read")

    def __init__(self, at: int = 0) -> None:
        self.at = at  # the end of the last whole line
        self.read = at  # bytes read


def plain_output(ctx: RunContext, ends: tuple[Offset, Offset]) -> tuple[OnLines, OnLines]:
    """The stdout and stderr callbacks of a plain command: lines stored as they are, with
    where they end in the agent's streams."""

    async def stdout(lines: list[str]) -> None:
        await ctx.output(STDOUT, lines, ends[0].at)

    async def stderr(lines: list[str]) -> None:
        await ctx.output(STDERR, lines, ends[1].at)

    return stdout, stderr


async def _read(
    stream: OutPipe,
    on_lines: OnLines,
    on_bytes: Callable[[bytes], None] | None = None,
    end: Offset | None = None,
) -> None:
    chunk = await stream.read(READ_CHUNK)
    if not chunk:  # most commands print nothing on one of their streams: no decoder for it
        return
    splitter = LineSplitter()
    while True:
        if on_bytes is not None and chunk:
            on_bytes(chunk)
        if end is not None:
            # A line ends at each b"\n" (UTF-8 never has it inside a character); at EOF the
            # unfinished last line is handed on too.
            end.read += len(chunk)
            newline = chunk.rfind(b"\n")
            if not chunk:
                end.at = end.read
            elif newline >= 0:
                end.at = end.read - len(chunk) + newline + 1
        lines = splitter.feed(chunk) if chunk else splitter.flush()
        if lines:
            await on_lines(lines)
        if not chunk:
            return
        chunk = await stream.read(READ_CHUNK)


async def _feed(stdin: InPipe, data: bytes, *, close: bool) -> None:
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stdin.write(data)
        await stdin.drain()
    if close:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            stdin.close()


def describe_exit(code: int, meanings: Mapping[int, str] | None = None) -> str:
    """``exited with code 1`` (with its meaning, if ``meanings`` has one) or ``was killed by
    SIGTERM``, to follow the CLI's name in an error."""
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    meaning = (meanings or {}).get(code)
    return f"exited with code {code} ({meaning})" if meaning else f"exited with code {code}"


# -- stdout: one JSON event a line ---------------------------------------------------------


def parse_json_line(line: str) -> dict[str, Any] | None:
    """The JSON object on ``line``, or None for anything else (text, arrays, broken JSON)."""
    if not line.startswith("{"):
        return None
    try:
        msg = json.loads(line)
    except ValueError:
        return None
    return msg if isinstance(msg, dict) else None


def field_object(msg: Mapping[str, Any], key: str) -> dict[str, Any]:
    """``msg[key]`` when it is a JSON object, else {} (a CLI's event may lack it or be odd)."""
    value = msg.get(key)
    return value if isinstance(value, dict) else {}


def _as_is(line: str) -> list[str]:
    return [line]


async def record_json_lines(
    ctx: RunContext,
    lines: list[str],
    render: Callable[[dict[str, Any]], list[str]],
    text: Callable[[str], list[str]] = _as_is,
) -> list[dict[str, Any]]:
    """Record a batch of stdout lines and return its JSON events, in order.

    An event goes to RAW as it came and to STDOUT as ``render`` shows it; any other non-blank
    line goes to STDOUT as ``text`` shows it.
    """
    raw: list[str] = []
    readable: list[str] = []
    messages: list[dict[str, Any]] = []
    for line in lines:
        msg = parse_json_line(line)
        if msg is None:
            if line.strip():
                readable.extend(text(line))
            continue
        raw.append(line)
        readable.extend(render(msg))
        messages.append(msg)
    if raw:
        await ctx.output(RAW, raw)
    if readable:
        await ctx.output(STDOUT, readable)
    return messages


# -- stderr --------------------------------------------------------------------------------


def _never(_line: str) -> bool:
    return False


def _always(_line: str) -> bool:
    return True


class StderrTail:
    """stderr callback: records the lines that are not ``noise`` and keeps the last few
    non-blank ones (stripped, those ``quotable``) to explain a failure with."""

    def __init__(
        self,
        ctx: RunContext,
        *,
        noise: Callable[[str], bool] = _never,
        quotable: Callable[[str], bool] = _always,
        size: int = 5,
    ) -> None:
        self.ctx = ctx
        self.noise = noise
        self.quotable = quotable
        self.lines: deque[str] = deque(maxlen=size)

    async def __call__(self, lines: list[str]) -> None:
        kept = [ln for ln in lines if not self.noise(ln)]
        if kept:
            self.lines.extend(s for ln in kept if (s := ln.strip()) and self.quotable(s))
            await self.ctx.output(STDERR, kept)

    def said(self, text: str) -> bool:
        """Whether one of the kept lines contains ``text``."""
        return any(text in ln for ln in self.lines)


# -- before starting -----------------------------------------------------------------------


def find_cli(env: Mapping[str, str], bin_env: str, default: str, not_found: str) -> str:
    """The CLI to run: $``bin_env`` (task env first), else ``default``, looked up on the
    task's PATH; AdapterError(``not_found``...) when there is none."""
    name = os.path.expanduser(env.get(bin_env) or os.environ.get(bin_env) or default)
    if os.sep in name:
        if os.path.isfile(name) and os.access(name, os.X_OK):
            return name
        raise AdapterError(f"{not_found} ({name} is not an executable file)")
    found = shutil.which(name, path=env.get("PATH", os.defpath))
    if found is None:
        raise AdapterError(not_found)
    return found


def project_dir(agent: AgentConfig) -> str | None:
    """agent.project_dir expanded, or None; AdapterError when it is not a directory."""
    cwd = os.path.expanduser(agent.project_dir) if agent.project_dir else None
    if cwd and not os.path.isdir(cwd):
        raise AdapterError(f"agent.project_dir {cwd!r} is not a directory")
    return cwd


def budget_spent(agent: AgentConfig, spent: float) -> RunResult | None:
    """BUDGET_EXCEEDED when earlier attempts already used up agent.max_budget_usd."""
    budget = agent.max_budget_usd
    if budget > 0 and spent >= budget:
        return RunResult(
            State.BUDGET_EXCEEDED,
            error=f"earlier attempts already spent ${spent:.4f} of the ${budget:g} budget",
        )
    return None
