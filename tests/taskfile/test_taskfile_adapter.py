"""The `taskfile` agent type run by the engine with the real go-task binary."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.agents.cli_support import output, settled
from tests.taskfile.conftest import write_taskfile
from tui.engine.events import Cursor, OutputBatch
from tui.engine.scheduler import Engine
from tui.model.issues import TaskFileError
from tui.model.loader import load_task_text
from tui.model.states import State
from tui.model.task import Task
from tui.store.db import Store

HOSTILE = ["two words", 'it\'s "quoted"', "$(touch pwned)", "`id`", "semi;colon", "*", ""]


@pytest.fixture
async def engine(store: Store) -> AsyncIterator[Engine]:
    async with Engine(store, kill_grace=1.0) as e:  # the default adapters: taskfile is one
        yield e


def taskfile_task(project: Path, name: str, args: list[str] | None = None, **kw: Any) -> Task:
    agent = {"type": "taskfile", "task": name, "args": args or [], "project_dir": str(project)}
    return Task.model_validate({"name": f"tf-{name}", "agent": agent, **kw})


async def run(engine: Engine, task: Task) -> Any:
    [task_id] = await engine.submit([task])
    await settled(engine, task_id)
    return await engine.get(task_id)


async def test_arguments_reach_cli_args_intact(engine: Engine, store: Store, project: Path):
    rec = await run(engine, taskfile_task(project, "echo-args", HOSTILE))
    assert rec.state == State.COMPLETED, rec.reason
    assert await output(store, rec.id) == [f"<{a}>" for a in HOSTILE]
    assert not (project / "pwned").exists() and not (project / ".agent" / "pwned").exists()


async def test_failing_exit_code_is_the_commands_own(engine: Engine, store: Store, project: Path):
    task = taskfile_task(project, "fail", retry={"max_attempts": 2, "delay": "10ms"})
    rec = await run(engine, task)
    assert rec.state == State.FAILED
    assert rec.attempts == 2  # the retry policy applied
    runs = await store.runs(rec.id)
    assert [r.exit_code for r in runs] == [7, 7]
    assert "task fail exited with code 7" in runs[-1].error
    assert "about to fail" in await output(store, rec.id, stream=2)


async def test_unknown_task_fails_naming_file_and_a_guess(engine: Engine, store: Store, project):
    rec = await run(engine, taskfile_task(project, "fial"))
    assert rec.state == State.FAILED
    error = (await store.runs(rec.id))[-1].error
    assert "has no task 'fial'" in error
    assert str(project / ".agent" / "Taskfile.yml") in error
    assert "did you mean 'fail'?" in error and "echo-args" not in error


async def test_internal_task_cannot_be_run(engine: Engine, store: Store, project: Path):
    rec = await run(engine, taskfile_task(project, "helper"))
    assert rec.state == State.FAILED
    assert "task 'helper' is internal" in (await store.runs(rec.id))[-1].error


async def test_broken_taskfile_fails_with_its_name(engine: Engine, store: Store, tmp_path: Path):
    path = write_taskfile(tmp_path, "version: '3'\ntasks: [\n")
    rec = await run(engine, taskfile_task(tmp_path, "anything"))
    assert rec.state == State.FAILED
    error = (await store.runs(rec.id))[-1].error
    assert str(path.resolve()) in error and "cannot be loaded" in error


async def test_no_taskfile_fails_saying_where_it_looked(engine: Engine, store: Store, tmp_path):
    rec = await run(engine, taskfile_task(tmp_path, "build"))
    assert rec.state == State.FAILED
    error = (await store.runs(rec.id))[-1].error
    assert "no .agent/Taskfile.yml" in error and str(tmp_path) in error


async def test_cancel_stops_the_whole_group(engine: Engine, store: Store, tmp_path: Path):
    write_taskfile(
        tmp_path,
        "version: '3'\ntasks:\n  hang:\n    desc: d\n    cmds:\n"
        "      - sh -c 'echo $$ > pid; echo started; exec sleep 600'\n",
    )
    since = engine.cursor
    [task_id] = await engine.submit([taskfile_task(tmp_path, "hang")])
    await _printed(engine, since, "started")
    pid = int((tmp_path / ".agent" / "pid").read_text())
    await engine.cancel(task_id)
    assert (await settled(engine, task_id)).state == State.CANCELLED
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def _printed(engine: Engine, since: Cursor, text: str) -> None:
    async def watch() -> None:
        async for ev in engine.events(since):
            if isinstance(ev, OutputBatch) and any(row[-1] == text for row in ev.rows):
                return

    await asyncio.wait_for(watch(), 30)


def test_yaml_needs_task_not_instructions() -> None:
    yaml = "tasks:\n  - name: t\n    agent: {type: taskfile, task: build, args: [a]}\n"
    assert load_task_text(yaml, "t.yml").tasks[0].agent.args == ["a"]
    with pytest.raises(TaskFileError) as info:
        load_task_text("tasks:\n  - name: t\n    agent: {type: taskfile}\n", "t.yml")
    assert "agent.task is required" in str(info.value)
    assert "add `task: <name>` under `agent:`" in str(info.value)


def test_yaml_vars_are_text_for_go_task_and_names_are_checked() -> None:
    yaml = "tasks:\n  - name: t\n    agent: {type: taskfile, task: b, vars: {N: 3, ON: true}}\n"
    assert load_task_text(yaml, "t.yml").tasks[0].agent.vars == {"N": "3", "ON": "true"}
    with pytest.raises(TaskFileError) as info:
        load_task_text(yaml.replace("N: 3", "1N: 3"), "t.yml")
    assert "tasks[0].agent.vars: '1N' is not a go-task variable name" in str(info.value)
