"""What the MCP tools do, apart from the protocol: each works on the database of the run that
started the server and reaches the engine over its owner's socket, like `tui ask`."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from tui.agents.mcp_launch import ASK_TOOL_ENV, PROJECT_ENV
from tui.daemon.asking import ask_person
from tui.daemon.lifecycle import connect
from tui.engine.asking import answer_values, question_payload
from tui.engine.scheduler import EngineError
from tui.model.task import Task, default_worktree
from tui.store.db import Store
from tui.taskfile.listing import TaskfileError, TaskfileTask, find_taskfile, list_tasks
from tui.taskfile.running import prompt_question, run_captured, said_yes

MAX_DEPTH = 5  # a top-level task is level 1; its subtasks level 2, and so on


class ToolFailure(Exception):
    """A tool cannot do what it was asked; the message goes to the model as is."""


@dataclass(frozen=True)
class RunInfo:
    db: str
    task_id: str
    run_id: int
    project_dir: str = ""  # "" = the task's agent.project_dir, else the current directory
    ask_tool: str = "ask_user"  # the name the ask tool is served under

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> RunInfo:
        missing = [k for k in ("TUI_DB", "TUI_TASK_ID", "TUI_RUN_ID") if not env.get(k)]
        if missing:
            raise ValueError(
                f"{', '.join(missing)} not set: tui's MCP server is started by tui for one "
                "task run (python -m tui.mcp with TUI_DB, TUI_TASK_ID and TUI_RUN_ID)"
            )
        try:
            run_id = int(env["TUI_RUN_ID"])
        except ValueError:
            raise ValueError(
                f"TUI_RUN_ID must be a run number, got {env['TUI_RUN_ID']!r}"
            ) from None
        return cls(
            env["TUI_DB"],
            env["TUI_TASK_ID"],
            run_id,
            env.get(PROJECT_ENV, ""),
            env.get(ASK_TOOL_ENV) or "ask_user",
        )


class Tools:
    def __init__(self, run: RunInfo) -> None:
        self.run = run

    async def _store(self) -> Store:
        return await Store.open(self.run.db)

    async def project_dir(self) -> str:
        if self.run.project_dir:
            return os.path.expanduser(self.run.project_dir)
        store = await self._store()
        try:
            rec = await store.get_task(self.run.task_id)
        finally:
            await store.close()
        if rec is not None and rec.task.agent.project_dir:
            return os.path.expanduser(rec.task.agent.project_dir)
        return os.getcwd()

    async def list_user_tasks(self) -> dict[str, Any]:
        """{"tasks": [{"name", "description", ...}], "message"}: a Taskfile that cannot be
        loaded is said in the message, not a failure of the tool."""
        where = await self.project_dir()
        try:
            tasks = await asyncio.to_thread(list_tasks, where)
        except TaskfileError as e:
            return {"tasks": [], "message": f"the project's Taskfile cannot be used: {e}"}
        if find_taskfile(where) is None:
            return {"tasks": [], "message": f"no .agent/Taskfile.yml in {where}"}
        listed = [_described(t) for t in tasks]
        message = f"{len(listed)} task(s); run one with run_user_task"
        if any(t.wildcard for t in tasks):
            message += " (a name with * is a pattern: give a matching name, e.g. release:1.2)"
        if any(t.prompts for t in tasks):
            message += "; a task with a prompt runs only if the user says yes in tui"
        return {"tasks": listed, "message": message}

    async def run_user_task(
        self, name: str, args: list[str], variables: dict[str, str] | None = None
    ) -> dict[str, Any]:
        # Arguments, variables and the part of a wildcard name ({{.MATCH}}) all reach the
        # task's command text.
        if args or variables or not _PLAIN_NAME.fullmatch(name):
            _check_args_allowed(name)
        try:
            done = await run_captured(
                await self.project_dir(), name, args, variables=variables, confirm=self._confirm
            )
        except TaskfileError as e:
            raise ToolFailure(str(e)) from None
        return done.to_json()

    async def _confirm(self, entry: TaskfileTask, prompt: str) -> bool:
        """The task's `prompt:` as a question to the person in tui; only yes runs it."""
        payload = prompt_question(entry.name, prompt)
        try:
            q = await ask_person(Path(self.run.db), self.run.task_id, self.run.run_id, payload)
        except EngineError:
            return False
        return q is not None and said_yes(q.answer, payload)

    async def ask_user(self, question: str, options: list[str], multi_select: bool) -> str:
        payload = question_payload(question, options, multi_select)
        try:
            q = await ask_person(Path(self.run.db), self.run.task_id, self.run.run_id, payload)
        except EngineError as e:
            raise ToolFailure(f"cannot ask the user: {e}") from None
        values = answer_values(q, question) if q is not None else None
        if values is None:
            raise ToolFailure("the user did not answer (the question was closed)")
        return ", ".join(values)

    async def create_subtask(
        self, name: str, instructions: str, description: str
    ) -> dict[str, Any]:
        store = await self._store()
        try:
            parent = await store.get_task(self.run.task_id)
            if parent is None:
                raise ToolFailure(f"this run's task {self.run.task_id} is not in the database")
            level = await _level(store, parent.task) + 1
            if level > MAX_DEPTH:
                raise ToolFailure(
                    f"cannot create subtask {name!r}: it would be nested {level} levels deep "
                    f"and tui allows at most {MAX_DEPTH}; do this work in the current task"
                )
            agent = parent.task.agent.model_copy(update={"instructions": instructions})
            child = Task(name=name, description=description, parent_task_id=parent.id, agent=agent)
            default_worktree([child], False, parent=parent.task)
            client = await connect(store)
            try:
                [task_id] = await client.submit([child])
            finally:
                await client.aclose()
        except EngineError as e:
            raise ToolFailure(f"cannot create subtask {name!r}: {e}") from None
        finally:
            await store.close()
        return {"task_id": task_id, "name": name, "level": level}


