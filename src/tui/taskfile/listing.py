"""Taskfile tasks: the project's `.agent/Taskfile.yml`, listed by the real go-task binary.

Listing asks `task --list-all --json`; what tui offers is what `task --list` prints (tasks with
a `desc`), plus tasks described only by a `summary:`; `internal: true` ones never show. A
task's `label:` is shown, never used as its name: go-task runs a task by its real name.
Wildcard tasks (`release:*`) are listed as patterns and run by a matching name
(`release:1.2.3`), which go-task hands to the task as `{{.MATCH}}`. Running one:
tui.taskfile.running.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tui.model.suggest import did_you_mean

# go-task's own search order (taskfile/taskfile.go, DefaultTaskfiles).
TASKFILE_NAMES = (
    "Taskfile.yml",
    "taskfile.yml",
    "Taskfile.yaml",
    "taskfile.yaml",
    "Taskfile.dist.yml",
    "taskfile.dist.yml",
    "Taskfile.dist.yaml",
    "taskfile.dist.yaml",
)
AGENT_DIR = ".agent"
LIST_TIMEOUT = 30.0  # seconds; listing only parses the file, so this is generous
_VAR_REF = re.compile(r"\{\{-?\s*\.([A-Za-z_][A-Za-z0-9_]*)\s*-?\}\}")  # {{.NAME}}
NOT_FOUND = (
    "the go-task binary `task` was not found next to this Python or on PATH: "
    "reinstall tui (it depends on go-task-bin) or `pip install go-task-bin`"
)


class TaskfileError(Exception):
    """The Taskfile cannot be read, or names a task it does not have. Shown as is."""


@dataclass(frozen=True)
class TaskfileTask:
    """One runnable task of a Taskfile (or a wildcard pattern of them), as a template."""

    name: str  # the real name (`release:*` for a wildcard task); never the label
    desc: str  # `desc:`, else the `summary:`
    file: str  # absolute path of the Taskfile that defines it
    source: str = "taskfile"
    label: str = ""  # `label:` as go-task shows it, when it differs from the name
    prompts: tuple[str, ...] = ()  # `prompt:` texts a person must confirm before it runs
    requires: tuple[str, ...] = ()  # `requires: vars` names
    line: int = 0  # where the task is defined in ``file``
    aliases: tuple[str, ...] = ()  # `aliases:`: go-task runs the task by these too
    # Static `vars:` of the file and of the task, for the prompt; a name whose value is not
    # plain text (`sh:`, a template) maps to None: unknown until go-task runs.
    file_vars: tuple[tuple[str, str | None], ...] = ()
    task_vars: tuple[tuple[str, str | None], ...] = ()

    def prompt_text(
        self,
        prompt: str,
        name: str = "",
        args: Sequence[str] = (),
        variables: Mapping[str, str] | None = None,
    ) -> str:
        """``prompt`` with its ``{{.VAR}}`` filled in as go-task shows it: the task's own
        vars over the command line's over the file's, and TASK and CLI_ARGS. A variable
        declared nowhere is empty, as in go-task; one known only when go-task runs stays."""
        values: dict[str, str | None] = {"TASK": name or self.name, "CLI_ARGS": shlex.join(args)}
        values.update(self.file_vars)
        values.update(variables or {})
        values.update(self.task_vars)

        def fill(m: re.Match[str]) -> str:
            value = values.get(m.group(1), "")
            return m.group(0) if value is None else value

        return _VAR_REF.sub(fill, prompt)

    @property
    def wildcard(self) -> bool:
        return "*" in self.name

    def matches(self, name: str) -> bool:
        """go-task's rule: the name or an alias, or a pattern of them whose each `*`
        matches any text."""
        return any(_matches(pattern, name) for pattern in (self.name, *self.aliases))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "desc": self.desc,
            "source": self.source,
            "file": self.file,
        }
        for key in ("label", "prompts", "requires", "aliases"):
            if value := getattr(self, key):
                out[key] = list(value) if isinstance(value, tuple) else value
        if self.wildcard:
            out["wildcard"] = True
        return out


def _matches(pattern: str, name: str) -> bool:
    if name == pattern:
        return True
    if "*" not in pattern:
        return False
    parts = (re.escape(p) for p in pattern.split("*"))
    return re.fullmatch("(.*)".join(parts), name, re.DOTALL) is not None


def find_taskfile(project_dir: str | os.PathLike[str]) -> Path | None:
    """The project's `.agent/` Taskfile, by go-task's own list of names and in its order."""
    base = Path(os.path.expanduser(project_dir)) / AGENT_DIR
    for name in TASKFILE_NAMES:
        path = base / name
        if path.is_file():
            return path.resolve()
    return None


def task_binary() -> str:
    """The `task` of this Python's environment (go-task-bin installs it next to python),
    else the first on PATH."""
    here = Path(sys.executable).parent / "task"
    if here.is_file() and os.access(here, os.X_OK):
        return str(here)
    found = shutil.which("task")
    if found is None:
        raise TaskfileError(NOT_FOUND)
    return found


def list_tasks(
    project_dir: str | os.PathLike[str], *, all_tasks: bool = False
) -> list[TaskfileTask]:
    """The described tasks of the project's Taskfile (every non-internal one with
    ``all_tasks``); [] when the project has no Taskfile. TaskfileError for a broken one."""
    path = find_taskfile(project_dir)
    if path is None:
        return []
    return list_file(path, all_tasks=all_tasks)


def list_file(path: Path, *, all_tasks: bool = False) -> list[TaskfileTask]:
    argv = [task_binary(), "--list-all", "--json", "--no-status", "--taskfile", str(path)]
    try:
        done = subprocess.run(
            argv,
            cwd=path.parent,
            capture_output=True,
            text=True,
            timeout=LIST_TIMEOUT,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except subprocess.TimeoutExpired:
        late = f"{path}: `task --list-all` did not finish in {LIST_TIMEOUT:.0f}s"
        raise TaskfileError(late) from None
    # With no task at all go-task prints an empty list and exits 1: the JSON decides.
    data = _parse(done.stdout)
    if data is None:
        said = go_task_said(done.stderr) or f"exit code {done.returncode}"
        raise TaskfileError(f"{path} cannot be loaded:\n{said}")
    details = _Details()
    out = []
    for t in data["tasks"]:
        if not isinstance(t, dict) or not t.get("name"):
            continue
        name = str(t.get("task") or t["name"])
        desc = str(t.get("desc") or "").strip() or str(t.get("summary") or "").strip()
        if not desc and not all_tasks:
            continue  # what `task --list` leaves out
        where = t.get("location") or {}
        file = str(where.get("taskfile") or path)
        line = int(where.get("line") or 0)
        raw = details.task(file, line)
        label = str(t["name"]) if str(t["name"]) != name else ""
        out.append(
            TaskfileTask(
                name=name,
                desc=desc,
                file=file,
                label=label,
                prompts=_texts(raw.get("prompt")),
                requires=_required(raw.get("requires")),
                line=line,
                aliases=tuple(str(a) for a in t.get("aliases") or () if a),
                file_vars=_static_vars(details.file_vars(file)),
                task_vars=_static_vars(raw.get("vars")),
            )
        )
    return out


def go_task_said(stderr: str) -> str:
    """go-task's own error lines, one per line, without its `task: ` prefix."""
    lines = (ln.rstrip().removeprefix("task: ") for ln in stderr.splitlines())
    return "\n".join(ln for ln in lines if ln.strip())


