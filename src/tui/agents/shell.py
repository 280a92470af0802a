"""`agent.type: shell` — run the instructions as a script with the configured shell."""

from __future__ import annotations

from tui.agents.cli_process import project_dir, run_plain
from tui.engine.adapter import RunContext, RunResult
from tui.model.states import State


class ShellAdapter:
    type = "shell"

    async def run(self, ctx: RunContext) -> RunResult:
        cwd = project_dir(ctx.task.agent)
        # The script is one argv item, never spliced into another command line; $0 names the task.
        argv = [ctx.shell, "-c", ctx.task.agent.instructions, f"tui:{ctx.task.name}"]
        # Background jobs the script left behind would hold the pipes open and outlive the
        # task: run_cli ends the rest of the group once its leader is done.
        code, result = await run_plain(ctx, argv, cwd=cwd, env=ctx.env)
        if code == 0:
            return RunResult(State.COMPLETED, exit_code=0, result=result)
        return RunResult(State.FAILED, exit_code=code, error=_describe_exit(code))


def _describe_exit(code: int) -> str:
    if code < 0:
        import signal

        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"
