"""tui's MCP server (`python -m tui.mcp`) driven by the official SDK client over stdio, against a
real engine and database, with a running task whose run the server serves."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from mcp import Client, StdioServerParameters
from tests.conftest import owned_engine, question, shell_task, wait_state
from tests.taskfile.conftest import write_taskfile
from tui.agents.mcp_launch import TOOLS
from tui.engine.scheduler import Engine
from tui.model.states import State
from tui.model.task import Task
from tui.store.db import Store

HOSTILE = ["two words", 'it\'s "quoted"', "$(touch pwned)", "`id`"]


@pytest.fixture
async def engine(store: Store) -> AsyncIterator[Engine]:
    async with owned_engine(store, kill_grace=1.0) as e:
        yield e


async def running(engine: Engine, task: Task) -> tuple[str, int]:
    """Submit a task that keeps running, and return its id and the run id of its attempt."""
    [task_id] = await engine.submit([task])
    await wait_state(engine, task_id, State.RUNNING)
    [run] = await engine.store.runs(task_id)
    return task_id, run.id


def agent_task(project: Path, name: str = "agent", **fields: Any) -> Task:
    """A shell "agent" that stays alive while the test plays its agent CLI."""
    agent = {"type": "shell", "instructions": "exec sleep 600", "project_dir": str(project)}
    return Task.model_validate({"name": name, "agent": agent, **fields})


@asynccontextmanager
async def mcp_client(store: Store, task_id: str, run_id: int) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "tui.mcp"],
        env={"TUI_DB": str(store.path), "TUI_TASK_ID": task_id, "TUI_RUN_ID": str(run_id)},
    )
    async with Client(params, read_timeout_seconds=60) as client:
        yield client


def text_of(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def test_lists_and_runs_the_projects_taskfile_tasks(engine: Engine, store: Store, project):
    write_taskfile(project)
    task_id, run_id = await running(engine, agent_task(project))
    async with mcp_client(store, task_id, run_id) as client:
        listed = await client.list_tools()
        assert sorted(t.name for t in listed.tools) == sorted(TOOLS)

        tasks = await client.call_tool("list_user_tasks", {})
        assert not tasks.is_error, text_of(tasks)
        assert json.loads(text_of(tasks)) == [
            {"name": "echo-args", "description": "Print each argument on its own line"},
            {"name": "fail", "description": "Fail with exit code 7"},
        ]

        ran = await client.call_tool("run_user_task", {"name": "echo-args", "args": HOSTILE})
        assert not ran.is_error, text_of(ran)
        out = json.loads(text_of(ran))
        assert out["exit_code"] == 0
        assert out["stdout"].splitlines() == [f"<{a}>" for a in HOSTILE]
        assert not (project / "pwned").exists() and not (project / ".agent" / "pwned").exists()

        failed = json.loads(text_of(await client.call_tool("run_user_task", {"name": "fail"})))
        assert failed["exit_code"] == 7
        assert "about to fail" in failed["stderr"]

        unknown = await client.call_tool("run_user_task", {"name": "deploy"})
        assert unknown.is_error
        assert "has no task 'deploy'" in text_of(unknown)


async def test_no_taskfile_lists_nothing_and_broken_one_names_the_file(
    engine: Engine, store: Store, project: Path
):
    task_id, run_id = await running(engine, agent_task(project))
    async with mcp_client(store, task_id, run_id) as client:
        assert json.loads(text_of(await client.call_tool("list_user_tasks", {}))) == []
        path = write_taskfile(project, "version: '3'\ntasks: [\n")
        broken = await client.call_tool("list_user_tasks", {})
        assert broken.is_error
        assert str(path.resolve()) in text_of(broken)


async def test_ask_user_waits_for_the_answer_given_in_tui(
    engine: Engine, store: Store, project: Path
):
    task_id, run_id = await running(engine, agent_task(project))
    since = engine.cursor
    async with mcp_client(store, task_id, run_id) as client:
        call = asyncio.create_task(
            client.call_tool(
                "ask_user",
                {"question": "Which database?", "options": ["SQLite", "PostgreSQL"]},
            )
        )
        q = await question(engine, task_id, since)
        assert q.kind == "question" and q.run_id == run_id
        item = q.payload["questions"][0]
        assert item["question"] == "Which database?"
        assert [o["label"] for o in item["options"]] == ["SQLite", "PostgreSQL"]
        assert (await engine.get(task_id)).state == State.READY
        assert not call.done()
        await engine.answer(q.id, {"answers": {"Which database?": "PostgreSQL"}})
        result = await asyncio.wait_for(call, 60)
    assert not result.is_error, text_of(result)
    assert text_of(result) == "PostgreSQL"


async def test_create_subtask_inherits_agent_and_refuses_a_sixth_level(
    engine: Engine, store: Store, project: Path
):
    chain: list[Task] = []
    for level in range(1, 5):  # levels 1-4 exist already
        parent = chain[-1].id if chain else ""
        chain.append(shell_task(f"level-{level}", "true", parent_task_id=parent))
    await engine.submit(chain)
    task_id, run_id = await running(
        engine, agent_task(project, name="level-5", parent_task_id=chain[-1].id)
    )
    deep = agent_task(project, name="level-4b", parent_task_id=chain[-2].id)
    deep_id, deep_run = await running(engine, deep)

    async with mcp_client(store, deep_id, deep_run) as client:
        made = await client.call_tool(
            "create_subtask", {"name": "child", "instructions": "echo from child"}
        )
        assert not made.is_error, text_of(made)
        reply = json.loads(text_of(made))
        assert reply["level"] == 5
    child = await engine.get(reply["task_id"])
    assert child is not None and child.task.parent_task_id == deep_id
    assert child.task.agent.type == "shell"
    assert child.task.agent.project_dir == str(project)
    assert child.task.agent.instructions == "echo from child"

    async with mcp_client(store, task_id, run_id) as client:
        refused = await client.call_tool(
            "create_subtask", {"name": "too-deep", "instructions": "echo no"}
        )
    assert refused.is_error
    assert "nested 6 levels deep" in text_of(refused) and "at most 5" in text_of(refused)
    assert not [r for r in await store.list_tasks() if r.name == "too-deep"]


def test_started_outside_a_run_says_what_is_missing() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tui.mcp"],
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert "TUI_DB, TUI_TASK_ID, TUI_RUN_ID not set" in done.stderr