def _parse(stdout: str) -> dict[str, Any] | None:
    try:
        data = json.loads(stdout)
    except ValueError:
        return None
    if isinstance(data, dict) and isinstance(data.get("tasks"), list):
        return data
    return None


class _Details:
    """A task's own YAML (its prompt and required vars, which `--json` does not carry),
    found by the file and line go-task reports. Unreadable YAML gives nothing: go-task,
    which read it, still refuses a prompt without `--yes`."""

    def __init__(self) -> None:
        self._files: dict[str, tuple[dict[int, dict[str, Any]], Any]] = {}

    def task(self, file: str, line: int) -> dict[str, Any]:
        return self._read(file)[0].get(line, {})

    def file_vars(self, file: str) -> Any:
        """The file's top-level `vars:` as written."""
        return self._read(file)[1]

    def _read(self, file: str) -> tuple[dict[int, dict[str, Any]], Any]:
        if file not in self._files:
            self._files[file] = _tasks_by_line(file)
        return self._files[file]


def _static_vars(value: Any) -> tuple[tuple[str, str | None], ...]:
    """`vars:` → (name, plain text value, or None for one go-task works out as it runs)."""
    if not isinstance(value, dict):
        return ()
    out: list[tuple[str, str | None]] = []
    for name, v in value.items():
        plain = isinstance(v, str | int | float) and not isinstance(v, bool)
        text = str(v) if plain else None
        out.append((str(name), None if text is None or "{{" in text else text))
    return tuple(out)


