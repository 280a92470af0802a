"""Workflow fields of a task: what it takes from its dependencies (``context``), when it runs
(``when``), what a failure means (``on_error``, ``on_max_retries``) and the commands run
around it (``hooks``). The engine gives them meaning (tui.engine.workflow, conditions, hooks).
"""

from __future__ import annotations

import shlex
from enum import StrEnum
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_serializer,
    field_validator,
    model_validator,
)

from tui.model.agent_kinds import KINDS
from tui.model.choices import one_of
from tui.model.classify import Classifier, shell_prompt
from tui.model.duration import format_duration, parse_duration
from tui.model.factories import new_list

# A result kept with a task: the parsed output_format value, or this many characters of the
# agent's final message / the shell's last stdout lines (the end kept: that is where the
# answer is). Larger results are cut, marked with a leading "…".
RESULT_CHARS = 64 * 1024


# A plain command's result (its last stdout lines, tui.agents.result_tail) is read from this
# much of the end of its stdout: one that starts further back is kept from there, after "…".
RESULT_TAIL_BYTES = 1024 * 1024
CUT_NOTE = (
    f"the result was cut: a command's last stdout lines are read from its last "
    f"{RESULT_TAIL_BYTES // 1024} KiB of stdout and these began before them "
    "(print less, or write the result to a file and print its path)"
)


def cap_result(text: str) -> str:
    return text if len(text) <= RESULT_CHARS else "…" + text[-(RESULT_CHARS - 1) :]


class OnError(StrEnum):
    NONE = ""  # unset: the file's default, else retry
    RETRY = "retry"
    SKIP = "skip"
    FAIL = "fail"


class OnMaxRetries(StrEnum):
    NONE = ""  # unset: the file's default, else fail
    SKIP = "skip"
    FAIL = "fail"


class Transfer(StrEnum):
    FULL = "full"
    SUMMARY = "summary"
    MINIMAL = "minimal"


PRESERVE = ("outputs", "decisions", "errors")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ContextSpec(_Model):
    """Which dependencies' results go into the task's prompt (or, for shell, its environment)."""

    # Written `from`, a Python keyword: hence the alias.
    model_config = ConfigDict(extra="forbid", validate_by_name=True, serialize_by_alias=True)

    from_: list[str] | str = Field(default="all", alias="from")
    transfer: Transfer = Transfer.FULL
    # Which parts travel: the result (or a summary's key_outputs), a summary's decisions,
    # the error (or a summary's errors); a summary's own text always does.
    preserve: list[str] = Field(default_factory=lambda: list(PRESERVE))

    @field_validator("from_", mode="before")
    @classmethod
    def _check_from(cls, value: Any) -> Any:
        if isinstance(value, str) and value != "all":
            return [value]  # one name, as depends_on takes it
        return value

    @field_validator("transfer", mode="before")
    @classmethod
    def _check_transfer(cls, value: Any) -> Any:
        return one_of("context.transfer", value, tuple(t.value for t in Transfer), False)

    @field_validator("preserve", mode="before")
    @classmethod
    def _check_preserve(cls, value: Any) -> Any:
        if isinstance(value, list):
            for item in value:
                one_of("context.preserve", item, PRESERVE, optional=False)
        return value

    def names(self, depends_on: list[str]) -> list[str]:
        """The dependencies (as written in depends_on) whose results are transferred."""
        return list(depends_on) if self.from_ == "all" else list(self.from_)


HOOK_EVENTS = ("on_start", "on_complete", "on_error", "on_skip", "on_progress")
HOOK_TIMEOUT = 30.0  # seconds, unless `hooks.timeout` says otherwise


