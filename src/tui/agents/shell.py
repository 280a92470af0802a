"""`agent.type: shell` — run the instructions as a script with the configured shell.

A script that is one plain command (``pytest -q tests``) is started without the shell when
that changes nothing a user can see (:mod:`tui.agents.direct_exec`): bash would exec it in its
own process anyway, and starting bash first costs about a millisecond of CPU per task.
"""

from __future__ import annotations

from tui.agents.cli_process import adopt_plain, project_dir, run_plain
from tui.agents.direct_exec import plan
from tui.engine.adapter import RunContext, RunResult
from tui.model.states import State
from tui.procs.process import Child


class ShellAdapter:
    type = "shell"

    async def run(self, ctx: RunContext) -> RunResult:
        cwd = project_dir(ctx.task.agent)
        script = ctx.task.agent.instructions
        # The script is one argv item, never spliced into another command line; $0 names the task.
        argv = [ctx.shell, "-c", script, f"tui:{ctx.task.name}"]
        # Background jobs the script left behind would hold the pipes open and outlive the
        # task: run_cli ends the rest of the group once its leader is done.
        direct = plan(script, ctx.shell, ctx.env, cwd or ".")
        if direct is None:
            code, result = await run_plain(ctx, argv, cwd=cwd, env=ctx.env)
        else:
            # If the exec fails (a script without #!, a missing interpreter), nothing ran:
            # the shell then runs it and says what is wrong, as it always would.
            code, result = await run_plain(
                ctx,
                direct.argv,
                cwd=cwd,
                env=direct.env,
                executable=direct.executable,
                fallback=(argv, ctx.env),
            )
        return _ended(code, result)

    async def adopt(
        self, ctx: RunContext, proc: Child, offsets: tuple[int, int], tail: list[str]
    ) -> RunResult:
        """A script a dead engine started, carried on (tui.engine.adoption)."""
        return _ended(*await adopt_plain(ctx, proc, offsets, tail))


def _ended(code: int, result: str) -> RunResult:
    if code == 0:
        return RunResult(State.COMPLETED, exit_code=0, result=result)
    return RunResult(State.FAILED, exit_code=code, error=_describe_exit(code), result=result)


def _describe_exit(code: int) -> str:
    if code < 0:
        import signal

        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"
