"""`agent.type: claude` — drive the Claude Code CLI over its stream-json protocol.

The CLI runs with ``--input-format stream-json --permission-prompt-tool stdio``: the prompt is a
user message on stdin, and every question (AskUserQuestion), permission (Bash, Write, MCP...)
and plan (ExitPlanMode) arrives as a ``control_request`` that is answered on stdin once a person
has decided through the engine (``ctx.ask``). stdin stays open until the ``result`` line.
See docs/claude.md.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from tui.agents.claude_protocol import (
    PLAN_TOOL,
    QUESTION_TOOL,
    answer_approval,
    answer_question,
    approval_payload,
    build_argv,
    control_error,
    control_response,
    first_prompt,
    parse_result,
    plans_first,
    question_payload,
    read_context_files,
    render,
    resume_or_afresh,
    user_message,
)
from tui.agents.cli_process import (
    StderrTail,
    budget_spent,
    describe_exit,
    find_cli,
    project_dir,
    record_json_lines,
    run_cli,
)
from tui.agents.mcp_launch import claude_mcp_config, claude_tool_rule, wanted
from tui.engine.adapter import RunContext, RunResult
from tui.model.agent_kinds import KINDS
from tui.model.states import State
from tui.model.system_parts import with_system
from tui.model.task import AgentConfig, PermissionMode
from tui.procs.process import Child

log = logging.getLogger(__name__)

KIND = KINDS["claude"]
BIN_ENV = KIND.bin_env
NOT_FOUND = KIND.not_found
NO_SESSION = "No conversation found"  # what the CLI says when --resume names an unknown session


class ClaudeAdapter:
    type = KIND.name

    def __init__(self, bin: str = KIND.cli, extra_env: dict[str, str] | None = None) -> None:
        self.bin = bin
        self.extra_env = dict(extra_env or {})

    def binary(self, env: dict[str, str]) -> str:
        """The CLI to run: $TUI_CLAUDE_BIN, else ``bin``, looked up on the task's PATH."""
        return find_cli(env, BIN_ENV, self.bin, NOT_FOUND)

    async def run(self, ctx: RunContext) -> RunResult:
        agent = with_system(ctx.task)  # its system parts and context block appended
        cwd = project_dir(agent)
        env = {**ctx.env, **self.extra_env}
        binary = self.binary(env)
        if spent := budget_spent(agent, ctx.cost_so_far):
            return spent
        files = read_context_files(agent, cwd)  # a missing file fails before anything starts
        mcp_config, mcp_tools = _mcp_args(ctx.env, agent)

        async def resume(session: str, prompt: str) -> RunResult | None:
            talk = _Conversation(ctx, agent, cwd, env, plan=False)
            argv = build_argv(
                binary, agent, resume=session, mcp_config=mcp_config, mcp_tools=mcp_tools
            )
            result = await talk.run(argv, prompt)
            return None if talk.lost_session else result

        async def afresh() -> RunResult:
            plan = plans_first(agent, resuming=False)
            talk = _Conversation(ctx, agent, cwd, env, plan=plan)
            argv = build_argv(binary, agent, plan=plan, mcp_config=mcp_config, mcp_tools=mcp_tools)
            return await talk.run(argv, first_prompt(agent.instructions, files))

        return await resume_or_afresh(ctx, resume, afresh)


def _mcp_args(run_env: dict[str, str], agent: AgentConfig) -> tuple[str, str]:
    """(--mcp-config, --allowedTools rule): tui's MCP server for this run, its tools allowed
    outright; both "" when the run gets none (see `wanted`)."""
    if not wanted(run_env, agent):
        return "", ""
    return claude_mcp_config(run_env, agent), claude_tool_rule()


