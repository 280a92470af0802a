"""Which agent takes a task that does not say (`agent.type` left out): the first rule of
config's ``[settings] classify`` whose conditions all hold — tags, a name pattern, a project
directory pattern — chooses the agent type (and a model, unless the task names one).
Without rules, or when none matches, the default agent type stays."""

from __future__ import annotations

import fnmatch
import os
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from tui.model.agent_kinds import KINDS
from tui.model.choices import one_of
from tui.model.factories import new_list

# A rule may send a task to an agent CLI or to the shell (a Taskfile task names its task).
CLASSIFY_TYPES = tuple(name for name in KINDS if name != "taskfile")


class ClassifyRule(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tags: list[str] = Field(default_factory=new_list)  # the task has any of them
    name: str = ""  # a glob on the task's name: "docs-*"
    project: str = ""  # a glob on agent.project_dir, ~ expanded: "~/src/web*"
    agent: str  # the agent type chosen
    model: str = ""  # the model, when the task names none

    @field_validator("agent", mode="before")
    @classmethod
    def _check_agent(cls, value: Any) -> Any:
        return one_of("classify.agent", value, CLASSIFY_TYPES, optional=False)

    @model_validator(mode="after")
    def _has_a_condition(self) -> ClassifyRule:
        if not (self.tags or self.name or self.project):
            raise ValueError("a classify rule needs at least one of tags, name or project")
        if self.model and not KINDS[self.agent].models:
            raise ValueError(f"a {self.agent} task takes no model; remove model from the rule")
        return self

    def matches(self, task: dict[str, Any]) -> bool:
        """Whether ``task`` (a task mapping as written) meets every condition given."""
        tags = task.get("tags")
        tags = [tags] if isinstance(tags, str) else tags if isinstance(tags, list) else []
        if self.tags and not set(self.tags) & {t for t in tags if isinstance(t, str)}:
            return False
        name = task.get("name")
        if self.name and not (isinstance(name, str) and fnmatch.fnmatchcase(name, self.name)):
            return False
        if self.project:
            agent = task.get("agent")
            project = agent.get("project_dir") if isinstance(agent, dict) else None
            if not isinstance(project, str) or not project:
                return False
            path = os.path.expanduser(project).rstrip("/")
            if not fnmatch.fnmatchcase(path, os.path.expanduser(self.project).rstrip("/")):
                return False
        return True


def classify(task: dict[str, Any], rules: list[ClassifyRule]) -> ClassifyRule | None:
    """The rule that chooses the agent of ``task`` (a mapping as written), if one does."""
    agent = task.get("agent")
    if not isinstance(agent, dict) or "type" in agent:
        return None  # the task chose; classification is only for tasks that do not
    return next((r for r in rules if r.matches(task)), None)


def apply_rule(task: dict[str, Any], rule: ClassifyRule) -> dict[str, Any]:
    """``task`` with the rule's agent type (and model, unless it names one)."""
    agent = dict(task["agent"])
    agent["type"] = rule.agent
    if rule.model and not agent.get("model"):
        agent["model"] = rule.model
    return {**task, "agent": agent}


# -- the classifier agent: for a task no rule classifies --------------------------------------

# The phase of a PENDING task waiting on its classifier (`tui ls`, the app's state column).
CLASSIFYING = "classifying"

CLASSIFIER_PROMPT = (
    "Choose which coding agent should run the task described above: claude (Claude Code: "
    "general coding, reviews, refactors), gemini (Gemini CLI: large contexts, reading many "
    "files), codex (Codex: focused code edits), or shell (a plain command, no model). "
    'Answer with one JSON object and nothing else: {"agent": "claude", "model": ""} '
    '(model: a model for that agent, or "" for its default).'
)


# Validation context for one config.toml's [summarizer]/[classifier] table: the files' tables
# are merged key by key, so a check across keys waits for the merged table.
PARTIAL: dict[str, Any] = {"partial": True}


def shell_prompt(role: str, prompt: str, info: ValidationInfo) -> str:
    """A shell summariser or classifier runs its ``prompt`` as a bash script: without one it
    would run the built-in prose prompt as a script, and fail only when a task needs it."""
    skip = info.context and (info.context.get("partial") or info.context.get("stored"))
    if info.data.get("agent") == "shell" and not prompt.strip() and not skip:
        raise ValueError(f"a shell {role} needs prompt: the script it runs")
    return prompt


class Classifier(BaseModel):
    """config.toml's ``[classifier]`` (or a task file's ``classifier:``): a cheap-model agent
    that picks the agent of a task that leaves ``agent.type`` out when no classify rule does.
    The loader adds a task ``classify:NAME`` for it; the task waits, shown as classifying."""

    model_config = ConfigDict(extra="forbid")

    agent: str = "claude"  # the classifier's own agent type and (cheap) model
    model: str = ""
    prompt: str = Field(default="", validate_default=True)  # "" = CLASSIFIER_PROMPT

    @field_validator("agent", mode="before")
    @classmethod
    def _check_agent(cls, value: Any) -> Any:
        return one_of("classifier.agent", value, CLASSIFY_TYPES, optional=False)

    @field_validator("prompt")
    @classmethod
    def _shell_prompt(cls, value: str, info: ValidationInfo) -> str:
        return shell_prompt("classifier", value, info)


def answer_schema() -> dict[str, Any]:
    """What the classifier must answer: an agent type a rule could choose, and a model."""
    return {
        "type": "object",
        "required": ["agent"],
        "properties": {
            "agent": {"enum": list(CLASSIFY_TYPES)},
            "model": {"type": "string"},
        },
    }
