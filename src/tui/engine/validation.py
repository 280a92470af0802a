"""A finished attempt's result checked before the task completes: ``output_format`` parsed
(and matched to its schema), then its ``validate`` command, if any, asked.

The command is an argv (never a shell string): the result arrives on its stdin, never in its
arguments; exit 0 accepts it, anything else rejects it, and a command that outlives
``validate_timeout`` rejects it too. It runs in a process group of its own, always ended
before we return, with the run's TUI_* marker in its environment, so an engine killed
meanwhile leaves nothing behind that recovery would not find (engine/recovery.py).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field

from tui.engine.runner import ENV_ENGINE_ID, ENV_RUN_ID
from tui.model.duration import format_duration
from tui.model.output_format import KEPT, OutputFormat, OutputFormatError, parse_result
from tui.model.task import Task
from tui.procs.groups import terminate_group
from tui.procs.lines import LineSplitter
from tui.procs.process import OutPipe, spawn
from tui.store.records import TaskRecord

KEEP_LINES = 40  # of the command's output, stored with the task (the last ones)
READ_LIMIT = 1 << 20  # bytes of its output read at most; the rest is drained unread
KILL_GRACE = 2.0


@dataclass
class Checked:
    """The verdict on one result: ``error`` empty when accepted; ``value`` what to store."""

    error: str = ""
    value: object = None
    note: str = ""  # a parse error kept with the raw text (on_parse_error: keep)
    lines: list[str] = field(default_factory=list)  # what the validate command printed


def validator_env(
    rec: TaskRecord, run_id: int, attempt: int, engine_id: str, db_path: str
) -> dict[str, str]:
    """The environment of the run's own processes: the task's env, TUI_* and the marker."""
    return {
        **os.environ,
        **rec.task.agent.env,
        "TUI_TASK_ID": rec.id,
        ENV_RUN_ID: str(run_id),
        ENV_ENGINE_ID: engine_id,
        "TUI_ATTEMPT": str(attempt),
        "TUI_DB": db_path,
    }


def validator_cwd(task: Task) -> str | None:
    """The task's project directory, where its agent ran."""
    return os.path.expanduser(task.agent.project_dir) if task.agent.project_dir else None


async def check_result(
    fmt: OutputFormat, text: str | None, *, cwd: str | None, env: Mapping[str, str]
) -> Checked:
    try:
        parsed = parse_result(fmt, text)
    except OutputFormatError as e:
        return Checked(error=f"output_format: {e}")
    out = Checked(value=parsed.value)
    if parsed.kept_error:
        out.note = f"output_format: {parsed.kept_error}; {KEPT}"
    if fmt.validate_:
        # What the command reads: the JSON value, or the text as it is (a kept raw text too).
        data = parsed.value if isinstance(parsed.value, str) else json.dumps(parsed.value)
        out.error, out.lines = await run_validator(
            fmt.validate_, data.encode(), cwd=cwd, env=env, timeout=fmt.validate_timeout
        )
    return out


async def run_validator(
    argv: list[str], data: bytes, *, cwd: str | None, env: Mapping[str, str], timeout: float
) -> tuple[str, list[str]]:
    """("" or why the command rejected ``data``, the last lines it printed)."""
    try:
        proc = await spawn(argv, cwd=cwd, env=dict(env), stdin=subprocess.PIPE)
    except OSError as e:
        return f"validate: cannot run {argv[0]!r}: {e.strerror or e}", []
    lines: list[str] = []

    async def feed() -> None:
        assert proc.stdin is not None
        try:
            proc.stdin.write(data)
            await proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            pass  # a command that does not read its input judges by other means
        finally:
            proc.stdin.close()

    async def collect(pipe: OutPipe) -> None:
        splitter, read = LineSplitter(), 0
        while chunk := await pipe.read(65536):
            if read < READ_LIMIT:
                lines.extend(splitter.feed(chunk[: READ_LIMIT - read]))
                del lines[:-KEEP_LINES]
            read += len(chunk)
        lines.extend(splitter.flush())
        del lines[:-KEEP_LINES]

    # Its exit is the verdict: what it left running (holding the pipes) is ended with it.
    readers = asyncio.gather(collect(proc.stdout), collect(proc.stderr))
    feeder = asyncio.ensure_future(feed())
    code: int | None = None
    try:
        async with asyncio.timeout(timeout):
            code = await proc.wait()
    except TimeoutError:
        pass
    finally:
        await terminate_group(proc.pid, grace=KILL_GRACE, proc=proc)
        feeder.cancel()
        try:
            async with asyncio.timeout(KILL_GRACE):  # the group is gone: the pipes are at EOF
                await readers
        except TimeoutError:
            readers.cancel()
        proc.close_pipes()
    if code is None:
        return f"validate: {argv[0]} gave no verdict within {format_duration(timeout)}", lines
    if code == 0:
        return "", lines
    last = next((ln for ln in reversed(lines) if ln.strip()), "")
    how = f"exit code {code}" if code > 0 else f"killed by signal {-code}"
    return f"validate: {os.path.basename(argv[0])} rejected the result ({how})" + (
        f": {last.strip()}" if last else ""
    ), lines
