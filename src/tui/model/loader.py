"""Load task YAML files into validated Tasks, reporting every problem of every file at once."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from tui.model import subtasks
from tui.model.classifier_tasks import add_classifiers
from tui.model.classify import ClassifyRule, apply_rule
from tui.model.classify import classify as pick
from tui.model.dependencies import find_cycles, resolve_dependencies, resolve_worktree_from
from tui.model.entry import TaskEntry, field_name
from tui.model.error_text import FIXES, human_error
from tui.model.foreach import foreach_issues
from tui.model.issues import Issue, TaskFileError
from tui.model.limits import MAX_ID_CHARS, UnreadableInput, read_bounded
from tui.model.suggest import did_you_mean
from tui.model.summaries import add_summarizers
from tui.model.system_parts import resolve_parts, takes_system
from tui.model.task import RUNTIME_FIELDS, Task
from tui.model.variables import Variable, fill, resolve, unknown_uses
from tui.model.workflow import FileDefaults
from tui.model.workflow_check import DEFAULT_KEYS, file_defaults, workflow_issues
from tui.model.yaml_source import Path as KeyPath
from tui.model.yaml_source import YamlSyntaxError, line_of, parse_yaml

YAML_SUFFIXES = (".yaml", ".yml")
_SHAPE_FIX = "write one task (name:, agent:) or a `tasks:` list of them"


@dataclass
class LoadResult:
    tasks: list[Task]
    warnings: list[Issue]


# What task files may take from config, read only when a task needs it; a source raises an
# exception whose text says what is wrong with the config.
PartSource = Callable[[], Mapping[str, str]]  # named system prompt parts ([contexts.NAME])
RuleSource = Callable[[], list[ClassifyRule]]  # [settings] classify


class _FromConfig:
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


def load_task_files(
    paths: Sequence[str | Path],
    known_ids: Collection[str] = (),
    defaults: FileDefaults | None = None,
    parts: PartSource | None = None,
    classify: RuleSource | None = None,
) -> LoadResult:
    """Tasks from files and directories; raises ``TaskFileError`` listing every error.

    ``known_ids`` are ids already in the database, valid targets for depends_on.
    ``defaults`` (config.toml's on_error, on_max_retries, hooks) fill what neither a task
    nor its file sets. ``parts`` gives the named system prompt parts a task's ``system:``
    may use, ``classify`` the rules that choose the agent of a task that leaves
    ``agent.type`` out (tui.model.classify).
    """
    if isinstance(paths, str | Path):  # a lone path, not a sequence of characters
        paths = [paths]
    issues: list[Issue] = []
    warnings: list[Issue] = []
    entries: list[TaskEntry] = []
    named = _FromConfig(parts, classify)
    files = _expand(paths, issues)
    for path in files:
        try:
            text = read_bounded(str(path)).decode("utf-8")
        except UnicodeDecodeError:
            issues.append(Issue(str(path), None, "", "file is not UTF-8 text", "save it as UTF-8"))
        except UnreadableInput as exc:
            issues.append(Issue(str(path), None, "", str(exc), exc.fix))
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            issues.append(
                Issue(str(path), None, "", f"cannot read file: {reason}", "check its permissions")
            )
        else:
            entries += _read_file(text, str(path), issues, warnings, defaults, named)
    return _finish(entries, known_ids, issues, warnings, [str(p) for p in files])


def load_task_text(
    text: str,
    filename: str,
    known_ids: Collection[str] = (),
    defaults: FileDefaults | None = None,
    parts: PartSource | None = None,
    classify: RuleSource | None = None,
) -> LoadResult:
    """Like ``load_task_files`` for text already in memory; ``filename`` labels the issues."""
    issues: list[Issue] = []
    warnings: list[Issue] = []
    named = _FromConfig(parts, classify)
    entries = _read_file(text, filename, issues, warnings, defaults, named)
    return _finish(entries, known_ids, issues, warnings, [filename])


def _expand(paths: Sequence[str | Path], issues: list[Issue]) -> list[Path]:
    """Files to read: each given file, and each directory's YAML files sorted by name."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            inside = sorted(
                (p for p in path.iterdir() if p.is_file() and p.suffix.lower() in YAML_SUFFIXES),
                key=lambda p: p.name,
            )
            if not inside:
                fix = "put task files ending in .yaml or .yml there, or pass the files themselves"
                issues.append(Issue(str(path), None, "", "directory has no YAML files", fix))
            found += inside
        elif not path.exists():
            issues.append(Issue(str(path), None, "", "file not found", "check the path"))
        elif path.suffix.lower() not in YAML_SUFFIXES:
            issues.append(
                Issue(str(path), None, "", "not a YAML file", "rename it to end in .yaml or .yml")
            )
        else:
            found.append(path)
    # The same file named twice (or via its directory) would only produce duplicate ids.
    unique: dict[Path, Path] = {}
    for path in found:
        unique.setdefault(path.resolve(), path)
    return list(unique.values())


