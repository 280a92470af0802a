"""The sections of ``config.toml`` as pydantic models (one file's view, before merging)."""

from __future__ import annotations

import os
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tui.model.agent_kinds import CONFIG_TYPES, KINDS
from tui.model.choices import one_of
from tui.model.classify import Classifier, ClassifyRule
from tui.model.duration import parse_duration
from tui.model.factories import new_dict, new_list
from tui.model.secrets import refuse_secrets
from tui.model.task import AgentConfig
from tui.model.variables import Variable
from tui.model.workflow import (
    FileDefaults,
    Hooks,
    OnError,
    OnErrorChoice,
    OnMaxRetries,
    OnMaxRetriesChoice,
    Summarizer,
)

NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
NAME_FIX = "use lower-case letters, digits and single dashes, e.g. `code-review`"
# A config-only type: another agent CLI run through its `command` template (by the shell
# adapter, see tui.config.agent_command), so it has no entry in the agent-kind table.
COMMAND_TYPE = "command"
AGENT_DEF_TYPES = (*CONFIG_TYPES, COMMAND_TYPE)
CLI_KINDS = tuple(k.name for k in KINDS.values() if k.cli)  # driven through their protocol
NOTIFY_MODES = ("auto", "off", "osc9", "osc777")
DEFAULT_CONCURRENCY = 4
DEFAULT_SHELL = "bash"
SECTIONS = (
    "settings",
    "executor",
    "summarizer",
    "classifier",
    "agents",
    "roles",
    "contexts",
    "tasks",
)
EXECUTOR_KINDS = ("local", "ray")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ADDRESS = re.compile(r"^(auto|(ray://)?(\[[0-9a-fA-F:.]+\]|[^\s:/\[\]]+):\d{1,5})$")
# Keys of `start`'s own configs that tui reads without using: one "not used by tui" warning,
# never an error (so a real `start` config loads unmodified).
NOT_USED: dict[str, tuple[str, ...]] = {
    "settings": ("log_level", "asset_download", "asset_repo", "asset_path", "assets_index"),
    "agents": ("url", "models_url"),
    "roles": (),
    "contexts": (),
    "tasks": ("system_prompt", "system_prompt_file"),
}

# What a [tasks.NAME] may set besides its own keys: defaults for the YAML task it becomes.
TASK_DEFAULTS = ("timeout", "retry", "priority", "tags", "review", "output_format")
AGENT_DEFAULTS = tuple(f for f in AgentConfig.model_fields if f not in ("type", "instructions"))


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Settings(_Model):
    default_agent: str = ""
    default_role: str = ""
    shell: str = ""  # "" = the built-in bash
    shell_args: list[str] | None = None  # how `shell` takes a script; "" = known per shell
    command_timeout: float = 30.0  # seconds for {command} output; a Go duration in TOML
    concurrency: int | None = Field(default=None, ge=1)
    theme: str = ""
    notifications: str = ""  # auto | off | osc9 | osc777
    database: str = ""  # made absolute against the file's base directory when loaded
    keys: dict[str, Any] = Field(default_factory=new_dict)  # command id -> key, checked by the app
    confirm_cancel: bool = True  # the app asks y/N before `c` kills a running task
    worktree: bool = False  # tasks that do not say get `worktree: true`
    # Taskfile tasks an agent may pass arguments to through run_user_task ("*": any). Read
    # from the user's own config.toml only: a project (which agents write to) cannot grant it.
    agent_task_args: list[str] = Field(default_factory=new_list)
    # Rules choosing the agent of a task that leaves agent.type out (tui.model.classify).
    classify: list[ClassifyRule] = Field(default_factory=new_list)
    # Workflow defaults for every task file's tasks that set none (tui.model.workflow).
    on_error: OnErrorChoice = OnError.NONE
    on_max_retries: OnMaxRetriesChoice = OnMaxRetries.NONE
    hooks: Hooks | None = None
    # From the [summarizer] table (not a [settings] key): `transfer: summary`'s summariser.
    summarizer: Summarizer | None = None
    # From the [classifier] table: the agent that classifies what no `classify` rule does.
    classifier: Classifier | None = None

    def workflow_defaults(self) -> FileDefaults:
        return FileDefaults(
            on_error=self.on_error,
            on_max_retries=self.on_max_retries,
            hooks=self.hooks,
            summarizer=self.summarizer,
            classifier=self.classifier,
        )

    @field_validator("command_timeout", mode="before")
    @classmethod
    def _parse_timeout(cls, value: Any) -> float:
        return parse_duration(value)

    @field_validator("notifications", mode="before")
    @classmethod
    def _check_notify(cls, value: Any) -> Any:
        return one_of("notifications", value, NOTIFY_MODES, optional=True)


