"""Running a Taskfile task (tui.taskfile.listing finds it) with the real go-task binary.

Running builds an argv (never a shell string): `task --taskfile FILE --exit-code NAME K=V...
-- ARGS...`, where K=V are go-task variables (what `requires: vars` asks for) and ARGS reach
the Taskfile as `{{.CLI_ARGS}}`. `--exit-code` passes the command's real exit code through
(go-task says 201 for any failing command otherwise). `--yes` is passed only when a person
said yes to the task's `prompt:` (see :func:`prompt_question`); otherwise go-task refuses to
run a task with a prompt.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tui.model.task import Task
from tui.taskfile.listing import (
    TaskfileError,
    TaskfileTask,
    find_task,
    find_taskfile,
    task_binary,
)

MISSING_VARS_EXIT = 206  # go-task: a task's `requires: vars` are not all set
VAR_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def check_vars(variables: Mapping[str, str]) -> None:
    for key in variables:
        if not VAR_NAME.match(key):
            raise TaskfileError(
                f"variable {key!r}: a go-task variable name is letters, digits and _ "
                "(not starting with a digit)"
            )


def run_argv(
    binary: str,
    path: Path,
    name: str,
    args: Sequence[str],
    variables: Mapping[str, str] | None = None,
    *,
    confirmed: bool = False,
) -> list[str]:
    """The command line that runs task ``name`` with ``variables`` as go-task variables and
    ``args`` as {{.CLI_ARGS}}. ``confirmed``: a person said yes to its prompt."""
    check_vars(variables or {})
    # --disable-fuzzy: a typo must not run a different task; --color=false: go-task colours
    # its own lines (under CI=true too), and its escapes span line breaks, so stored lines
    # would begin with the previous line's reset.
    head = [binary, "--taskfile", str(path), "--exit-code", "--disable-fuzzy", "--color=false"]
    if confirmed:
        head.append("--yes")
    head += [name, *(f"{k}={v}" for k, v in (variables or {}).items())]
    return [*head, "--", *args] if args else head


def missing_vars_error(entry: TaskfileTask, name: str, given: Mapping[str, str]) -> str:
    """What to say when go-task stopped with its missing-required-variables exit code."""
    missing = [v for v in entry.requires if v not in given] or list(entry.requires)
    names = ", ".join(missing) or "(see its output)"
    example = " ".join(f"--var {v}=VALUE" for v in missing) or "--var NAME=VALUE"
    return (
        f"task {name} needs variable(s) {names}: give them with `tui task {name} {example}` "
        "or agent.vars in the task file"
    )


YES, NO = "Yes, run it", "No"


def prompt_question(name: str, prompt: str) -> dict[str, Any]:
    """The question (QuestionJSON, as every agent's) that stands for go-task's `prompt:`:
    only "Yes" runs the task."""
    text = f"Taskfile task {name}: {prompt}"
    options = [{"label": o, "description": ""} for o in (YES, NO)]
    question = {"question": text, "header": "confirm", "options": options, "multiSelect": False}
    return {"questions": [question]}


def said_yes(answer: Mapping[str, Any] | None, question: dict[str, Any]) -> bool:
    """True only for an explicit "Yes" to ``question`` (an expired question is a no)."""
    if not answer:
        return False
    text = question["questions"][0]["question"]
    value = (answer.get("answers") or {}).get(text)
    if isinstance(value, list):
        value = value[0] if len(value) == 1 else None
    return value == YES


def to_task(
    entry: TaskfileTask,
    args: Sequence[str] = (),
    *,
    project_dir: str | os.PathLike[str],
    name: str = "",
    variables: Mapping[str, str] | None = None,
    **fields: Any,
) -> Task:
    """A tui task that runs ``entry`` (as ``name``, a wildcard's match) with ``args``."""
    agent: dict[str, Any] = {
        "type": "taskfile",
        "task": name or entry.name,
        "args": list(args),
        "project_dir": str(project_dir),
    }
    if variables:
        agent["vars"] = dict(variables)
    agent.update(fields.pop("agent", {}))
    return Task.model_validate(
        {"name": name or entry.name, "description": entry.desc, "agent": agent, **fields}
    )


@dataclass(frozen=True)
class TaskRunOutput:
    name: str
    exit_code: int | None
    stdout: str
    stderr: str
    message: str = ""  # why it did not run, or what a failure means
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "exit_code": self.exit_code,
            "stdout": self.stdout,
            "stderr": self.stderr,
        }
        if self.message:
            out["message"] = self.message
        return {**out, **self.extra}


OUTPUT_CAP = 100_000  # characters kept per stream (the end), so one run cannot flood a model


async def run_captured(
    project_dir: str | os.PathLike[str],
    name: str,
    args: Sequence[str] = (),
    *,
    env: dict[str, str] | None = None,
    variables: Mapping[str, str] | None = None,
    confirm: Any = None,
) -> TaskRunOutput:
    """Run task ``name`` of the project's Taskfile to the end and return what it printed.

    A task with a `prompt:` runs only when ``confirm(entry, prompt)`` (an async callable that
    asks a person) says yes to each prompt; without ``confirm`` it is refused.

    The child stays in the caller's process group on purpose: the caller is an agent's tool
    server, and when the engine stops that agent's group this run goes with it.
    """
    path = find_taskfile(project_dir)
    if path is None:
        raise TaskfileError(f"no .agent/Taskfile.yml in {project_dir}")
    entry = await asyncio.to_thread(find_task, path, name)
    variables = dict(variables or {})
    for prompt in (entry.prompt_text(p, name, args, variables) for p in entry.prompts):
        if confirm is None or not await confirm(entry, prompt):
            said = "nobody could be asked" if confirm is None else "the user did not say yes"
            message = f"not run: task {name} asks {prompt!r} and {said}"
            return TaskRunOutput(name, None, "", "", message, {"refused": True})
    argv = run_argv(task_binary(), path, name, args, variables, confirmed=bool(entry.prompts))
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
    code = proc.returncode or 0
    missing = code == MISSING_VARS_EXIT and entry.requires
    message = missing_vars_error(entry, name, variables) if missing else ""
    return TaskRunOutput(name, code, _tail(out), _tail(err), message)


def _tail(data: bytes) -> str:
    text = data.decode("utf-8", errors="replace")
    if len(text) <= OUTPUT_CAP:
        return text
    return f"[… {len(text) - OUTPUT_CAP} characters cut …]\n" + text[-OUTPUT_CAP:]