def _read_file(
    text: str,
    filename: str,
    issues: list[Issue],
    warnings: list[Issue],
    defaults: FileDefaults | None = None,
    named: _FromConfig | None = None,
) -> list[TaskEntry]:
    named = named or _FromConfig(None)
    try:
        parsed = parse_yaml(text)
    except YamlSyntaxError as exc:
        where = f" (line {exc.line}, column {exc.column})" if exc.column else ""
        if exc.fix is not None:  # past a limit: not a syntax problem
            issues.append(Issue(filename, exc.line, "", f"{exc.problem}{where}", exc.fix))
            return []
        issues.append(
            Issue(
                filename,
                exc.line,
                "",
                f"invalid YAML: {exc.problem}{where}",
                "check indentation, colons and quotes around that spot",
            )
        )
        return []
    for path, line, first in parsed.duplicates:
        issues.append(
            Issue(
                filename,
                line,
                field_name(path),
                f"key written twice (first at line {first})",
                "keep only one; YAML would silently use the last",
            )
        )

    data, lines = parsed.data, parsed.lines
    if data is None:
        issues.append(Issue(filename, None, "", "file is empty", _SHAPE_FIX))
        return []
    if isinstance(data, list):
        fix = "put the list under a `tasks:` key"
        issues.append(Issue(filename, 1, "", "top level is a list, not a mapping", fix))
        return []
    if not isinstance(data, dict):
        message = f"top level must be a mapping; got {data!r}"
        issues.append(Issue(filename, 1, "", message, _SHAPE_FIX))
        return []
    if "tasks" not in data:
        return _read_tree(
            data, (), filename, lines, issues, warnings, defaults=defaults, named=named
        )
    return _read_batch(data, filename, lines, issues, warnings, defaults, named)


def _read_batch(
    data: dict[str, Any],
    filename: str,
    lines: dict[KeyPath, int],
    issues: list[Issue],
    warnings: list[Issue],
    config: FileDefaults | None = None,
    named: _FromConfig | None = None,
) -> list[TaskEntry]:
    shared = _file_variables(data, filename, lines, issues)
    defaults = file_defaults(data, filename, lines, issues).over(config)
    for key in data:
        if key not in ("tasks", "worktree", *FILE_VARIABLE_KEYS, *DEFAULT_KEYS):
            hint = (
                "a batch file holds only `tasks:` (and shared `variables:`, `vars:`, "
                "`on_error:`, `on_max_retries:`, `hooks:`, `worktree:`); move it"
            )
            issues.append(
                Issue(filename, lines.get((key,)), key, f"unknown top-level key '{key}'", hint)
            )
    tasks = data["tasks"]
    line = lines.get(("tasks",))
    if not tasks:
        fix = "add tasks under `tasks:` as '- name: ...' items"
        issues.append(Issue(filename, line, "tasks", "tasks list is empty", fix))
        return []
    if not isinstance(tasks, list):
        fix = "write each task as a '- name: ...' item under `tasks:`"
        issues.append(Issue(filename, line, "tasks", "tasks must be a list of tasks", fix))
        return []

    entries: list[TaskEntry] = []
    for index, item in enumerate(tasks):
        path: KeyPath = ("tasks", index)
        if isinstance(item, dict):
            if "worktree" in data and "worktree" not in item:  # the file's default
                item = {**item, "worktree": data["worktree"]}
            entries += _read_tree(
                item, path, filename, lines, issues, warnings, shared, defaults, named=named
            )
        else:
            issues.append(
                Issue(
                    filename,
                    lines.get(path),
                    field_name(path),
                    f"each task must be a mapping; got {item!r}",
                    "write the task's keys (name:, agent:, ...) indented under its '-'",
                )
            )
    first_line: dict[str, int | None] = {}
    for entry in entries:
        name = entry.raw_name
        if name is None:
            continue
        if name in first_line:
            issues.append(
                entry.issue(
                    ("name",),
                    f"duplicate task name '{name}' (first at line {first_line[name]})",
                    "give each task in a file its own name; depends_on finds tasks by name",
                )
            )
        else:
            first_line[name] = entry.lines.get((*entry.path, "name"))
    return entries


