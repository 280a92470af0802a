"""The task users write in YAML; the store persists it as ``model_dump(mode="json")``."""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_serializer, field_validator

from tui.model.agent_kinds import AGENT_TYPES, DEFAULT_TYPE, check_max_turns
from tui.model.choices import one_of, required_text
from tui.model.duration import format_duration, parse_duration
from tui.model.factories import new_dict, new_list, new_task_id
from tui.model.output_format import OutputFormat
from tui.model.resources import Resources
from tui.model.secrets import refuse_secrets
from tui.model.subtasks import Completion, check_completion
from tui.model.variables import Variable
from tui.model.workflow import (
    ContextSpec,
    Hooks,
    OnError,
    OnErrorChoice,
    OnMaxRetries,
    OnMaxRetriesChoice,
    Summarizer,
)


class Priority(StrEnum):
    NONE = ""
    CRITICAL = "critical"  # above high: ahead of everything else in the queue
    HIGH = "high"
    NORMAL = "normal"
    LOW = "low"

    @property
    def rank(self) -> int:
        """Sort key: critical first, then high; unset counts as normal, low last."""
        return priority_rank(self)


# Stored in tasks.priority_rank: high/normal/low keep the ranks databases already hold.
PRIORITY_RANKS = {Priority.CRITICAL: -1, Priority.HIGH: 0, Priority.LOW: 2}


def priority_rank(priority: Priority | str) -> int:
    return PRIORITY_RANKS.get(Priority(priority), 1)


class Backoff(StrEnum):
    NONE = ""  # unset: exponential
    FIXED = "none"  # the same delay every time
    LINEAR = "linear"
    EXPONENTIAL = "exponential"


class PermissionMode(StrEnum):
    NONE = ""
    DEFAULT = "default"
    ACCEPT_EDITS = "acceptEdits"
    BYPASS = "bypassPermissions"
    PLAN = "plan"
    DONT_ASK = "dontAsk"
    DELEGATE = "delegate"


MAX_ATTEMPTS = 1000  # more is a typo, and a huge one no longer fits SQLite's integers

# Columns the engine owns; a YAML file setting them is warned, not rejected.
RUNTIME_FIELDS = (
    "group",
    "state",
    "rejection_comment",
    "question_json",
    "created_at",
    "updated_at",
)


# Validation context for a spec read back from the database: checks added for new input
# (ids, secrets in env, bounds) must not make a task stored before them unreadable.
STORED: dict[str, Any] = {"stored": True}


def is_stored(info: ValidationInfo) -> bool:
    return bool(info.context and info.context.get("stored"))


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AgentConfig(_Model):
    type: str = DEFAULT_TYPE
    model: str = ""
    context_files: list[str] = Field(default_factory=new_list)
    instructions: str = ""
    project_dir: str = ""
    max_budget_usd: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    # Agentic turns per run (claude --max-turns); 0 = the CLI's own default. After `type`:
    # its validator asks whether the agent kind can take it.
    max_turns: int = Field(default=0, ge=0)
    permission_mode: PermissionMode = PermissionMode.NONE
    allowed_tools: list[str] = Field(default_factory=new_list)
    disallowed_tools: list[str] = Field(default_factory=new_list)
    system_prompt_append: str = ""
    additional_args: list[str] = Field(default_factory=new_list)
    skip_planning: bool = False
    # Extension: environment for the agent's process (a config agent's env and bin, and a
    # shell agent's prompt in $TUI_PROMPT). tui's own TUI_* variables win over it.
    env: dict[str, str] = Field(default_factory=new_dict)

    @field_validator("env")
    @classmethod
    def _no_secrets(cls, value: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        return value if is_stored(info) else refuse_secrets(value)

    # agent.type taskfile: the Taskfile task to run, what it gets as {{.CLI_ARGS}}, and
    # go-task variables (`task NAME K=V`, what `requires: vars` asks for).
    task: str = ""
    args: list[str] = Field(default_factory=new_list)
    vars: dict[str, str] = Field(default_factory=new_dict)

    @field_validator("vars", mode="before")
    @classmethod
    def _vars_as_text(cls, value: Any) -> Any:
        # go-task takes `K=V` text; YAML's numbers and booleans are written as YAML wrote them.
        if not isinstance(value, dict):
            return value
        bad = [k for k in value if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(k))]
        if bad:
            raise ValueError(
                f"{bad[0]!r} is not a go-task variable name: use letters, digits and _, "
                "not starting with a digit"
            )
        scalar = (str, int, float, bool)
        return {
            str(k): (str(v).lower() if isinstance(v, bool) else str(v))
            if isinstance(v, scalar)
            else v
            for k, v in value.items()
        }

    # Give the agent CLI tui's MCP tools (ask_user, run_user_task...); false opts out.
    mcp: bool = True

    @field_validator("type", mode="before")
    @classmethod
    def _check_type(cls, value: Any) -> Any:
        return one_of("agent.type", value, AGENT_TYPES, optional=True)

    @field_validator("max_turns")
    @classmethod
    def _check_max_turns(cls, value: int, info: ValidationInfo) -> int:
        return check_max_turns(value, str(info.data.get("type", DEFAULT_TYPE)))

    @field_validator("permission_mode", mode="before")
    @classmethod
    def _check_permission_mode(cls, value: Any) -> Any:
        choices = tuple(m.value for m in PermissionMode)
        return one_of("agent.permission_mode", value, choices, optional=True)

    @field_validator("instructions")
    @classmethod
    def _check_instructions(cls, value: str, info: ValidationInfo) -> str:
        # Empty is the field default only so the loader can say "required" in its own words.
        # A Taskfile task names `task` instead (a stored one reads back with "" here).
        if info.data.get("type") == "taskfile":
            return value
        return required_text("agent.instructions", value)


