"""`agent.type: codex` — run the Codex CLI headless (``codex exec --json``).

The prompt is the last argv item (after ``--``; a very long one goes through stdin as ``-``),
stdin is otherwise closed, and the CLI prints one JSON event a line (thread.started,
turn.started, item.started/completed, turn.completed with usage, turn.failed, error). `codex exec`
never asks for approval: the sandbox chosen from permission_mode decides what commands may do.
The thread id is the session id; a new attempt runs ``codex exec resume <id>``.
See docs/codex.md.
"""

from __future__ import annotations

from collections.abc import Mapping

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
from tui.agents.codex_protocol import (
    DEFAULT_PRICES,
    NO_THREAD,
    PRICES_ENV,
    Renderer,
    Tally,
    build_argv,
    earlier_usage,
    is_noise,
    model_price,
    outcome,
    see,
)
from tui.agents.gemini_protocol import Price, price_table, with_system_append
from tui.agents.mcp_launch import codex_config_args, wanted
from tui.engine.adapter import RunContext, RunResult
from tui.model.agent_kinds import KINDS
from tui.model.system_parts import with_system

KIND = KINDS["codex"]
BIN_ENV = KIND.bin_env
NOT_FOUND = KIND.not_found


class CodexAdapter:
    type = KIND.name

    def __init__(
        self,
        bin: str = KIND.cli,
        extra_env: dict[str, str] | None = None,
        extra_args: list[str] | None = None,
        prices: Mapping[str, Price] | None = None,
    ) -> None:
        self.bin = bin
        self.extra_env = dict(extra_env or {})
        self.extra_args = list(extra_args or [])  # e.g. `-c model_provider=...` for every run
        self.prices = dict(prices or {})

    def binary(self, env: dict[str, str]) -> str:
        return find_cli(env, BIN_ENV, self.bin, NOT_FOUND)

    def argv(
        self, binary: str, ctx: RunContext, prompt: str, resume: str = ""
    ) -> tuple[list[str], bytes | None]:
        agent = ctx.task.agent
        mcp = codex_config_args(ctx.env, agent) if wanted(ctx.env, agent) else []
        if self.extra_args or mcp:
            agent = agent.model_copy(
                update={"additional_args": [*self.extra_args, *mcp, *agent.additional_args]}
            )
        return build_argv(binary, agent, prompt, resume=resume)

    async def run(self, ctx: RunContext) -> RunResult:
        agent = ctx.task.agent
        cwd = project_dir(agent)
        env = {**ctx.env, **self.extra_env}
        binary = self.binary(env)
        table = price_table(self.prices, env, env_name=PRICES_ENV, defaults=DEFAULT_PRICES)
        price = model_price(agent, table)
        self.argv(binary, ctx, "")  # refuses unsupported settings before anything starts
        if spent := budget_spent(agent, ctx.cost_so_far):
            return spent
        files = read_context_files(agent, cwd)
        fresh = with_system_append(first_prompt(agent.instructions, files), with_system(ctx.task))

        async def resume(session: str, prompt: str) -> RunResult | None:
            run = _Run(ctx, cwd, env, price, earlier_usage(ctx.previous_runs, session))
            result = await run.run(*self.argv(binary, ctx, prompt, resume=session))
            return None if run.lost_thread else result

        async def afresh() -> RunResult:
            return await _Run(ctx, cwd, env, price, (0, 0)).run(*self.argv(binary, ctx, fresh))

        return await resume_or_afresh(ctx, resume, afresh)


class _Run:
    def __init__(
        self,
        ctx: RunContext,
        cwd: str | None,
        env: dict[str, str],
        price: Price,
        earlier: tuple[int, int],
    ) -> None:
        self.ctx = ctx
        self.cwd = cwd
        self.env = env
        self.price = price
        self.earlier = earlier
        self.tally = Tally()
        self.renderer = Renderer()
        self.stderr = StderrTail(ctx, noise=is_noise)
        self.lost_thread = False

    async def run(self, argv: list[str], stdin: bytes | None) -> RunResult:
        code = await run_cli(
            self.ctx,
            argv,
            cwd=self.cwd,
            env=self.env,
            on_stdout=self.take,
            on_stderr=self.stderr,
            stdin=stdin,
        )
        return self.finish(code)

    def finish(self, code: int) -> RunResult:
        if code != 0 and not self.tally.thread_id:
            self.lost_thread = self.stderr.said(NO_THREAD)
        agent = self.ctx.task.agent
        out = outcome(
            code,
            self.tally,
            list(self.stderr.lines),
            self.price,
            self.earlier,
            agent.max_budget_usd,
            self.ctx.cost_so_far,
        )
        return RunResult(
            out.state,
            exit_code=code,
            error=out.error,
            cost_usd=out.cost_usd,
            tokens_in=out.tokens_in,
            tokens_out=out.tokens_out,
            session_id=self.tally.thread_id,
            result=out.result,
        )

    async def take(self, lines: list[str]) -> None:
        for msg in await record_json_lines(self.ctx, lines, self.renderer.render):
            see(self.tally, msg)
        await self.ctx.session_started(self.tally.thread_id)