class ExecutorSettings(_Model):
    """``[executor]``: what carries runs out. ``local`` (the default) runs them as process
    groups on this machine; ``ray`` places each in an actor on a Ray cluster."""

    kind: str = "local"
    address: str = "auto"  # "auto" (a cluster started on this machine), HOST:PORT, ray://HOST:PORT
    # Environment variables (names only) the Ray workers get from this environment, through
    # Ray's runtime env: never written to the database or the log.
    forward_env: list[str] = Field(default_factory=new_list)

    @field_validator("kind", mode="before")
    @classmethod
    def _check_kind(cls, value: Any) -> Any:
        return one_of("executor.kind", value, EXECUTOR_KINDS, optional=True)

    @field_validator("address")
    @classmethod
    def _check_address(cls, value: str) -> str:
        if not _ADDRESS.match(value):
            raise ValueError(
                f"executor.address must be auto, HOST:PORT or ray://HOST:PORT; got {value!r}"
            )
        return value

    @field_validator("forward_env")
    @classmethod
    def _check_names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not _ENV_NAME.match(name):
                raise ValueError(
                    f"executor.forward_env: {name!r} is not an environment variable name; "
                    "list names only (the values come from the environment tui runs in)"
                )
        return value


# Config sections `tui run` of a file never reads unless config.toml has them: their models
# are built when first used (defer_build), not at every import (~2 ms of each launch).
_ON_FIRST_USE = ConfigDict(extra="forbid", defer_build=True)


class AgentDef(_Model):
    model_config = _ON_FIRST_USE

    # "" = from `bin` (claude, gemini, codex), else "command" when a command template is given
    type: str = ""
    description: str = ""
    bin: str = ""  # the CLI to run (claude, gemini, codex)
    # `start`'s argv template for a custom agent CLI: {bin} {model} {role} {role_file} {prompt}
    command: str = ""
    default_model: str = ""
    models: dict[str, str] = Field(default_factory=new_dict)  # short name -> model id
    args: list[str] = Field(default_factory=new_list)  # extra CLI arguments
    env: dict[str, str] = Field(default_factory=new_dict)
    # Shell agents: the script to run; the prompt arrives in $TUI_PROMPT, never in the script.
    script: str = ""

    @field_validator("env")
    @classmethod
    def _no_secrets(cls, value: dict[str, str]) -> dict[str, str]:
        return refuse_secrets(value)

    @field_validator("type", mode="before")
    @classmethod
    def _check_type(cls, value: Any) -> Any:
        return one_of("type", value, AGENT_DEF_TYPES, optional=True)

    @model_validator(mode="after")
    def _shell_needs_script(self) -> AgentDef:
        if not self.type:
            # A `start` agent names its CLI in `bin`: tui drives the CLIs it knows with their
            # own protocol, and runs any other through its command template.
            known = os.path.basename(self.bin)
            if known in CLI_KINDS:
                self.type = known
            elif self.command:
                self.type = COMMAND_TYPE
            else:
                raise ValueError(
                    f"type is required: use one of {', '.join(AGENT_DEF_TYPES)} "
                    '(or command = "{bin} --model {model} {prompt}" for another CLI)'
                )
        if self.type == COMMAND_TYPE and not self.command.strip():
            raise ValueError('a command agent needs command = "{bin} ... {prompt}"')
        if self.type == "shell" and not self.script.strip():
            raise ValueError('a shell agent needs script = "..." (the prompt is in $TUI_PROMPT)')
        if self.type != "shell" and self.script:
            raise ValueError(f"script is only for shell agents; a {self.type} agent takes bin/args")
        takes_models = self.type == COMMAND_TYPE or KINDS[self.type].models
        if not takes_models and (self.models or self.default_model):
            takes = ", ".join(k.name for k in KINDS.values() if k.models)
            raise ValueError(f"a {self.type} agent takes no model; models are for {takes} agents")
        return self


class Source(_Model):
    """Where a role's, context's or template's text comes from (at least one of the three)."""

    model_config = _ON_FIRST_USE

    description: str = ""
    file: str = ""
    command: str = ""
    prompt: str | None = None
    shell: str = ""
    # How `shell` takes a script; "" = known from the interpreter (sh -c, node -e, ...).
    shell_args: list[str] | None = None
    command_timeout: float | None = None

    @field_validator("command_timeout", mode="before")
    @classmethod
    def _parse_timeout(cls, value: Any) -> float | None:
        return None if value is None else parse_duration(value)

    @model_validator(mode="after")
    def _needs_text(self) -> Source:
        if not self.file and not self.command and self.prompt is None:
            raise ValueError("give at least one of file, command or prompt")
        return self


class Role(Source):
    pass


class ContextDef(Source):
    required: bool = False


class TaskTemplate(Source):
    # Extra keys are defaults for the task (timeout, priority, model...), checked by the loader.
    model_config = ConfigDict(extra="allow")

    alias: str = ""
    role: str = ""
    agent: str = ""
    contexts: list[str] = Field(default_factory=new_list)  # optional contexts this template uses
    variables: list[Variable] = Field(default_factory=new_list)  # {{name}} in the prompt

    @property
    def defaults(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


SECTION_MODELS: dict[str, type[BaseModel]] = {
    "agents": AgentDef,
    "roles": Role,
    "contexts": ContextDef,
    "tasks": TaskTemplate,
}
