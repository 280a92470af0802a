"""How an agent CLI starts tui's MCP server for one run: the command and its environment,
in the shapes the CLIs' own MCP configuration takes."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from collections.abc import Iterator, Mapping

from tui.model.agent_kinds import KINDS
from tui.model.task import AgentConfig

SERVER_NAME = "tui"  # claude shows the tools as mcp__tui__ask_user ...
TOOLS = ("list_user_tasks", "run_user_task", "ask_user", "create_subtask")
ENV_KEYS = ("TUI_DB", "TUI_TASK_ID", "TUI_RUN_ID")
PROJECT_ENV = "TUI_PROJECT_DIR"
# ask_user waits for a person, which can take hours: each CLI's per-call limit (claude and
# gemini default to minutes, codex to 60 s) is raised to a day, under the 24.8-day ceiling of
# a JavaScript timer.
TOOL_TIMEOUT = 24 * 3600  # seconds
ASK_TOOL_ENV = "TUI_MCP_ASK_TOOL"  # the name ask_user is served under (see gemini below)
GEMINI_ASK_TOOL = "ask_person"


def wanted(run_env: Mapping[str, str], agent: AgentConfig) -> bool:
    """Whether a run gets tui's server: only for a kind that can take one (see
    tui.model.agent_kinds), not when the task opts out (agent.mcp: false), nor outside an engine
    run (no TUI_* env: there is no run for the tools to serve)."""
    kind = KINDS.get(agent.type)
    return kind is not None and kind.mcp and agent.mcp and all(run_env.get(k) for k in ENV_KEYS)


def server_env(run_env: Mapping[str, str], agent: AgentConfig) -> dict[str, str]:
    """What the server needs to know about the run (the engine sets TUI_* for every run)."""
    env = {k: run_env[k] for k in ENV_KEYS if k in run_env}
    # The engine's own config dir (not the task's env): the server reads agent_task_args there.
    if os.environ.get("TUI_CONFIG_DIR"):
        env["TUI_CONFIG_DIR"] = os.environ["TUI_CONFIG_DIR"]
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
    spec = {**server_spec(run_env, agent), "timeout": TOOL_TIMEOUT * 1000}
    return json.dumps({"mcpServers": {SERVER_NAME: spec}})


def claude_tool_rule() -> str:
    """The --allowedTools rule that lets the model use every tui tool without asking."""
    return f"mcp__{SERVER_NAME}"


# -- codex ---------------------------------------------------------------------------------


STARTUP_TIMEOUT = 60  # seconds an agent CLI waits for the server to start


def codex_config_args(run_env: Mapping[str, str], agent: AgentConfig) -> list[str]:
    """``-c mcp_servers.tui={...}`` for `codex exec`: a TOML inline table (JSON strings are
    valid TOML basic strings), added to whatever servers the user's config.toml has."""
    spec = server_spec(run_env, agent)
    env = ",".join(f"{k}={json.dumps(v)}" for k, v in server_env(run_env, agent).items())
    args = ",".join(json.dumps(a) for a in spec["args"])  # type: ignore[attr-defined]
    # required: codex exec otherwise starts the first turn without waiting for the server
    # (Python and the SDK take seconds to import), so the model would not have its tools.
    # approve: `codex exec` never asks, and refuses MCP calls that would need approval.
    table = (
        f"{{command={json.dumps(spec['command'])},args=[{args}],env={{{env}}},"
        f"startup_timeout_sec={STARTUP_TIMEOUT},tool_timeout_sec={TOOL_TIMEOUT},required=true,"
        f'default_tools_approval_mode="approve"}}'
    )
    return ["-c", f"mcp_servers.{SERVER_NAME}={table}"]


# -- gemini --------------------------------------------------------------------------------

GEMINI_HOME_ENV = "GEMINI_CLI_HOME"  # where the CLI looks for .gemini/ instead of $HOME
GEMINI_DIR = ".gemini"
# Directories the CLI fills as it runs (sessions for --resume, history): made in the real
# .gemini first, so the run's view links to them and nothing it writes there is lost.
GEMINI_KEPT_DIRS = ("tmp", "history")


@contextlib.contextmanager
def gemini_home(
    run_env: Mapping[str, str], agent: AgentConfig, mcp: bool = True
) -> Iterator[dict[str, str]]:
    """Env for a gemini run with settings of its own, without writing into the user's files:
    tui's server (``mcp``) and ``agent.max_turns`` (gemini's ``model.maxSessionTurns``).

    gemini reads MCP servers and the turn limit only from settings files, and skips
    system-wide ones not owned by root. So the run gets its own GEMINI_CLI_HOME whose .gemini/
    links every entry of the real one (credentials, sessions...) except settings.json, a copy
    with these added. ``trust`` lets its tools run without a confirmation headless gemini
    could not ask for.
    """
    real_home = run_env.get(GEMINI_HOME_ENV) or run_env.get("HOME") or os.path.expanduser("~")
    real = os.path.join(real_home, GEMINI_DIR)
    for name in GEMINI_KEPT_DIRS:
        os.makedirs(os.path.join(real, name), mode=0o700, exist_ok=True)
    settings = _read_json(os.path.join(real, "settings.json"))
    if mcp:
        servers = settings.get("mcpServers")
        servers = dict(servers) if isinstance(servers, dict) else {}
        spec = server_spec(run_env, agent)
        del spec["type"]  # gemini tells stdio servers by their `command`
        # Headless gemini drops every tool called ask_user (its own interactive tool's name),
        # MCP ones included: there it is mcp_tui_ask_person.
        spec["env"] = {**server_env(run_env, agent), ASK_TOOL_ENV: GEMINI_ASK_TOOL}
        servers[SERVER_NAME] = {**spec, "trust": True, "timeout": TOOL_TIMEOUT * 1000}
        settings["mcpServers"] = servers
    if agent.max_turns:
        model = settings.get("model")
        settings["model"] = {
            **(model if isinstance(model, dict) else {}),
            "maxSessionTurns": agent.max_turns,
        }
    with tempfile.TemporaryDirectory(prefix="tui-gemini-") as home:
        view = os.path.join(home, GEMINI_DIR)
        os.mkdir(view, mode=0o700)
        for name in os.listdir(real):
            if name != "settings.json":
                os.symlink(os.path.join(real, name), os.path.join(view, name))
        with open(os.path.join(view, "settings.json"), "w", encoding="utf-8") as f:
            json.dump(settings, f)
        yield {GEMINI_HOME_ENV: home}


def _read_json(path: str) -> dict[str, object]:
    """The JSON object in ``path``; {} when it is missing (a broken file is left for the CLI to
    report: copying it would hide the user's mistake, so tui's server alone is used)."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