class RetryConfig(_Model):
    max_attempts: int = Field(default=1, ge=1)
    backoff: Backoff = Backoff.NONE
    # Extension: base delay between attempts, written as a Go duration ("2s").
    delay: float = 1.0

    @field_validator("max_attempts")
    @classmethod
    def _at_most(cls, value: int, info: ValidationInfo) -> int:
        if value > MAX_ATTEMPTS and not is_stored(info):
            raise ValueError(f"retry.max_attempts must be <= {MAX_ATTEMPTS}; got {value}")
        return value

    @field_validator("backoff", mode="before")
    @classmethod
    def _check_backoff(cls, value: Any) -> Any:
        return one_of("retry.backoff", value, tuple(b.value for b in Backoff), optional=True)

    @field_validator("delay", mode="before")
    @classmethod
    def _parse_delay(cls, value: Any) -> float:
        return parse_duration(value)

    @field_serializer("delay", when_used="json")
    def _dump_delay(self, value: float) -> str:
        return format_duration(value)


class WorktreeSpec(_Model):
    """``worktree:`` — the agent works in its own git worktree and branch (tui.engine.worktrees).
    ``true`` is ``{}``: branch from the project's HEAD as it is at submit time."""

    model_config = ConfigDict(extra="forbid", validate_by_name=True, serialize_by_alias=True)

    base: str = ""  # the ref to branch from, pinned at submit ("" = HEAD)
    # A task (name in the same file, or id) whose branch and worktree this one continues.
    from_: str = Field(default="", alias="from")


def _worktree_in(value: Any) -> Any:
    if value is True:
        return {}
    if value is False:
        return None
    return value