class _Conversation:
    """One CLI process: pumps its output, answers its control requests, reports the result."""

    def __init__(
        self,
        ctx: RunContext,
        agent: AgentConfig,
        cwd: str | None,
        env: dict[str, str],
        *,
        plan: bool,
    ) -> None:
        self.ctx = ctx
        self.agent = agent
        self.cwd = cwd
        self.env = env
        self.plan = plan
        self.proc: Child | None = None
        self.session_id = ""
        self.result_line: dict[str, Any] | None = None
        self.stderr = StderrTail(ctx)
        self.tool_inputs: dict[str, dict[str, Any]] = {}  # tool_use id → input the model sent
        self.handlers: dict[str, asyncio.Task[None]] = {}
        self.write_lock = asyncio.Lock()
        self.lost_session = False
        self.initialized = False  # saw the system/init line
        # User turns written (the prompt, then each `tui send`) and results read: stdin closes
        # (the CLI then exits) only once every turn has its result.
        self.turns = 0
        self.results = 0

    async def relay_messages(self) -> None:
        """A person's messages (`tui send`), each written as one more user turn."""
        inbox = getattr(self.ctx, "inbox", None)
        if inbox is None:
            return
        while True:
            text, delivered = await inbox.get()
            ok = await self.send(user_message(text), turn=True)
            if not delivered.done():
                delivered.set_result(ok)

    async def run(self, argv: list[str], prompt: str) -> RunResult:
        async def started(proc: Child) -> None:
            self.proc = proc
            await self.send(user_message(prompt), turn=True)

        relay = asyncio.create_task(self.relay_messages())
        try:
            code = await run_cli(
                self.ctx,
                argv,
                cwd=self.cwd,
                env=self.env,
                on_stdout=self.take,
                on_stderr=self.stderr,
                on_start=started,
            )
        finally:
            relay.cancel()
            for task in list(self.handlers.values()):
                task.cancel()
            if self.handlers:
                await asyncio.gather(*self.handlers.values(), return_exceptions=True)
        return self.outcome(code)

    def outcome(self, code: int) -> RunResult:
        said = [*self.stderr.lines, *map(str, (self.result_line or {}).get("errors") or [])]
        if not self.initialized and any(NO_SESSION in ln for ln in said):
            self.lost_session = True  # --resume named a session this HOME does not have
        if self.result_line is None:
            tail = " · ".join(self.stderr.lines)
            error = f"claude {describe_exit(code)} before it finished"
            return RunResult(
                State.FAILED,
                exit_code=code,
                error=f"{error}: {tail}" if tail else error,
                session_id=self.session_id,
            )
        out = parse_result(self.result_line, self.agent.max_budget_usd, self.ctx.cost_so_far)
        return RunResult(
            out.state,
            exit_code=code,
            error=out.error,
            cost_usd=out.cost_usd,
            tokens_in=out.tokens_in,
            tokens_out=out.tokens_out,
            session_id=out.session_id or self.session_id,
            result=out.result,
        )

    # -- stdin -----------------------------------------------------------------------------

    async def send(self, message: dict[str, Any], *, turn: bool = False) -> bool:
        """Write one line to the CLI; False when its stdin is already closed."""
        proc = self.proc
        if proc is None or proc.stdin is None:
            return False
        data = (json.dumps(message, ensure_ascii=False) + "\n").encode()
        async with self.write_lock:
            if proc.stdin.is_closing():
                return False
            try:
                proc.stdin.write(data)
                await proc.stdin.drain()
            except (BrokenPipeError, ConnectionResetError):
                return False
            if turn:
                self.turns += 1
            return True

    async def close_stdin(self) -> None:
        """Close stdin once every user turn has its result (the CLI then exits)."""
        proc = self.proc
        if proc is None or proc.stdin is None:
            return
        async with self.write_lock:
            if self.results >= self.turns and not proc.stdin.is_closing():
                proc.stdin.close()

    # -- stdout / stderr -------------------------------------------------------------------

    async def take(self, lines: list[str]) -> None:
        for msg in await record_json_lines(self.ctx, lines, lambda m: render(m, self.cwd)):
            await self.handle(msg)

    async def handle(self, msg: dict[str, Any]) -> None:
        kind = msg.get("type")
        if kind == "system" and msg.get("subtype") == "init":
            self.session_id = str(msg.get("session_id") or self.session_id)
            self.initialized = True
            await self.ctx.session_started(self.session_id)
        elif kind == "assistant":
            for block in (msg.get("message") or {}).get("content") or []:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    self.tool_inputs[str(block.get("id"))] = block.get("input") or {}
        elif kind == "control_request":
            request_id = str(msg.get("request_id") or "")
            task = asyncio.create_task(self.on_request(request_id, msg.get("request") or {}))
            self.handlers[request_id] = task
            task.add_done_callback(lambda _t: self.handlers.pop(request_id, None))
        elif kind == "control_cancel_request":
            pending = self.handlers.get(str(msg.get("request_id") or ""))
            if pending is not None:
                pending.cancel()
        elif kind == "result":
            self.result_line = msg
            self.results += 1
            self.session_id = str(msg.get("session_id") or self.session_id)
            await self.close_stdin()  # the turns are over: the CLI exits when stdin closes

    # -- control requests ------------------------------------------------------------------

    async def on_request(self, request_id: str, request: dict[str, Any]) -> None:
        subtype = request.get("subtype")
        if subtype != "can_use_tool":
            await self.send(control_error(request_id, f"tui does not handle {subtype!r} requests"))
            return
        try:
            response = await self.decide(request)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # the engine refused the question: refuse the tool, keep going
            log.warning("claude permission request failed: %s", e)
            response = {"behavior": "deny", "message": f"Could not ask the user: {e}"}
        await self.send(control_response(request_id, response))

    async def decide(self, request: dict[str, Any]) -> dict[str, Any]:
        tool = str(request.get("tool_name") or "")
        tool_input = request.get("input")
        if not isinstance(tool_input, dict):
            tool_input = {}
        suggestions = [
            s for s in request.get("permission_suggestions") or [] if isinstance(s, dict)
        ]
        if tool == QUESTION_TOOL:
            answer = await self.ctx.ask("question", question_payload(tool_input))
            return answer_question(tool_input, answer)
        if tool == PLAN_TOOL:
            # The request carries an empty input; the plan is in the model's tool_use block.
            shown = {**self.tool_inputs.get(str(request.get("tool_use_id")), {}), **tool_input}
            answer = await self.ctx.ask(
                "approval", approval_payload(tool, shown, suggestions, self.cwd)
            )
            response = answer_approval(tool_input, suggestions, answer)
            mode = self.agent.permission_mode
            if response["behavior"] == "allow" and mode not in (
                PermissionMode.NONE,
                PermissionMode.DEFAULT,
                PermissionMode.PLAN,
            ):
                # Approving the plan switches the CLI to `default`; carry on in the task's mode.
                response["updatedPermissions"] = [
                    {"type": "setMode", "mode": mode.value, "destination": "session"}
                ]
            return response
        answer = await self.ctx.ask(
            "approval", approval_payload(tool, tool_input, suggestions, self.cwd)
        )
        return answer_approval(tool_input, suggestions, answer)