def _tasks_by_line(file: str) -> tuple[dict[int, dict[str, Any]], Any]:
    try:
        text = Path(file).read_text(encoding="utf-8")
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}, None
    if not isinstance(root, yaml.MappingNode) or not isinstance(data, dict):
        return {}, None
    tasks = data.get("tasks")
    if not isinstance(tasks, dict):
        return {}, data.get("vars")
    out: dict[int, dict[str, Any]] = {}
    for key, value in root.value:
        if getattr(key, "value", None) != "tasks" or not isinstance(value, yaml.MappingNode):
            continue
        for task_key, _ in value.value:
            body = tasks.get(task_key.value)
            if isinstance(body, dict):
                out[task_key.start_mark.line + 1] = body
    return out, data.get("vars")


def _texts(value: Any) -> tuple[str, ...]:
    """`prompt:` is a string or a list of them."""
    items = value if isinstance(value, list) else [value]
    return tuple(str(v).strip() for v in items if isinstance(v, str | int | float) and str(v))


def _required(value: Any) -> tuple[str, ...]:
    """`requires: {vars: [NAME, {name: NAME, enum: [...]}]}` -> the names."""
    names = value.get("vars") if isinstance(value, dict) else None
    if not isinstance(names, list):
        return ()
    out = [v.get("name") if isinstance(v, dict) else v for v in names]
    return tuple(str(n) for n in out if n)


def internal_names(path: Path) -> set[str]:
    """Names of the root Taskfile's `internal: true` tasks (go-task never lists them)."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return set()
    tasks = data.get("tasks") if isinstance(data, dict) else None
    if not isinstance(tasks, dict):
        return set()
    return {str(k) for k, v in tasks.items() if isinstance(v, dict) and v.get("internal")}


def find_task(path: Path, name: str) -> TaskfileTask:
    """The task ``name`` runs (a wildcard pattern's entry for a matching name); TaskfileError
    naming the file, and a "did you mean", when there is none."""
    entries = list_file(path, all_tasks=True)
    exact = [e for e in entries if e.name == name or name in e.aliases]
    found = exact or [e for e in entries if e.matches(name)]
    if found:
        return found[0]
    if name in internal_names(path):
        raise TaskfileError(
            f"{path}: task {name!r} is internal (`internal: true`): only other tasks of the "
            "Taskfile can run it; run one of those, or remove `internal`"
        )
    labelled = [e.name for e in entries if e.label == name]
    guess = labelled or did_you_mean(name, [e.name for e in entries])
    hint = f"did you mean {guess[0]!r}? " if guess else ""
    if labelled:
        hint = f"{name!r} is the label of task {labelled[0]!r}: run it by that name. "
    raise TaskfileError(
        f"{path} has no task {name!r}; {hint}(`tui task --list` shows them; "
        "fix agent.task or the Taskfile)"
    )


def check_task(path: Path, name: str) -> None:
    find_task(path, name)
