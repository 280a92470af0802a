"""The MCP protocol side: the tools of :mod:`tui.mcp.tools` on an ``MCPServer`` (stdio)."""

from __future__ import annotations

import json
import shlex
from collections.abc import Awaitable
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field, ValidationError

from tui.agents.mcp_launch import SERVER_NAME
from tui.mcp.tools import ToolFailure, Tools

T = TypeVar("T")

INSTRUCTIONS = (
    "Tools of tui, the program running this task: ask the user a question and get the answer, "
    "list and run the project's predefined tasks (its .agent/Taskfile.yml), and create "
    "subtasks that tui runs as separate tasks."
)


class _Server(MCPServer):
    """MCPServer whose argument errors are one line a field (the SDK's are pydantic's
    multi-line report with its type codes and URLs, which a model reads as noise)."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as e:
            if not isinstance(e.__cause__, ValidationError):
                raise
            raise ToolError(bad_arguments(name, e.__cause__)) from e.__cause__


def bad_arguments(tool: str, error: ValidationError) -> str:
    """``ask_user: question: should be a string, got 5; …``: each field once, with the fix
    in the field's own words (pydantic's message) and what was given."""
    parts = []
    for err in error.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        msg = err["msg"][0].lower() + err["msg"][1:] if err["msg"] else "invalid"
        if err["type"] == "missing":
            parts.append(f"{where}: missing (it is required)")
        else:
            given = json.dumps(err.get("input"), default=repr)
            given = given if len(given) <= 60 else given[:57] + "..."
            parts.append(f"{where}: {msg}, got {given}")
    return f"{tool}: " + "; ".join(parts) + " (see the tool's input schema)"


def build_server(tools: Tools) -> MCPServer:
    server = _Server(SERVER_NAME, instructions=INSTRUCTIONS)

    @server.tool(structured_output=False)
    async def list_user_tasks() -> str:
        """List the tasks the user defined for this project (its .agent/Taskfile.yml), as JSON:
        {"tasks": [{"name", "description", ...}], "message"}. Run one with run_user_task."""
        return json.dumps(await _call(tools.list_user_tasks()))

    @server.tool(structured_output=False)
    async def run_user_task(
        task_name: Annotated[
            str, Field(description="a task name from list_user_tasks (a match of a * pattern)")
        ] = "",
        args: Annotated[
            str | list[str],
            Field(
                description="arguments for the task's CLI_ARGS, as one string split like a "
                "shell would (never run by one), or a list; only for tasks the user allowed "
                "to take them (else leave empty)"
            ),
        ] = "",
        vars: Annotated[
            dict[str, str], Field(description="go-task variables NAME: value (requires: vars)")
        ] = {},  # noqa: B006 - the SDK reads the default for the schema; never mutated
        name: Annotated[str, Field(description="the same as task_name (older callers)")] = "",
    ) -> str:
        """Run one of the user's project tasks and wait for it. Returns JSON with name,
        exit_code, stdout and stderr (and a message when it did not run: a task with a prompt
        runs only when the user says yes in tui)."""
        wanted = task_name or name
        if not wanted:
            raise ToolError("give task_name (a name from list_user_tasks)")
        try:
            argv = shlex.split(args) if isinstance(args, str) else list(args)
        except ValueError as e:
            raise ToolError(f"args {args!r}: {e}") from None
        return json.dumps(await _call(tools.run_user_task(wanted, argv, dict(vars))))

    @server.tool(name=tools.run.ask_tool, structured_output=False)
    async def ask_user(
        question: Annotated[str, Field(description="the question, complete and specific")],
        options: Annotated[
            list[str], Field(description="choices to offer; the user may also write text")
        ] = [],  # noqa: B006
        multi_select: Annotated[bool, Field(description="allow several choices")] = False,
    ) -> str:
        """Ask the user a question and wait for the answer (it may take a while: a person
        answers in tui). Returns the answer text; several choices are joined with ", "."""
        return await _call(tools.ask_user(question, list(options), multi_select))

    @server.tool(structured_output=False)
    async def create_subtask(
        name: Annotated[str, Field(description="a short title for the subtask")],
        instructions: Annotated[str, Field(description="what the subtask's agent should do")],
        description: Annotated[str, Field(description="one line for people")] = "",
    ) -> str:
        """Create a subtask of this task. tui runs it as a separate task with the same agent
        and project directory. Returns JSON with its task_id. Nesting is limited to 5 levels."""
        return json.dumps(await _call(tools.create_subtask(name, instructions, description)))

    return server


async def _call(work: Awaitable[T]) -> T:
    try:
        return await work
    except ToolFailure as e:
        raise ToolError(str(e)) from None
