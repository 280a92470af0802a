"""`agent.type: codex` — run the Codex CLI headless (``codex exec --json``).

The prompt is the last argv item (after ``--``; a very long one goes through stdin as ``-``),
stdin is otherwise closed, and the CLI prints one JSON event a line (thread.started,
turn.started, item.started/completed, turn.completed with usage, turn.failed, error). `codex exec`
never asks for approval: the sandbox chosen from permission_mode decides what commands may do.
The thread id is the session id; a new attempt runs ``codex exec resume <id>``.
See docs/codex.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
from collections import deque
from collections.abc import Mapping
from typing import Any

from tui.agents.base import AdapterError, RunContext, RunResult
from tui.agents.claude_protocol import (
    first_prompt,
    latest_session,
    read_context_files,
    resume_prompt,
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
    with_system_append,
)
from tui.agents.gemini_protocol import Price, price_table
from tui.agents.lines import LineSplitter
from tui.engine.procs import spawn, terminate_group, wait_leader
from tui.model.states import State
from tui.store.records import RAW, STDERR, STDOUT

READ_CHUNK = 256 * 1024
BIN_ENV = "TUI_CODEX_BIN"
NOT_FOUND = "codex CLI not found: install with npm i -g @openai/codex, or set TUI_CODEX_BIN"


class CodexAdapter:
    type = "codex"

    def __init__(
        self,
        bin: str = "codex",
        extra_env: dict[str, str] | None = None,
        extra_args: list[str] | None = None,
        prices: Mapping[str, Price] | None = None,
    ) -> None:
        self.bin = bin
        self.extra_env = dict(extra_env or {})
        self.extra_args = list(extra_args or [])  # e.g. `-c model_provider=...` for every run
        self.prices = dict(prices or {})

    def binary(self, env: dict[str, str]) -> str:
        name = os.path.expanduser(env.get(BIN_ENV) or os.environ.get(BIN_ENV) or self.bin)
        if os.sep in name:
            if os.path.isfile(name) and os.access(name, os.X_OK):
                return name
            raise AdapterError(f"{NOT_FOUND} ({name} is not an executable file)")
        found = shutil.which(name, path=env.get("PATH", os.defpath))
        if found is None:
            raise AdapterError(NOT_FOUND)
        return found

    def argv(
        self, binary: str, ctx: RunContext, prompt: str, resume: str = ""
    ) -> tuple[list[str], bytes | None]:
        agent = ctx.task.agent
        if self.extra_args:
            agent = agent.model_copy(
                update={"additional_args": [*self.extra_args, *agent.additional_args]}
            )
        return build_argv(binary, agent, prompt, resume=resume)

    async def run(self, ctx: RunContext) -> RunResult:
        agent = ctx.task.agent
        cwd = os.path.expanduser(agent.project_dir) if agent.project_dir else None
        if cwd and not os.path.isdir(cwd):
            raise AdapterError(f"agent.project_dir {cwd!r} is not a directory")
        env = {**ctx.env, **self.extra_env}
        binary = self.binary(env)
        table = price_table(self.prices, env, env_name=PRICES_ENV, defaults=DEFAULT_PRICES)
        price = model_price(agent, table)
        self.argv(binary, ctx, "")  # refuses unsupported settings before anything starts
        budget, spent = agent.max_budget_usd, ctx.cost_so_far
        if budget > 0 and spent >= budget:
            return RunResult(
                State.BUDGET_EXCEEDED,
                error=f"earlier attempts already spent ${spent:.4f} of the ${budget:g} budget",
            )
        files = read_context_files(agent, cwd)
        session = latest_session(ctx.previous_runs)
        if session:
            prompt = resume_prompt(ctx.previous_runs, ctx.rejection_comment, ctx.late_answers)
            run = _Run(ctx, cwd, env, price, earlier_usage(ctx.previous_runs, session))
            result = await run.run(*self.argv(binary, ctx, prompt, resume=session))
            if not run.lost_thread:
                return result
            await ctx.output(STDERR, [f"[tui] session {session} is gone; starting afresh"])
        prompt = with_system_append(first_prompt(agent.instructions, files), agent)
        return await _Run(ctx, cwd, env, price, (0, 0)).run(*self.argv(binary, ctx, prompt))


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
        self.stderr_tail: deque[str] = deque(maxlen=5)
        self.lost_thread = False

    async def run(self, argv: list[str], stdin: bytes | None) -> RunResult:
        pipe = asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL
        proc, ident = await spawn(argv, cwd=self.cwd, env=self.env, stdin=pipe)
        readers: asyncio.Future[Any] | None = None
        try:
            await self.ctx.process_started(proc, ident)
            assert proc.stdout is not None and proc.stderr is not None
            jobs = [self.read_stdout(proc.stdout), self.read_stderr(proc.stderr)]
            if stdin is not None and proc.stdin is not None:
                jobs.append(_feed(proc.stdin, stdin))
            readers = asyncio.gather(*jobs)
            code = await wait_leader(proc)
            await terminate_group(ident.pgid, grace=1.0)
            await readers
        finally:
            if proc.returncode is None:
                await terminate_group(ident.pgid, grace=1.0, proc=proc)
            if readers is not None and not readers.done():
                readers.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await readers
        return self.finish(code)

    def finish(self, code: int) -> RunResult:
        if code != 0 and not self.tally.thread_id:
            self.lost_thread = any(NO_THREAD in ln for ln in self.stderr_tail)
        agent = self.ctx.task.agent
        out = outcome(
            code,
            self.tally,
            list(self.stderr_tail),
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

    async def read_stdout(self, stream: asyncio.StreamReader) -> None:
        splitter = LineSplitter()
        while True:
            chunk = await stream.read(READ_CHUNK)
            lines = splitter.feed(chunk) if chunk else splitter.flush()
            if lines:
                await self.take(lines)
            if not chunk:
                return

    async def take(self, lines: list[str]) -> None:
        raw: list[str] = []
        readable: list[str] = []
        for line in lines:
            msg = _parse(line)
            if msg is None:
                if line.strip():
                    readable.append(line)
                continue
            raw.append(line)
            readable.extend(self.renderer.render(msg))
            see(self.tally, msg)
        if raw:
            await self.ctx.output(RAW, raw)
        if readable:
            await self.ctx.output(STDOUT, readable)

    async def read_stderr(self, stream: asyncio.StreamReader) -> None:
        splitter = LineSplitter()
        while True:
            chunk = await stream.read(READ_CHUNK)
            lines = splitter.feed(chunk) if chunk else splitter.flush()
            kept = [ln for ln in lines if not is_noise(ln)]
            if kept:
                self.stderr_tail.extend(ln.strip() for ln in kept if ln.strip())
                await self.ctx.output(STDERR, kept)
            if not chunk:
                return


async def _feed(stdin: asyncio.StreamWriter, data: bytes) -> None:
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stdin.write(data)
        await stdin.drain()
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stdin.close()


def _parse(line: str) -> dict[str, Any] | None:
    if not line.startswith("{"):
        return None
    try:
        msg = json.loads(line)
    except ValueError:
        return None
    return msg if isinstance(msg, dict) else None
