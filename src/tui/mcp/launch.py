"""How an agent CLI starts tui's MCP server for one run: the command and its environment,
in the shapes the CLIs' own MCP configuration takes."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping

from tui.model.task import AgentConfig

SERVER_NAME = "tui"  # claude shows the tools as mcp__tui__ask_user ...
TOOLS = ("list_user_tasks", "run_user_task", "ask_user", "create_subtask")
ENV_KEYS = ("TUI_DB", "TUI_TASK_ID", "TUI_RUN_ID")
PROJECT_ENV = "TUI_PROJECT_DIR"


def server_env(run_env: Mapping[str, str], agent: AgentConfig) -> dict[str, str]:
    """What the server needs to know about the run (the engine sets TUI_* for every run)."""
    env = {k: run_env[k] for k in ENV_KEYS if k in run_env}
    if agent.project_dir:
        env[PROJECT_ENV] = agent.project_dir
    return env


def server_spec(run_env: Mapping[str, str], agent: AgentConfig) -> dict[str, object]:
    """One stdio server entry: this Python running ``-m tui.mcp`` (found even off PATH)."""
    return {
        "type": "stdio",
        "command": sys.executable,
        "args": ["-m", "tui.mcp"],
        "env": server_env(run_env, agent),
    }


def claude_mcp_config(run_env: Mapping[str, str], agent: AgentConfig) -> str:
    """The JSON `claude --mcp-config` takes."""
    return json.dumps({"mcpServers": {SERVER_NAME: server_spec(run_env, agent)}})


def claude_tool_rule() -> str:
    """The --allowedTools rule that lets the model use every tui tool without asking."""
    return f"mcp__{SERVER_NAME}"
