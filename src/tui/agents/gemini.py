"""`agent.type: gemini` — run the Gemini CLI headless (``--output-format stream-json``).

The prompt goes in on stdin (then stdin is closed), the CLI prints one JSON event a line (init,
message, tool_use, tool_result, error, result) and exits. There is no structured channel for
questions or approvals: what the approval mode does not allow is not offered to the model at all.
The stream carries tokens but no cost, so the cost is computed from a per-model price table.
See docs/gemini.md.
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
from tui.agents.lines import LineSplitter
from tui.engine.procs import spawn, terminate_group, wait_leader
from tui.model.states import State
from tui.store.records import RAW, STDERR, STDOUT

READ_CHUNK = 256 * 1024
BIN_ENV = "TUI_GEMINI_BIN"
NOT_FOUND = "gemini CLI not found: install with npm i -g @google/gemini-cli, or set TUI_GEMINI_BIN"


class GeminiAdapter:
    type = "gemini"

    def __init__(
        self,
        bin: str = "gemini",
        extra_env: dict[str, str] | None = None,
        prices: Mapping[str, Price] | None = None,
    ) -> None:
        self.bin = bin
        self.extra_env = dict(extra_env or {})
        self.prices = dict(prices or {})

    def binary(self, env: dict[str, str]) -> str:
        """The CLI to run: $TUI_GEMINI_BIN, else ``bin``, looked up on the task's PATH."""
        name = os.path.expanduser(env.get(BIN_ENV) or os.environ.get(BIN_ENV) or self.bin)
        if os.sep in name:
            if os.path.isfile(name) and os.access(name, os.X_OK):
                return name
            raise AdapterError(f"{NOT_FOUND} ({name} is not an executable file)")
        found = shutil.which(name, path=env.get("PATH", os.defpath))
        if found is None:
            raise AdapterError(NOT_FOUND)
        return found

    async def run(self, ctx: RunContext) -> RunResult:
        agent = ctx.task.agent
        cwd = os.path.expanduser(agent.project_dir) if agent.project_dir else None
        if cwd and not os.path.isdir(cwd):
            raise AdapterError(f"agent.project_dir {cwd!r} is not a directory")
        env = {**ctx.env, **self.extra_env}
        binary = self.binary(env)
        table = price_table(self.prices, env)
        build_argv(binary, agent)  # refuses unsupported settings before anything starts
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
            run = _Run(ctx, cwd, env, table)
            result = await run.run(build_argv(binary, agent, resume=session), prompt)
            if not run.lost_session:
                return result
            await ctx.output(STDERR, [f"[tui] session {session} is gone; starting afresh"])
        prompt = with_system_append(first_prompt(agent.instructions, files), agent)
        return await _Run(ctx, cwd, env, table).run(build_argv(binary, agent), prompt)


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
        self.stderr_tail: deque[str] = deque(maxlen=5)
        self.renderer = Renderer(cwd)
        self.text = ResultText()
        self.lost_session = False

    async def run(self, argv: list[str], prompt: str) -> RunResult:
        proc, ident = await spawn(argv, cwd=self.cwd, env=self.env, stdin=asyncio.subprocess.PIPE)
        readers: asyncio.Future[Any] | None = None
        try:
            await self.ctx.process_started(proc, ident)
            assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
            readers = asyncio.gather(
                self.feed(proc.stdin, prompt),
                self.read_stdout(proc.stdout),
                self.read_stderr(proc.stderr),
            )
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
        if code == 42 and not self.session_id and any(NO_SESSION in ln for ln in self.stderr_tail):
            self.lost_session = True
        agent = self.ctx.task.agent
        out = outcome(
            code,
            self.result_line,
            self.text.text,
            self.errors,
            list(self.stderr_tail),
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

    async def feed(self, stdin: asyncio.StreamWriter, prompt: str) -> None:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            stdin.write(prompt.encode())
            await stdin.drain()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            stdin.close()

    async def read_stdout(self, stream: asyncio.StreamReader) -> None:
        splitter = LineSplitter()
        while True:
            chunk = await stream.read(READ_CHUNK)
            lines = splitter.feed(chunk) if chunk else splitter.flush()
            if lines:
                await self.take(lines)
            if not chunk:
                tail = self.renderer.flush()
                if tail:
                    await self.ctx.output(STDOUT, tail)
                return

    async def take(self, lines: list[str]) -> None:
        raw: list[str] = []
        readable: list[str] = []
        for line in lines:
            msg = _parse(line)
            if msg is None:
                if line.strip():
                    readable.extend(self.renderer.flush())
                    readable.append(line)
                continue
            raw.append(line)
            readable.extend(self.renderer.render(msg))
            self.see(msg)
        if raw:
            await self.ctx.output(RAW, raw)
        if readable:
            await self.ctx.output(STDOUT, readable)

    def see(self, msg: dict[str, Any]) -> None:
        kind = msg.get("type")
        self.text.see(msg)
        if kind == "init":
            self.session_id = str(msg.get("session_id") or self.session_id)
        elif kind == "error":
            self.errors.append(str(msg.get("message") or ""))
        elif kind == "result":
            self.result_line = msg

    async def read_stderr(self, stream: asyncio.StreamReader) -> None:
        splitter = LineSplitter()
        while True:
            chunk = await stream.read(READ_CHUNK)
            lines = splitter.feed(chunk) if chunk else splitter.flush()
            kept = [ln for ln in lines if not ln.startswith(NOISE_PREFIXES)]
            if kept:
                # Stack frames say nothing a person can act on; the message lines do.
                self.stderr_tail.extend(
                    ln.strip() for ln in kept if ln.strip() and not ln.strip().startswith("at ")
                )
                await self.ctx.output(STDERR, kept)
            if not chunk:
                return


def _parse(line: str) -> dict[str, Any] | None:
    if not line.startswith("{"):
        return None
    try:
        msg = json.loads(line)
    except ValueError:
        return None
    return msg if isinstance(msg, dict) else None
