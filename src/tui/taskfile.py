"""Taskfile tasks: the project's `.agent/Taskfile.yml`, driven by the real go-task binary.

Listing asks `task --list --json` (tasks with a `desc`; `internal: true` ones never show), so
what tui offers is exactly what `task --list` prints. Running builds an argv (never a shell
string): `task --taskfile FILE --exit-code NAME -- ARGS...`, where ARGS reach the Taskfile as
`{{.CLI_ARGS}}` and `--exit-code` passes the command's real exit code through (go-task says 201
for any failing command otherwise).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tui.model.task import Task

TASKFILE_NAMES = ("Taskfile.yml", "Taskfile.yaml")
AGENT_DIR = ".agent"
LIST_TIMEOUT = 30.0  # seconds; listing only parses the file, so this is generous
NOT_FOUND = (
    "the go-task binary `task` was not found next to this Python or on PATH: "
    "reinstall tui (it depends on go-task-bin) or `pip install go-task-bin`"
)


class TaskfileError(Exception):
    """The Taskfile cannot be read, or names a task it does not have. Shown as is."""


@dataclass(frozen=True)
class TaskfileTask:
    """One runnable task of a Taskfile, as a template users can pick."""

    name: str
    desc: str
    file: str  # absolute path of the Taskfile that defines it
    source: str = "taskfile"

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "desc": self.desc, "source": self.source, "file": self.file}


def find_taskfile(project_dir: str | os.PathLike[str]) -> Path | None:
    """``<project_dir>/.agent/Taskfile.yml`` (or ``.yaml``) if it exists."""
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
    flag = "--list-all" if all_tasks else "--list"
    argv = [task_binary(), flag, "--json", "--no-status", "--taskfile", str(path)]
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
        late = f"{path}: `task {flag}` did not finish in {LIST_TIMEOUT:.0f}s"
        raise TaskfileError(late) from None
    # With no described task go-task prints an empty list and exits 1: the JSON decides.
    data = _parse(done.stdout)
    if data is None:
        said = " ".join(done.stderr.split()) or f"exit code {done.returncode}"
        raise TaskfileError(f"{path} cannot be loaded: {_strip_prefix(said)}")
    return [
        TaskfileTask(name=str(t["name"]), desc=str(t.get("desc") or ""), file=str(path))
        for t in data["tasks"]
        if isinstance(t, dict) and t.get("name")
    ]


def _parse(stdout: str) -> dict[str, Any] | None:
    try:
        data = json.loads(stdout)
    except ValueError:
        return None
    if isinstance(data, dict) and isinstance(data.get("tasks"), list):
        return data
    return None


def _strip_prefix(text: str) -> str:
    return text.removeprefix("task: ")


def check_task(path: Path, name: str) -> None:
    """TaskfileError naming the file and the tasks it has when ``name`` is not one of them."""
    names = [t.name for t in list_file(path, all_tasks=True)]
    if name not in names:
        have = ", ".join(names) or "none"
        raise TaskfileError(
            f"{path} has no task {name!r} (tasks: {have}); fix agent.task or the Taskfile"
        )


def run_argv(binary: str, path: Path, name: str, args: Sequence[str]) -> list[str]:
    """The command line that runs task ``name`` with ``args`` as {{.CLI_ARGS}}."""
    # --disable-fuzzy: a typo must not run a different task; --yes: nobody answers prompts;
    # --color=false: go-task colours its own lines (under CI=true too), and its escapes span
    # line breaks, so stored lines would begin with the previous line's reset.
    head = [
        binary,
        "--taskfile",
        str(path),
        "--exit-code",
        "--disable-fuzzy",
        "--yes",
        "--color=false",
        name,
    ]
    return [*head, "--", *args] if args else head


def to_task(
    entry: TaskfileTask,
    args: Sequence[str] = (),
    *,
    project_dir: str | os.PathLike[str],
    **fields: Any,
) -> Task:
    """A tui task that runs ``entry`` with ``args`` (extra Task fields via ``fields``)."""
    agent = {
        "type": "taskfile",
        "task": entry.name,
        "args": list(args),
        "project_dir": str(project_dir),
    }
    agent.update(fields.pop("agent", {}))
    return Task.model_validate(
        {"name": entry.name, "description": entry.desc, "agent": agent, **fields}
    )


@dataclass(frozen=True)
class TaskRunOutput:
    name: str
    exit_code: int
    stdout: str
    stderr: str

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "exit_code": self.exit_code,
            "stdout": self.stdout,
            "stderr": self.stderr,
        }


OUTPUT_CAP = 100_000  # characters kept per stream (the end), so one run cannot flood a model


async def run_captured(
    project_dir: str | os.PathLike[str],
    name: str,
    args: Sequence[str] = (),
    *,
    env: dict[str, str] | None = None,
) -> TaskRunOutput:
    """Run task ``name`` of the project's Taskfile to the end and return what it printed.

    The child stays in the caller's process group on purpose: the caller is an agent's tool
    server, and when the engine stops that agent's group this run goes with it.
    """
    path = find_taskfile(project_dir)
    if path is None:
        raise TaskfileError(f"no .agent/Taskfile.yml in {project_dir}")
    await asyncio.to_thread(check_task, path, name)
    argv = run_argv(task_binary(), path, name, args)
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=os.path.expanduser(project_dir),
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await proc.communicate()
    finally:
        if proc.returncode is None:  # cancelled: do not leave it running
            proc.kill()
            await proc.wait()
    return TaskRunOutput(name, proc.returncode or 0, _tail(out), _tail(err))


def _tail(data: bytes) -> str:
    text = data.decode("utf-8", errors="replace")
    if len(text) <= OUTPUT_CAP:
        return text
    return f"[… {len(text) - OUTPUT_CAP} characters cut …]\n" + text[-OUTPUT_CAP:]
