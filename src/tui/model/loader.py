"""Load task YAML files into validated Tasks, reporting every problem of every file at once.

This module reads the files and their shape (a task, a `tasks:` batch, subtasks) and checks
what spans tasks (ids, dependencies, cycles); each task is read by tui.model.task_reader.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tui.model import subtasks
from tui.model.classifier_tasks import add_classifiers
from tui.model.dependencies import find_cycles, resolve_dependencies, resolve_worktree_from
from tui.model.entry import TaskEntry, field_name
from tui.model.foreach import foreach_issues
from tui.model.issues import Issue, TaskFileError
from tui.model.limits import UnreadableInput, read_bounded
from tui.model.summaries import add_summarizers
from tui.model.task import Task
from tui.model.task_reader import (
    FILE_VARIABLE_KEYS,
    FileVariables,
    FromConfig,
    PartSource,
    RuleSource,
    file_variables,
    read_task,
)
from tui.model.workflow import FileDefaults
from tui.model.workflow_check import DEFAULT_KEYS, file_defaults, workflow_issues
from tui.model.yaml_source import Path as KeyPath
from tui.model.yaml_source import YamlSyntaxError, parse_yaml

YAML_SUFFIXES = (".yaml", ".yml")
_SHAPE_FIX = "write one task (name:, agent:) or a `tasks:` list of them"


@dataclass
class LoadResult:
    tasks: list[Task]
    warnings: list[Issue]


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
    named = FromConfig(parts, classify)
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
    named = FromConfig(parts, classify)
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
    named: FromConfig | None = None,
) -> list[TaskEntry]:
    named = named or FromConfig(None)
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
    named: FromConfig | None = None,
) -> list[TaskEntry]:
    shared = file_variables(data, filename, lines, issues)
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
    named: FromConfig | None = None,
) -> list[TaskEntry]:
    """A task and, when it has ``subtasks:``, its children (tui.model.subtasks), flattened:
    the parent first, each child with its path in the file so errors name its line."""
    own, children = subtasks.split(raw)
    if children is not None and "agent" not in own:
        own["agent"] = {"type": "shell", "instructions": ":"}  # a group runs nothing
    entry = read_task(own, path, filename, lines, issues, warnings, shared, defaults, named)
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