_PLAIN_NAME = re.compile(r"[A-Za-z0-9_.:-]+")  # a wildcard's match made of these is inert


def _check_args_allowed(name: str) -> None:
    """go-task splices {{.CLI_ARGS}} (and vars, and a wildcard's {{.MATCH}}) into its command
    text, so what a model passes reaches a shell unless the Taskfile quotes it well: only
    tasks the user listed (names or patterns such as "release:*") take it."""
    from tui.config.load import user_settings
    from tui.config.paths import global_config_path

    allowed = user_settings().agent_task_args
    if any(fnmatchcase(name, pattern) for pattern in allowed):
        return
    raise ToolFailure(
        f"task {name!r} does not take arguments or variables from agents: Taskfile commands "
        "put them into shell text, so the user allows them task by task. Call run_user_task "
        f"with a plain task name and no args or vars, or ask the user to add {name!r} to "
        f"agent_task_args under [settings] in {global_config_path()}."
    )


def _described(t: TaskfileTask) -> dict[str, Any]:
    out: dict[str, Any] = {"name": t.name, "description": t.desc}
    if t.label:
        out["label"] = t.label
    if t.wildcard:
        out["wildcard"] = True
    if t.prompts:
        out["asks_user"] = list(t.prompts)
    if t.requires:
        out["required_vars"] = list(t.requires)
    return out


async def _level(store: Store, task: Task) -> int:
    """1 for a task without a parent, 2 for its child... (a parent missing from the database
    ends the chain, as does a loop)."""
    level, seen = 1, {task.id}
    parent_id = task.parent_task_id
    while parent_id and parent_id not in seen:
        rec = await store.get_task(parent_id)
        if rec is None:
            break
        seen.add(parent_id)
        level += 1
        parent_id = rec.task.parent_task_id
    return level