class Task(_Model):
    id: str = Field(default_factory=new_task_id)
    parent_task_id: str = ""
    name: str
    description: str = ""
    agent: AgentConfig
    # Seconds; 0 means no limit. YAML and JSON carry it as a Go duration string.
    timeout: float = 0.0
    retry: RetryConfig = Field(default_factory=RetryConfig)
    priority: Priority = Priority.NONE
    tags: list[str] = Field(default_factory=new_list)
    depends_on: list[str] = Field(default_factory=new_list)
    # Extension: a human reviews the result before the task completes.
    review: bool = False
    # The final result is parsed and checked; a mismatch fails the attempt.
    output_format: OutputFormat | None = None
    # Template variables: declared here (or in the file), used as {{name}} in
    # agent.instructions and agent.system_prompt_append, filled in by the loader.
    variables: list[Variable] = Field(default_factory=new_list)
    vars: dict[str, str | float | bool] = Field(default_factory=new_dict)
    # What the task needs of the node that runs it (the Ray executor places it by this).
    resources: Resources | None = None
    # Workflow (tui.model.workflow): upstream results in the prompt, a condition, what a
    # failure means, and commands run around the task.
    context: ContextSpec | None = None
    when: str = ""
    on_error: OnErrorChoice = OnError.NONE
    on_max_retries: OnMaxRetriesChoice = OnMaxRetries.NONE
    hooks: Hooks | None = None
    summarizer: Summarizer | None = None  # for context: {transfer: summary}; see workflow.py
    summarizes: str = ""  # the id of the task this summariser task summarises (model/summaries)
    compacts: str = ""  # the id of the task whose long result this task compacts (likewise)
    # Classification by the classifier agent (tui.model.classifier_tasks): the id of the task that
    # picks this task's agent ("" once it has, or when it never needed to), and on that task,
    # the id of the task it classifies.
    classify_by: str = ""
    classifies: str = ""
    # Subtasks (tui.model.subtasks): when a parent completes, and whether it is a group made
    # of a file's `subtasks:` (it runs nothing itself; set by the loader).
    completion: Completion = Completion.ALL
    group: bool = False
    # Map (tui.model.foreach): one child per item, at most max_parallel (0: no bound) of a
    # parent's children running at once.
    foreach: list[Any] | str | None = None
    max_parallel: int = Field(default=0, ge=0)
    # Loop (tui.engine.loops): run again until the expression holds, at most max_iterations.
    until: str = ""
    max_iterations: int = Field(default=10, ge=1, le=1000)

    @field_validator("completion", mode="before")
    @classmethod
    def _check_completion(cls, value: Any) -> Any:
        return check_completion(value)

    # Extension (issue 15): a git worktree and branch of its own for the agent.
    worktree: WorktreeSpec | None = None

    @field_validator("worktree", mode="before")
    @classmethod
    def _worktree_flag(cls, value: Any) -> Any:
        return _worktree_in(value)

    # Parts of the agent's system prompt besides agent.system_prompt_append: text, or names
    # of config [contexts.NAME] that the loader replaces by their text (model/system_parts.py).
    system: list[str] = Field(default_factory=new_list)

    @field_validator("system", mode="before")
    @classmethod
    def _one_part(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("id")
    @classmethod
    def _check_id(cls, value: str) -> str:
        return required_text("id", value)

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        return required_text("name", value)

    @field_validator("timeout", mode="before")
    @classmethod
    def _parse_timeout(cls, value: Any) -> float:
        return parse_duration(value)

    @field_validator("priority", mode="before")
    @classmethod
    def _check_priority(cls, value: Any) -> Any:
        return one_of("priority", value, tuple(p.value for p in Priority), optional=True)

    @field_validator("depends_on", mode="before")
    @classmethod
    def _one_dependency(cls, value: Any) -> Any:
        # ``depends_on: build`` is a natural way to write a single dependency.
        return [value] if isinstance(value, str) else value

    @field_serializer("timeout", when_used="json")
    def _dump_timeout(self, value: float) -> str:
        return format_duration(value)

    def to_yaml_dict(self) -> dict[str, Any]:
        """A JSON/YAML-ready dict without default values; ``Task.model_validate`` rebuilds it."""
        blank = Task.model_construct(id=self.id, name=self.name, agent=AgentConfig())
        return _changed(self.model_dump(mode="json"), blank.model_dump(mode="json"))


def default_worktree(tasks: list[Task], enabled: bool, *, parent: Task | None = None) -> list[Task]:
    """The one rule for tasks that do not say (in themselves or as their file's default)
    whether they want a worktree, applied wherever tasks are made (files, templates, the
    app's `o`, subtasks). ``enabled``: the config's ``worktree`` setting gives them one.
    ``parent`` (subtasks an agent creates): they follow it instead — the parent's worktree,
    as ``{from: PARENT}`` (not a dependency: the parent waits for them), or none."""
    for t in tasks:
        if "worktree" in t.model_fields_set:
            continue
        if parent is not None:
            if parent.worktree is not None:
                t.worktree = WorktreeSpec(from_=parent.id)
        elif enabled:
            t.worktree = WorktreeSpec()
    return tasks


def _changed(data: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """Keys of ``data`` whose value differs from ``defaults``, recursing into mappings."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        base = defaults.get(key)
        if isinstance(value, dict) and isinstance(base, dict):
            value = _changed(value, base)
            if value or key == "agent":  # agent is required even when all-default
                out[key] = value
        elif key in ("id", "name") or value != base:
            out[key] = value
    return out
