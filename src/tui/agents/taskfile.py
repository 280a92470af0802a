"""`agent.type: taskfile` — run one task of the project's `.agent/Taskfile.yml` with go-task.

The argv is built by :func:`tui.taskfile.running.run_argv` (never a shell string); `agent.vars`
arrive as go-task variables (`NAME K=V`), `agent.args` as `{{.CLI_ARGS}}`. go-task runs with
`--exit-code`, so a failing command's own code is the attempt's exit code (and retry policy
applies as for any failed attempt). A task with a `prompt:` becomes a question in tui; only
an explicit yes runs it (go-task then gets `--yes`).
"""

from __future__ import annotations

import asyncio

from tui.agents.cli_process import describe_exit, project_dir, run_plain
from tui.engine.adapter import AdapterError, RunContext, RunResult
from tui.model.states import State
from tui.taskfile.listing import TaskfileError, find_task, find_taskfile, task_binary
from tui.taskfile.running import (
    MISSING_VARS_EXIT,
    missing_vars_error,
    prompt_question,
    run_argv,
    said_yes,
)


class TaskfileAdapter:
    type = "taskfile"

    async def run(self, ctx: RunContext) -> RunResult:
        agent = ctx.task.agent
        cwd = project_dir(agent) or "."
        path = find_taskfile(cwd)
        if path is None:
            raise AdapterError(
                f"agent.task {agent.task!r}: no .agent/Taskfile.yml in {cwd}; "
                "create it or fix agent.project_dir"
            )
        try:
            entry = await asyncio.to_thread(find_task, path, agent.task)
            argv = run_argv(
                task_binary(),
                path,
                agent.task,
                agent.args,
                agent.vars,
                confirmed=bool(entry.prompts),
            )
        except TaskfileError as e:
            raise AdapterError(str(e)) from None
        for prompt in entry.prompts:
            prompt = entry.prompt_text(prompt, agent.task, agent.args, agent.vars)
            question = prompt_question(agent.task, prompt)
            if not said_yes(await ctx.ask("question", question), question):
                error = f"task {agent.task} not run: {prompt!r} was not answered yes"
                return RunResult(State.FAILED, error=error)
        code, result = await run_plain(ctx, argv, cwd=cwd, env=ctx.env)
        if code == 0:
            return RunResult(State.COMPLETED, exit_code=0, result=result)
        if code == MISSING_VARS_EXIT and entry.requires:
            error = missing_vars_error(entry, agent.task, agent.vars)
        else:
            error = f"task {agent.task} {describe_exit(code)}"
        return RunResult(State.FAILED, exit_code=code, error=error)
