"""`agent.type: shell` — run the instructions as a script with the configured shell."""

from __future__ import annotations

import asyncio
import os
from collections import deque

from tui.agents.base import AdapterError, RunContext, RunResult
from tui.agents.lines import LineSplitter
from tui.engine.procs import spawn, terminate_group, wait_leader
from tui.model.states import State
from tui.store.records import STDERR, STDOUT

READ_CHUNK = 256 * 1024
RESULT_LINES = 20  # the last stdout lines are the task's result (shown in a review)


class ShellAdapter:
    type = "shell"

    async def run(self, ctx: RunContext) -> RunResult:
        agent = ctx.task.agent
        cwd = os.path.expanduser(agent.project_dir) if agent.project_dir else None
        if cwd and not os.path.isdir(cwd):
            raise AdapterError(f"agent.project_dir {cwd!r} is not a directory")
        # The script is one argv item, never spliced into another command line; $0 names the task.
        argv = [ctx.shell, "-c", agent.instructions, f"tui:{ctx.task.name}"]
        proc, ident = await spawn(argv, cwd=cwd, env=ctx.env)
        await ctx.process_started(proc, ident)
        assert proc.stdout is not None and proc.stderr is not None
        tail: deque[str] = deque(maxlen=RESULT_LINES)
        readers = asyncio.gather(
            pump(proc.stdout, STDOUT, ctx, tail), pump(proc.stderr, STDERR, ctx)
        )
        code = await wait_leader(proc)
        # Background jobs the script left behind would hold the pipes open and outlive the
        # task: end the rest of the group once its leader is done.
        await terminate_group(ident.pgid, grace=1.0)
        await readers
        if code == 0:
            return RunResult(State.COMPLETED, exit_code=0, result="\n".join(tail))
        return RunResult(State.FAILED, exit_code=code, error=_describe_exit(code))


async def pump(
    stream: asyncio.StreamReader, which: int, ctx: RunContext, keep: deque[str] | None = None
) -> None:
    splitter = LineSplitter()
    while True:
        chunk = await stream.read(READ_CHUNK)
        lines = splitter.feed(chunk) if chunk else splitter.flush()
        if lines:
            await ctx.output(which, lines)
            if keep is not None:
                keep.extend(lines[-RESULT_LINES:])
        if not chunk:
            return


def _describe_exit(code: int) -> str:
    if code < 0:
        import signal

        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"
