"""`agent.type: gemini` — run the Gemini CLI headless (``--output-format stream-json``).

The prompt goes in on stdin (then stdin is closed), the CLI prints one JSON event a line (init,
message, tool_use, tool_result, error, result) and exits. There is no structured channel for
questions or approvals: what the approval mode does not allow is not offered to the model at all.
The stream carries tokens but no cost, so the cost is computed from a per-model price table.
See docs/gemini.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tui.agents.claude_protocol import (
    first_prompt,
    read_context_files,
    resume_or_afresh,
)
from tui.agents.cli_process import (
    StderrTail,
    budget_spent,
    find_cli,
    project_dir,
    record_json_lines,
    run_cli,
)
from tui.agents.gemini_protocol import (
    NO_SESSION,
    NOISE_PREFIXES,
    Price,
    Renderer,
    ResultText,
    build_argv,
    outcome,
    price_table,
    with_system_append,
)
from tui.agents.mcp_launch import gemini_home, wanted
from tui.engine.adapter import RunContext, RunResult
from tui.model.agent_kinds import KINDS
from tui.model.system_parts import with_system
from tui.store.records import STDOUT

KIND = KINDS["gemini"]
BIN_ENV = KIND.bin_env
NOT_FOUND = KIND.not_found


class GeminiAdapter:
    type = KIND.name

    def __init__(
        self,
        bin: str = KIND.cli,
        extra_env: dict[str, str] | None = None,
        prices: Mapping[str, Price] | None = None,
    ) -> None:
        self.bin = bin
        self.extra_env = dict(extra_env or {})
        self.prices = dict(prices or {})

    def binary(self, env: dict[str, str]) -> str:
        """The CLI to run: $TUI_GEMINI_BIN, else ``bin``, looked up on the task's PATH."""
        return find_cli(env, BIN_ENV, self.bin, NOT_FOUND)

    async def run(self, ctx: RunContext) -> RunResult:
        env = {**ctx.env, **self.extra_env}
        agent = ctx.task.agent
        mcp = wanted(ctx.env, agent)
        if not mcp and not agent.max_turns:
            return await self._run(ctx, env)
        # Both reach gemini only through a settings file: the run gets a copy of its own.
        with gemini_home(env, agent, mcp=mcp) as home_env:
            return await self._run(ctx, {**env, **home_env})

    async def _run(self, ctx: RunContext, env: dict[str, str]) -> RunResult:
        agent = ctx.task.agent
        cwd = project_dir(agent)
        binary = self.binary(env)
        table = price_table(self.prices, env)
        build_argv(binary, agent)  # refuses unsupported settings before anything starts
        if spent := budget_spent(agent, ctx.cost_so_far):
            return spent
        files = read_context_files(agent, cwd)
        fresh = with_system_append(first_prompt(agent.instructions, files), with_system(ctx.task))

        async def resume(session: str, prompt: str) -> RunResult | None:
            run = _Run(ctx, cwd, env, table)
            result = await run.run(build_argv(binary, agent, resume=session), prompt)
            return None if run.lost_session else result

        async def afresh() -> RunResult:
            return await _Run(ctx, cwd, env, table).run(build_argv(binary, agent), fresh)

        return await resume_or_afresh(ctx, resume, afresh)


class _Run:
    """One CLI process: feeds the prompt, pumps the output, reports the outcome."""

    def __init__(
        self, ctx: RunContext, cwd: str | None, env: dict[str, str], table: list[tuple[str, Price]]
    ) -> None:
        self.ctx = ctx
        self.cwd = cwd
        self.env = env
        self.table = table
        self.session_id = ""
        self.result_line: dict[str, Any] | None = None
        self.errors: list[str] = []
        # Stack frames say nothing a person can act on; the message lines do.
        self.stderr = StderrTail(
            ctx,
            noise=lambda ln: ln.startswith(NOISE_PREFIXES),
            quotable=lambda ln: not ln.startswith("at "),
        )
        self.renderer = Renderer(cwd)
        self.text = ResultText()
        self.lost_session = False

    async def run(self, argv: list[str], prompt: str) -> RunResult:
        code = await run_cli(
            self.ctx,
            argv,
            cwd=self.cwd,
            env=self.env,
            on_stdout=self.take,
            on_stderr=self.stderr,
            stdin=prompt.encode(),
        )
        tail = self.renderer.flush()  # what the renderer still held when the output ended
        if tail:
            await self.ctx.output(STDOUT, tail)
        return self.finish(code)

    def finish(self, code: int) -> RunResult:
        if code == 42 and not self.session_id and self.stderr.said(NO_SESSION):
            self.lost_session = True
        agent = self.ctx.task.agent
        out = outcome(
            code,
            self.result_line,
            self.text.text,
            self.errors,
            list(self.stderr.lines),
            self.table,
            agent.max_budget_usd,
            self.ctx.cost_so_far,
        )
        return RunResult(
            out.state,
            exit_code=code,
            error=out.error,
            cost_usd=out.usage.cost_usd,
            tokens_in=out.usage.tokens_in,
            tokens_out=out.usage.tokens_out,
            session_id=self.session_id,
            result=out.result,
        )

    async def take(self, lines: list[str]) -> None:
        for msg in await record_json_lines(self.ctx, lines, self.renderer.render, self.text_line):
            self.see(msg)
        await self.ctx.session_started(self.session_id)

    def text_line(self, line: str) -> list[str]:
        return [*self.renderer.flush(), line]

    def see(self, msg: dict[str, Any]) -> None:
        kind = msg.get("type")
        self.text.see(msg)
        if kind == "init":
            self.session_id = str(msg.get("session_id") or self.session_id)
        elif kind == "error":
            self.errors.append(str(msg.get("message") or ""))
        elif kind == "result":
            self.result_line = msg