class Hooks(_Model):
    """Commands run when the task starts, completes, fails an attempt, is skipped, or changes
    state in any other way (progress). Each is an argv: a list of words, or one string split
    as a shell would split it (never run by one); task data reaches it only on stdin (the task
    as JSON) and in ``TUI_*`` variables."""

    on_start: list[str] = Field(default_factory=new_list)
    on_complete: list[str] = Field(default_factory=new_list)
    on_error: list[str] = Field(default_factory=new_list)
    on_skip: list[str] = Field(default_factory=new_list)
    on_progress: list[str] = Field(default_factory=new_list)
    timeout: float = HOOK_TIMEOUT

    @field_validator(*HOOK_EVENTS, mode="before")
    @classmethod
    def _argv(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                words = shlex.split(value)
            except ValueError as e:
                raise ValueError(
                    f"hook command {value!r} cannot be split into words: {e}"
                ) from None
            if not words:
                raise ValueError("hook command is empty")
            return words
        return value  # a list: its words as they are ([] = no hook)

    @field_validator("timeout", mode="before")
    @classmethod
    def _parse_timeout(cls, value: Any) -> float:
        seconds = parse_duration(value)
        if seconds <= 0:
            raise ValueError("hooks.timeout must be more than 0")
        return seconds

    @field_serializer("timeout", when_used="json")
    def _dump_timeout(self, value: float) -> str:
        return format_duration(value)

    def merged_over(self, base: Hooks | None) -> Hooks:
        """These hooks, each event not set here taken from ``base`` (a file's or config's)."""
        if base is None:
            return self
        own = self.model_dump(exclude_defaults=True)
        return base.model_copy(update=own)


def check_on_error(value: Any) -> Any:
    return one_of("on_error", value, tuple(v.value for v in OnError), optional=True)


def check_on_max_retries(value: Any) -> Any:
    return one_of("on_max_retries", value, tuple(v.value for v in OnMaxRetries), optional=True)


# The field types a task, a file's defaults and config.toml's [settings] share: a wrong value
# is the same clear error (the choices named) wherever it is written.
OnErrorChoice = Annotated[OnError, BeforeValidator(check_on_error)]
OnMaxRetriesChoice = Annotated[OnMaxRetries, BeforeValidator(check_on_max_retries)]


class Strategy(StrEnum):
    AGGRESSIVE = "aggressive"  # one line, no agent: "X completed: success"
    MODERATE = "moderate"  # outputs, decisions, errors (by the summariser agent)
    COMPREHENSIVE = "comprehensive"  # the reasoning compressed (by the summariser agent)


# The strategies that run the summariser agent as a task of its own (tui.model.summaries).
AGENT_STRATEGIES = (Strategy.MODERATE, Strategy.COMPREHENSIVE)
SUMMARY_FIELDS = ("summary", "key_outputs", "decisions", "errors")
# A shell summariser is a script reading $TUI_CONTEXT_FILE (a stand-in, or a local tool).
SUMMARIZER_AGENTS = tuple(k for k in KINDS if k != "taskfile")


class Trigger(StrEnum):
    ON_THRESHOLD = "on_threshold"  # a result longer than `threshold` characters
    ON_COMPLETION = "on_completion"  # every result, whatever its size
    EVERY = "every"  # every Nth upstream task to complete (`every: N`)


COMPACTION_THRESHOLD = 20_000  # characters, unless `compaction.threshold` says otherwise


class Compaction(_Model):
    """When a dependency's result is compacted by the summariser before it reaches a task
    that takes it whole (``context: {transfer: full}``): tui.model.summaries adds the
    ``compact:NAME`` task, tui.engine.dispatch decides at run time whether it runs."""

    threshold: int = Field(default=COMPACTION_THRESHOLD, ge=1)
    trigger: Trigger = Trigger.ON_THRESHOLD
    every: int = Field(default=0, ge=0)

    @field_validator("trigger", mode="before")
    @classmethod
    def _check_trigger(cls, value: Any) -> Any:
        return one_of("compaction.trigger", value, tuple(t.value for t in Trigger), False)

    @model_validator(mode="after")
    def _every_with_its_trigger(self) -> Compaction:
        if self.trigger == Trigger.EVERY and self.every < 1:
            raise ValueError("compaction.trigger every needs every: N (N >= 1)")
        if self.every and self.trigger != Trigger.EVERY:
            raise ValueError("compaction.every applies only with trigger: every")
        return self

    def wanted(self, size: int, nth: int) -> bool:
        """Whether a result of ``size`` characters, the ``nth`` (1, 2…) of the upstream
        results under an `every` trigger to complete, is compacted."""
        if self.trigger == Trigger.ON_COMPLETION:
            return True
        if self.trigger == Trigger.EVERY:
            return nth % self.every == 0
        return size > self.threshold

    def describe(self) -> str:
        if self.trigger == Trigger.EVERY:
            return f"every {self.every} completions"
        if self.trigger == Trigger.ON_COMPLETION:
            return "on completion"
        return f"over {self.threshold} characters"


class Summarizer(_Model):
    """How ``context: {transfer: summary}`` shortens an upstream result: config.toml's
    ``[summarizer]``, a task file's ``summarizer:``, or a task's own (tui.engine.summaries).
    ``compaction`` compacts long results for ``transfer: full`` too."""

    strategy: Strategy = Strategy.AGGRESSIVE
    agent: str = "claude"  # the summariser's agent type and (cheap) model
    model: str = ""
    prompt: str = Field(default="", validate_default=True)  # "" = the strategy's built-in
    compaction: Compaction | None = None

    @field_validator("strategy", mode="before")
    @classmethod
    def _check_strategy(cls, value: Any) -> Any:
        return one_of("summarizer.strategy", value, tuple(s.value for s in Strategy), False)

    @field_validator("agent", mode="before")
    @classmethod
    def _check_agent(cls, value: Any) -> Any:
        return one_of("summarizer.agent", value, SUMMARIZER_AGENTS, optional=False)

    @field_validator("prompt")
    @classmethod
    def _shell_prompt(cls, value: str, info: ValidationInfo) -> str:
        return shell_prompt("summarizer", value, info)


class FileDefaults(_Model):
    """What a batch file (or config.toml) sets for every task that does not set it itself."""

    on_error: OnErrorChoice = OnError.NONE
    on_max_retries: OnMaxRetriesChoice = OnMaxRetries.NONE
    hooks: Hooks | None = None
    summarizer: Summarizer | None = None
    # Only for tasks that leave agent.type out and match no classify rule (the loader).
    classifier: Classifier | None = None

    def over(self, base: FileDefaults | None) -> FileDefaults:
        """These defaults, what they leave unset taken from ``base`` (a file's over config's)."""
        if base is None:
            return self
        hooks = base.hooks if self.hooks is None else self.hooks.merged_over(base.hooks)
        return FileDefaults(
            on_error=self.on_error or base.on_error,
            on_max_retries=self.on_max_retries or base.on_max_retries,
            hooks=hooks,
            summarizer=self.summarizer or base.summarizer,
            classifier=self.classifier or base.classifier,
        )

    def apply(self, task: Any) -> None:
        """Fill the task's unset fields from these defaults (a Task, typed loosely: the task
        module imports this one)."""
        # Only what changes is assigned: a model's assignment is ~1 µs, for each of 1,000s.
        if not task.on_error and self.on_error:
            task.on_error = self.on_error
        if not task.on_max_retries and self.on_max_retries:
            task.on_max_retries = self.on_max_retries
        if self.hooks is not None:
            task.hooks = self.hooks if task.hooks is None else task.hooks.merged_over(self.hooks)
        if task.summarizer is None and self.summarizer is not None:
            task.summarizer = self.summarizer
