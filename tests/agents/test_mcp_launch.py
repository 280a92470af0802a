"""How agent CLIs are told to start tui's MCP server."""

from __future__ import annotations

import json
import os
import sys

from tui.agents.claude_protocol import build_argv
from tui.agents.mcp_launch import (
    claude_mcp_config,
    claude_tool_rule,
    codex_config_args,
    gemini_home,
    wanted,
)
from tui.model.task import AgentConfig

RUN_ENV = {"TUI_DB": "/d/tui.db", "TUI_TASK_ID": "t1", "TUI_RUN_ID": "7", "HOME": "/h"}


def test_claude_config_starts_this_python_with_the_run_env_only() -> None:
    agent = AgentConfig(instructions="x", project_dir="~/src/app")
    config = json.loads(claude_mcp_config(RUN_ENV, agent))
    assert config == {
        "mcpServers": {
            "tui": {
                "type": "stdio",
                "command": sys.executable,
                "args": ["-m", "tui.mcp"],
                "env": {
                    "TUI_DB": "/d/tui.db",
                    "TUI_TASK_ID": "t1",
                    "TUI_RUN_ID": "7",
                    "TUI_PROJECT_DIR": "~/src/app",
                },
                "timeout": 86_400_000,  # a day: a person may take a while to answer
            }
        }
    }


def test_claude_argv_allows_the_tools_next_to_the_tasks_own() -> None:
    agent = AgentConfig(instructions="x", allowed_tools=["Read"])
    config = claude_mcp_config(RUN_ENV, agent)
    argv = build_argv("claude", agent, mcp_config=config, mcp_tools=claude_tool_rule())
    i = argv.index("--allowedTools")
    assert argv[i + 1 : i + 3] == ["Read", "mcp__tui"]
    assert argv[argv.index("--mcp-config") + 1] == config
    assert "--mcp-config" not in build_argv("claude", agent)


def test_gemini_home_adds_tui_next_to_the_users_servers_without_touching_them(tmp_path) -> None:
    real = tmp_path / "home" / ".gemini"
    real.mkdir(parents=True)
    mine = {"security": {"auth": {"selectedType": "gemini-api-key"}}, "mcpServers": {"x": {}}}
    (real / "settings.json").write_text(json.dumps(mine))
    (real / "oauth_creds.json").write_text("secret")
    env = {**RUN_ENV, "HOME": str(tmp_path / "home")}
    with gemini_home(env, AgentConfig(instructions="x")) as extra:
        view = os.path.join(extra["GEMINI_CLI_HOME"], ".gemini")
        with open(os.path.join(view, "settings.json")) as f:
            settings = json.load(f)
        assert settings["security"] == mine["security"]
        assert set(settings["mcpServers"]) == {"x", "tui"}
        tui = settings["mcpServers"]["tui"]
        assert tui["trust"] is True and tui["args"] == ["-m", "tui.mcp"]
        assert tui["timeout"] == 86_400_000
        assert tui["env"]["TUI_MCP_ASK_TOOL"] == "ask_person"
        # Credentials and the session store are the user's own, linked.
        assert os.path.realpath(os.path.join(view, "oauth_creds.json")) == str(
            real / "oauth_creds.json"
        )
        assert os.path.realpath(os.path.join(view, "tmp")) == str(real / "tmp")
    assert not os.path.exists(view)
    assert json.loads((real / "settings.json").read_text()) == mine


def test_only_engine_runs_that_did_not_opt_out_get_the_server() -> None:
    assert wanted(RUN_ENV, AgentConfig(instructions="x"))
    assert not wanted(RUN_ENV, AgentConfig(instructions="x", mcp=False))
    assert not wanted({"HOME": "/h"}, AgentConfig(instructions="x"))  # not run by an engine
    # A shell script gets no MCP server: its kind is declared without one.
    assert not wanted(RUN_ENV, AgentConfig(type="shell", instructions="x"))


def test_codex_gets_one_inline_table_with_approval_and_a_startup_wait() -> None:
    flag, value = codex_config_args(RUN_ENV, AgentConfig(instructions="x"))
    assert flag == "-c" and value.startswith("mcp_servers.tui={")
    assert f"command={json.dumps(sys.executable)}" in value
    assert 'args=["-m","tui.mcp"]' in value
    assert 'env={TUI_DB="/d/tui.db",TUI_TASK_ID="t1",TUI_RUN_ID="7"}' in value
    assert (
        "tool_timeout_sec=86400" in value
        and "required=true" in value
        and 'default_tools_approval_mode="approve"' in value
    )
