"""One task of a task file, from its mapping to a checked Task: the config's classify rules
applied, validated, its ids checked, its file's and its own variables filled in and its
``system:`` parts looked up in the config (tui.model.loader reads the files around it).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import TypeAdapter, ValidationError

from tui.model.classify import ClassifyRule, apply_rule
from tui.model.classify import classify as pick
from tui.model.entry import TaskEntry, field_name
from tui.model.error_text import FIXES, human_error
from tui.model.issues import Issue
from tui.model.limits import MAX_ID_CHARS
from tui.model.suggest import did_you_mean
from tui.model.system_parts import resolve_parts, takes_system
from tui.model.task import RUNTIME_FIELDS, Task
from tui.model.variables import Variable, fill, resolve, unknown_uses
from tui.model.workflow import FileDefaults
from tui.model.yaml_source import Path as KeyPath
from tui.model.yaml_source import line_of

# What task files may take from config, read only when a task needs it; a source raises an
# exception whose text says what is wrong with the config.
PartSource = Callable[[], Mapping[str, str]]  # named system prompt parts ([contexts.NAME])
RuleSource = Callable[[], list[ClassifyRule]]  # [settings] classify


class FromConfig:
    """The config's system parts and classify rules for one load, each read at most once."""

    def __init__(self, parts: PartSource | None, rules: RuleSource | None = None) -> None:
        self._source = parts
        self._parts: Mapping[str, str] | None = None
        self.error = ""
        self._rule_source = rules
        self._rules: list[ClassifyRule] | None = None

    def get(self) -> Mapping[str, str]:
        if self._parts is None:
            try:
                self._parts = self._source() if self._source else {}
            except Exception as e:  # the config's own error, reported with the task's field
                self.error, self._parts = str(e) or type(e).__name__, {}
        return self._parts

    def rules(self) -> list[ClassifyRule]:
        if self._rules is None:
            # A broken config is `tui config validate`'s to report: no rules then.
            try:
                self._rules = self._rule_source() if self._rule_source else []
            except Exception:
                self._rules = []
        return self._rules


def read_task(
    raw: dict[str, Any],
    path: KeyPath,
    filename: str,
    lines: dict[KeyPath, int],
    issues: list[Issue],
    warnings: list[Issue],
    shared: FileVariables = ([], {}),
    defaults: FileDefaults | None = None,
    named: FromConfig | None = None,
) -> TaskEntry:
    """The entry of one task (its subtasks are the loader's); with a problem, its task is None
    and the problems are in ``issues``."""
    named = named or FromConfig(None)
    entry = TaskEntry(filename, path, lines)
    if isinstance(raw.get("id"), str):
        entry.raw_id = raw["id"]
    if isinstance(raw.get("name"), str):
        entry.raw_name = raw["name"]
    deps = raw.get("depends_on")
    deps = [deps] if isinstance(deps, str) else deps
    if isinstance(deps, list) and all(isinstance(d, str) for d in deps):
        entry.raw_depends = deps

    data = _without_nulls(raw)
    agent = data.get("agent")
    if isinstance(agent, dict) and "type" not in agent:
        if rule := pick(data, named.rules()):
            data = apply_rule(data, rule)
        elif defaults is not None and defaults.classifier is not None:
            entry.classifier = defaults.classifier  # the classifier agent picks at run time
    for key in RUNTIME_FIELDS:
        if key in data:
            del data[key]
            warnings.append(
                entry.issue(
                    (key,),
                    f"`{key}` ignored: runtime field set by the engine",
                    f"remove `{key}` from the file",
                    severity="warning",
                )
            )

    problems: list[Issue] = []
    try:
        entry.task = Task.model_validate(data)
    except ValidationError as exc:
        for err in exc.errors(include_url=False):
            message, fix = human_error(err)
            problems.append(entry.issue(tuple(err["loc"]), message, fix))
    agent = data.get("agent")
    # The model defaults these to "" so it cannot say "missing"; a file must give them.
    # A Taskfile task names what to run instead of instructions.
    taskfile = isinstance(agent, dict) and agent.get("type") == "taskfile"
    needed = "task" if taskfile else "instructions"
    if isinstance(agent, dict) and needed not in agent:
        problems.append(
            entry.issue(("agent", needed), f"agent.{needed} is required", FIXES[f"agent.{needed}"])
        )
    problems += _check_ids(entry, data)
    if entry.task is not None:
        problems += _apply_variables(entry, shared)
        problems += _system_parts(entry, named)
        if defaults is not None:
            defaults.apply(entry.task)
    if problems:
        entry.task = None
        issues += problems
    return entry


ID_RE = re.compile(rf"[A-Za-z0-9][A-Za-z0-9._-]{{0,{MAX_ID_CHARS - 1}}}")
_ID_FIX = (
    f"use letters, digits, '.', '_' and '-' (starting with a letter or digit, at most "
    f"{MAX_ID_CHARS} characters), or leave `id` out to get a generated one"
)


