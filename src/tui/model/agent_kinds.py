"""Every `agent.type` tui knows, declared once.

A new agent CLI is one ``AgentKind`` here plus its adapter module: the task model's validation,
the config's ``[agents.NAME]`` types and built-in agents, `tui doctor`'s probe, the MCP wiring
and the engine's adapters all derive from this table. The adapter is named as ``module:Class``
and imported the first time a task of its kind runs, so this module imports nothing of tui's.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AgentKind:
    name: str
    adapter: str  # "module:Class" of its adapter, imported when first needed
    cli: str = ""  # the agent CLI it drives; "" = nothing to install (shell, taskfile)
    install: str = ""  # how to install that CLI, for the "not found" message
    models: bool = False  # takes agent.model and a config agent's models/default_model
    mcp: bool = False  # the CLI can be given tui's MCP server (agent.mcp)
    configurable: bool = True  # may be the type of a config [agents.NAME] table
    version_args: tuple[str, ...] = ("--version",)  # `tui doctor`'s probe of the CLI
    # agent.max_turns: the CLI's flag for it, or its settings-file key (which the adapter
    # sets for the one run), or why the kind cannot take one.
    max_turns_flag: str = ""
    max_turns_setting: str = ""
    no_max_turns: str = "runs a command, not an agent that takes turns"
    # Its instructions are a script, not a prompt: what dependencies produced reaches it only
    # through environment variables and a JSON file, never as text spliced into the script.
    script: bool = False
    messages: bool = False  # takes a person's messages while it runs (`tui send`)
    resumes: bool = False  # a finished session can be continued (`tui continue`)

    @property
    def bin_env(self) -> str:
        """The variable that names another binary for the CLI (e.g. TUI_CLAUDE_BIN)."""
        return f"TUI_{self.name.upper()}_BIN" if self.cli else ""

    @property
    def takes_max_turns(self) -> bool:
        return bool(self.max_turns_flag or self.max_turns_setting)

    @property
    def builtin(self) -> bool:
        """Usable by name (agent = "claude") without an [agents.NAME] table."""
        return bool(self.cli)

    @property
    def not_found(self) -> str:
        return f"{self.cli} CLI not found: install with {self.install}, or set {self.bin_env}"


# In the order messages list them; the first is the default agent.type.
KINDS: dict[str, AgentKind] = {
    k.name: k
    for k in (
        AgentKind(
            "claude",
            "tui.agents.claude:ClaudeAdapter",
            cli="claude",
            install="npm i -g @anthropic-ai/claude-code",
            models=True,
            mcp=True,
            max_turns_flag="--max-turns",
            messages=True,
            resumes=True,
        ),
        AgentKind("shell", "tui.agents.shell:ShellAdapter", script=True),
        AgentKind(
            "gemini",
            "tui.agents.gemini:GeminiAdapter",
            cli="gemini",
            install="npm i -g @google/gemini-cli",
            models=True,
            mcp=True,
            # No flag: the run's own settings.json copy gets the key (agents/mcp_launch.py).
            max_turns_setting="model.maxSessionTurns",
            resumes=True,
        ),
        AgentKind(
            "codex",
            "tui.agents.codex:CodexAdapter",
            cli="codex",
            install="npm i -g @openai/codex",
            models=True,
            mcp=True,
            no_max_turns="has no turn limit (codex exec --help)",
            resumes=True,
        ),
        # Taskfile tasks come from the project's Taskfile, not from config agents.
        AgentKind(
            "taskfile", "tui.agents.taskfile:TaskfileAdapter", configurable=False, script=True
        ),
    )
}

AGENT_TYPES = tuple(KINDS)
DEFAULT_TYPE = AGENT_TYPES[0]
CONFIG_TYPES = tuple(k.name for k in KINDS.values() if k.configurable)
BUILTIN_AGENTS = tuple(k.name for k in KINDS.values() if k.builtin)
MAX_TURNS = 10_000  # more is a typo


def check_max_turns(value: int, agent_type: str) -> int:
    """``agent.max_turns`` for an agent of ``agent_type``; ValueError saying why not."""
    if not value:
        return value
    kind = KINDS.get(agent_type)
    if kind is not None and not kind.takes_max_turns:
        takes = " and ".join(k.name for k in KINDS.values() if k.takes_max_turns)
        raise ValueError(
            f"agent.max_turns does not apply to {agent_type} tasks: {agent_type} "
            f"{kind.no_max_turns}; only {takes} take it"
        )
    if value > MAX_TURNS:
        raise ValueError(f"agent.max_turns must be <= {MAX_TURNS}; got {value}")
    return value