def _read_tree(
    raw: dict[str, Any],
    path: KeyPath,
    filename: str,
    lines: dict[KeyPath, int],
    issues: list[Issue],
    warnings: list[Issue],
    shared: FileVariables = ([], {}),
    defaults: FileDefaults | None = None,
    depth: int = 0,
    named: _FromConfig | None = None,
) -> list[TaskEntry]:
    """A task and, when it has ``subtasks:``, its children (tui.model.subtasks), flattened:
    the parent first, each child with its path in the file so errors name its line."""
    own, children = subtasks.split(raw)
    if children is not None and "agent" not in own:
        own["agent"] = {"type": "shell", "instructions": ":"}  # a group runs nothing
    entry = _read_task(own, path, filename, lines, issues, warnings, shared, defaults, named)
    if children is None:
        return [entry]
    problem = subtasks.shape_problem(children, "agent" in raw, depth)
    if problem is not None:
        issues.append(entry.issue(("subtasks",), *problem))
        return [entry]
    if entry.task is not None:
        entry.task.group = True
    out = [entry]
    siblings = [c for c in children if isinstance(c, dict)]
    for index, child in enumerate(children):
        where: KeyPath = (*path, "subtasks", index)
        if not isinstance(child, dict):
            message = f"each subtask must be a mapping; got {child!r}"
            fix = "write the subtask's keys (name:, agent:, ...) indented under its '-'"
            issues.append(Issue(filename, lines.get(where), field_name(where), message, fix))
            continue
        data = subtasks.qualify_child(child, entry.raw_id, entry.raw_name, siblings)
        if entry.task is not None:
            data["parent_task_id"] = entry.task.id
        out += _read_tree(
            data, where, filename, lines, issues, warnings, shared, defaults, depth + 1, named
        )
    return out


def _read_task(
    raw: dict[str, Any],
    path: KeyPath,
    filename: str,
    lines: dict[KeyPath, int],
    issues: list[Issue],
    warnings: list[Issue],
    shared: FileVariables = ([], {}),
    defaults: FileDefaults | None = None,
    named: _FromConfig | None = None,
) -> TaskEntry:
    named = named or _FromConfig(None)
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


def _file_variables(
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


def _system_parts(entry: TaskEntry, parts: _FromConfig) -> list[Issue]:
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


def _finish(
    entries: list[TaskEntry],
    known_ids: Collection[str],
    issues: list[Issue],
    warnings: list[Issue],
    file_order: list[str],
) -> LoadResult:
    where_id: dict[str, str] = {}
    for entry in entries:
        if entry.raw_id is None:
            continue
        line = entry.lines.get((*entry.path, "id"))
        here = f"{entry.file}:{line}"
        if entry.raw_id in where_id:
            issues.append(
                entry.issue(
                    ("id",),
                    f"duplicate task id '{entry.raw_id}' (also at {where_id[entry.raw_id]})",
                    "change one id, or leave `id` out to get a generated one",
                )
            )
        else:
            where_id[entry.raw_id] = here

    issues += resolve_dependencies(entries, known_ids)
    issues += resolve_worktree_from(entries, known_ids)
    issues += find_cycles(entries)
    for entry in entries:
        if entry.task is not None:
            found, warned = workflow_issues(entry)
            issues += found + foreach_issues(entry)
            warnings += warned
    if issues:
        rank = {name: i for i, name in enumerate(file_order)}
        issues.sort(key=lambda i: (rank.get(i.file, len(rank)), i.line or 0))
        raise TaskFileError(issues, warnings)
    return LoadResult(add_summarizers(add_classifiers(entries)), warnings)