def _check_ids(entry: TaskEntry, data: dict[str, Any]) -> list[Issue]:
    """Ids are arguments to commands and words in replies: no spaces, newlines or quotes."""
    problems = []
    for key in ("id", "parent_task_id"):
        value = data.get(key)
        if isinstance(value, str) and value and not ID_RE.fullmatch(value):
            shown = value if len(value) <= 40 else value[:40] + "…"
            message = f"{key} {shown!r} has characters an id may not have"
            problems.append(entry.issue((key,), message, _ID_FIX))
    return problems


FileVariables = tuple[list[Variable], dict[str, Any]]
FILE_VARIABLE_KEYS = ("variables", "vars")
_VARIABLES = TypeAdapter(list[Variable])


def file_variables(
    data: dict[str, Any], filename: str, lines: dict[KeyPath, int], issues: list[Issue]
) -> FileVariables:
    """A batch file's own ``variables:`` and ``vars:``, shared by its tasks."""
    declared: list[Variable] = []
    try:
        declared = _VARIABLES.validate_python(data.get("variables") or [])
    except ValidationError as exc:
        for err in exc.errors(include_url=False):
            loc = ("variables", *err["loc"])
            message, fix = human_error({**err, "loc": loc})
            issues.append(Issue(filename, line_of(lines, loc), field_name(loc), message, fix))
    given = data.get("vars") or {}
    if not isinstance(given, dict):
        fix = "write vars as a mapping, e.g. `vars: {lang: python}`"
        issues.append(Issue(filename, lines.get(("vars",)), "vars", "vars must be a mapping", fix))
        given = {}
    return declared, given


def _apply_variables(entry: TaskEntry, shared: FileVariables) -> list[Issue]:
    """Fill {{name}} in the task's instructions and system prompt (task shadows file)."""
    task = entry.task
    assert task is not None
    declared = [*shared[0], *task.variables]
    if not declared and not shared[1] and not task.vars:
        return []  # no variables here: {{...}} in a script is the script's business
    values, found = resolve(declared, {**shared[1], **task.vars})
    problems = [entry.issue(tuple(f.split(".")), message, fix) for f, message, fix in found]
    agent = task.agent
    for key in ("instructions", "system_prompt_append"):
        for name in unknown_uses(getattr(agent, key), declared):
            if task.foreach is not None and name in ("item", "index"):
                continue  # filled per child at run time (tui.model.foreach)
            fix = f"declare it under `variables:` (- name: {name}), or write it differently"
            problems.append(entry.issue(("agent", key), f"unknown variable {{{{{name}}}}}", fix))
        setattr(agent, key, fill(getattr(agent, key), values))
    for index, part in enumerate(task.system):
        for name in unknown_uses(part, declared):
            fix = f"declare it under `variables:` (- name: {name}), or write it differently"
            problems.append(entry.issue(("system", index), f"unknown variable {{{{{name}}}}}", fix))
    task.system = [fill(part, values) for part in task.system]
    # The task carries its file's variables too: its <current_task_context> shows them all.
    own = {v.name for v in task.variables}
    task.variables = [*(v for v in shared[0] if v.name not in own), *task.variables]
    task.vars = {**shared[1], **task.vars}
    return problems


_PARTS_FIX = (
    "define it in config.toml as [contexts.{name}] with prompt = or file =, or write the "
    "text itself (more than one word)"
)


def _system_parts(entry: TaskEntry, parts: FromConfig) -> list[Issue]:
    """``system:`` only where there is a system prompt; its names replaced by their text."""
    task = entry.task
    assert task is not None
    if not task.system:
        return []
    if not takes_system(task.agent.type):
        message = f"system does not apply to {task.agent.type} tasks: they have no system prompt"
        fix = "remove it, or give the task an agent CLI (agent.type: claude, gemini or codex)"
        return [entry.issue(("system",), message, fix)]
    original = list(task.system)
    if not resolve_parts(original, {})[1]:
        return []  # only text: the config is not read
    found = parts.get()
    task.system, unknown = resolve_parts(original, found)
    if unknown and parts.error:
        message = f"system part '{unknown[0]}' cannot be looked up: {parts.error}"
        return [entry.issue(("system",), message, "fix the config file it names")]
    problems = []
    for index, item in enumerate(original):
        if item in unknown:
            guess = did_you_mean(item, list(found))
            fix = f"did you mean `{guess[0]}`?" if guess else _PARTS_FIX.format(name=item)
            problems.append(entry.issue(("system", index), f"unknown system part '{item}'", fix))
    return problems


def _without_nulls(value: dict[str, Any]) -> dict[str, Any]:
    """Drop keys written with no value (``priority:``), so they mean "leave it out"."""
    return {
        k: _without_nulls(v) if type(v) is dict else v for k, v in value.items() if v is not None
    }
