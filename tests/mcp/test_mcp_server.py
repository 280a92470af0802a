"""tui's MCP server (`python -m tui.mcp`) driven by the official SDK client over stdio, against a
real engine and database, with a running task whose run the server serves."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from mcp import Client, StdioServerParameters
from tests.conftest import owned_engine, question, shell_task, stored, wait_state
from tests.taskfile.conftest import write_real_constructs, write_taskfile
from tests.worktree.git_support import make_repo, show
from tui.agents.mcp_launch import TOOLS
from tui.engine.scheduler import Engine
from tui.model.states import State
from tui.model.task import Task
from tui.store.db import Store
from tui.taskfile.running import NO, YES

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


@pytest.fixture(autouse=True)
def user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's config dir (empty unless a test writes config.toml), as the engine passes
    it to the server."""
    config = tmp_path / "user-config"
    config.mkdir()
    monkeypatch.setenv("TUI_CONFIG_DIR", str(config))
    return config


def allow_args(user_config: Path, *tasks: str) -> None:
    names = ", ".join(f'"{t}"' for t in tasks)
    (user_config / "config.toml").write_text(f"[settings]\nagent_task_args = [{names}]\n")


@asynccontextmanager
async def mcp_client(store: Store, task_id: str, run_id: int) -> AsyncIterator[Client]:
    env = {"TUI_DB": str(store.path), "TUI_TASK_ID": task_id, "TUI_RUN_ID": str(run_id)}
    env["TUI_CONFIG_DIR"] = os.environ["TUI_CONFIG_DIR"]
    params = StdioServerParameters(command=sys.executable, args=["-m", "tui.mcp"], env=env)
    async with Client(params, read_timeout_seconds=60) as client:
        yield client


def text_of(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def test_lists_and_runs_the_projects_taskfile_tasks(
    engine: Engine, store: Store, project: Path, user_config: Path
):
    write_taskfile(project)
    allow_args(user_config, "echo-args")
    task_id, run_id = await running(engine, agent_task(project))
    async with mcp_client(store, task_id, run_id) as client:
        listed = await client.list_tools()
        assert sorted(t.name for t in listed.tools) == sorted(TOOLS)

        tasks = await client.call_tool("list_user_tasks", {})
        assert not tasks.is_error, text_of(tasks)
        listed = json.loads(text_of(tasks))
        assert listed["tasks"] == [
            {"name": "echo-args", "description": "Print each argument on its own line"},
            {"name": "fail", "description": "Fail with exit code 7"},
        ]
        assert listed["message"].startswith("2 task(s)")

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

        # The seed's shape: task_name, and args as one string split like a shell would.
        ran = await client.call_tool(
            "run_user_task", {"task_name": "echo-args", "args": "one 'two words' $(id)"}
        )
        out = json.loads(text_of(ran))
        assert out["stdout"].splitlines() == ["<one>", "<two words>", "<$(id)>"]


LOOSE_TASKFILE = """\
version: '3'
tasks:
  greet:
    desc: Greet (quotes CLI_ARGS loosely, as many Taskfiles do)
    cmds:
      - echo "hello {{.CLI_ARGS}}"
"""


async def test_arguments_only_for_tasks_the_user_allowed(
    engine: Engine, store: Store, project: Path, user_config: Path
):
    """go-task splices CLI_ARGS into the command text: `$(…)` from a model would run."""
    write_taskfile(project, LOOSE_TASKFILE)
    local = project / ".tui" / "config.toml"  # the project (agents write there) cannot allow
    local.parent.mkdir()
    local.write_text('[settings]\nagent_task_args = ["*"]\n')
    task_id, run_id = await running(engine, agent_task(project))
    async with mcp_client(store, task_id, run_id) as client:
        refused = await client.call_tool(
            "run_user_task", {"name": "greet", "args": ["$(touch pwned)"]}
        )
        assert refused.is_error
        text = text_of(refused)
        assert "does not take arguments or variables from agents" in text
        assert "agent_task_args" in text and str(user_config / "config.toml") in text
        for call in (
            {"name": "greet", "vars": {"WHO": "$(touch pwned)"}},
            {"name": "greet:$(touch pwned)"},  # a wildcard's {{.MATCH}} is spliced too
        ):
            assert (await client.call_tool("run_user_task", call)).is_error, call
        assert not list(project.rglob("pwned"))
        plain = json.loads(text_of(await client.call_tool("run_user_task", {"name": "greet"})))
        assert plain["exit_code"] == 0 and plain["stdout"].strip() == "hello"

        allow_args(user_config, "greet")
        allowed = json.loads(
            text_of(await client.call_tool("run_user_task", {"name": "greet", "args": ["you"]}))
        )
        assert allowed["stdout"].strip() == "hello you"


async def test_no_taskfile_lists_nothing_and_broken_one_names_the_file(
    engine: Engine, store: Store, project: Path
):
    task_id, run_id = await running(engine, agent_task(project))
    async with mcp_client(store, task_id, run_id) as client:
        empty = json.loads(text_of(await client.call_tool("list_user_tasks", {})))
        assert empty["tasks"] == [] and "no .agent/Taskfile.yml" in empty["message"]
        path = write_taskfile(project, "version: '3'\ntasks: [\n")
        broken = json.loads(text_of(await client.call_tool("list_user_tasks", {})))
        assert broken["tasks"] == [] and str(path.resolve()) in broken["message"]


@pytest.mark.parametrize("said,runs", [(YES, True), (NO, False)])
async def test_a_prompt_asks_the_person_and_only_yes_runs_it(
    engine: Engine, store: Store, project: Path, user_config: Path, said: str, runs: bool
):
    write_real_constructs(project)
    allow_args(user_config, "greet")
    task_id, run_id = await running(engine, agent_task(project))
    since = engine.cursor
    async with mcp_client(store, task_id, run_id) as client:
        listed = json.loads(text_of(await client.call_tool("list_user_tasks", {})))
        by_name = {t["name"]: t for t in listed["tasks"]}
        assert by_name["deploy"]["asks_user"] == ["Deploy to production now?"]
        assert by_name["greet"]["required_vars"] == ["WHO"]
        call = asyncio.create_task(client.call_tool("run_user_task", {"task_name": "deploy"}))
        q = await question(engine, task_id, since)
        text = q.payload["questions"][0]["question"]
        assert "Deploy to production now?" in text
        assert not (project / ".agent" / "deployed").exists()
        await engine.answer(q.id, {"answers": {text: said}})
        out = json.loads(text_of(await asyncio.wait_for(call, 60)))
        assert (project / ".agent" / "deployed").exists() == runs
        if runs:
            assert out["exit_code"] == 0
        else:
            assert out["refused"] and "did not say yes" in out["message"]

        greet = await client.call_tool(
            "run_user_task", {"task_name": "greet", "vars": {"WHO": "Ada"}, "args": "x"}
        )
        assert json.loads(text_of(greet))["stdout"].strip() == "hello Ada args=x"
        missing = json.loads(text_of(await client.call_tool("run_user_task", {"name": "greet"})))
        assert missing["exit_code"] == 206 and "needs variable(s) WHO" in missing["message"]


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
        assert (await stored(engine, task_id)).state == State.READY
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


async def test_a_parent_waits_blocked_on_the_subtasks_its_agent_created(
    engine: Engine, store: Store, project: Path
):
    """Children made at run time by create_subtask join the parent's completion: its run
    ends, it waits in BLOCKED, and it completes (its own result kept) once they have."""
    go, child_go = project / "parent.go", project / "child.go"
    parent = agent_task(project, name="lead")
    parent.agent.instructions = f"while [ ! -f {go} ]; do sleep 0.05; done; echo lead-done"
    task_id, run_id = await running(engine, parent)
    async with mcp_client(store, task_id, run_id) as client:
        made = await client.call_tool(
            "create_subtask",
            {
                "name": "helper",
                "instructions": f"while [ ! -f {child_go} ]; do sleep 0.05; done; echo helped",
            },
        )
        assert not made.is_error, text_of(made)
    child_id = json.loads(text_of(made))["task_id"]
    await wait_state(engine, child_id, State.RUNNING)
    go.touch()  # the parent's own run completes while its child still works
    await wait_state(engine, task_id, State.BLOCKED)
    rec = await engine.get(task_id)
    assert rec is not None and rec.reason == "its run completed; waiting on its subtasks"
    assert not engine.settled(task_id)
    child_go.touch()
    await wait_state(engine, task_id, State.COMPLETED)
    rec, child = await engine.get(task_id), await engine.get(child_id)
    assert child is not None and child.state == State.COMPLETED
    assert rec is not None and rec.parsed_result == "lead-done"
    assert rec.reason == "its subtask done"


async def test_a_subtask_of_a_worktree_task_works_in_its_parents_worktree(
    engine: Engine, store: Store, tmp_path: Path
):
    repo = make_repo(tmp_path / "repo")
    go = tmp_path / "parent.go"
    parent = agent_task(repo, name="lead", worktree=True)
    parent.agent.instructions = f"while [ ! -f {go} ]; do sleep 0.05; done; echo lead > lead.txt"
    task_id, run_id = await running(engine, parent)
    async with mcp_client(store, task_id, run_id) as client:
        made = await client.call_tool(
            "create_subtask", {"name": "helper", "instructions": "echo helped > child.txt"}
        )
        assert not made.is_error, text_of(made)
    child_id = json.loads(text_of(made))["task_id"]
    await wait_state(engine, child_id, State.COMPLETED)
    child = await engine.get(child_id)
    assert child is not None and child.task.worktree is not None
    assert child.task.worktree.from_ == task_id
    wt = await store.get_worktree(task_id)
    assert wt is not None
    assert (Path(wt.path) / "child.txt").read_text() == "helped\n"  # the parent's checkout
    assert not (repo / "child.txt").exists()
    go.touch()
    await wait_state(engine, task_id, State.COMPLETED)
    assert show(repo, wt.branch, "child.txt") == "helped\n"
    assert show(repo, wt.branch, "lead.txt") == "lead\n"


async def test_a_subtask_of_a_task_without_worktree_gets_none(
    engine: Engine, store: Store, user_config: Path, tmp_path: Path
):
    (user_config / "config.toml").write_text("[settings]\nworktree = true\n")
    repo = make_repo(tmp_path / "repo")
    task_id, run_id = await running(engine, agent_task(repo, name="lead", worktree=False))
    async with mcp_client(store, task_id, run_id) as client:
        made = await client.call_tool(
            "create_subtask", {"name": "helper", "instructions": "echo helped > child.txt"}
        )
        assert not made.is_error, text_of(made)
    child_id = json.loads(text_of(made))["task_id"]
    await wait_state(engine, child_id, State.COMPLETED)
    assert (repo / "child.txt").read_text() == "helped\n"  # in place, as its parent


async def test_wrong_arguments_get_one_line_naming_each_field(
    engine: Engine, store: Store, project: Path
):
    """The SDK's own report is pydantic's, several lines with type codes; a model gets one line
    naming each field, what was wrong and what it gave."""
    task_id, run_id = await running(engine, agent_task(project))
    async with mcp_client(store, task_id, run_id) as client:
        wrong = await client.call_tool("ask_user", {"question": 5, "options": "pick"})
        assert wrong.is_error
        text = text_of(wrong)
        assert "\n" not in text, text
        assert text.startswith("ask_user: question: input should be a valid string, got 5;")
        assert 'options: input should be a valid list, got "pick"' in text

        missing = text_of(await client.call_tool("create_subtask", {"name": "x"}))
        assert missing.startswith("create_subtask: instructions: missing (it is required)")
        assert "\n" not in missing
        assert await store.questions(task_id=task_id) == []  # the wrong call asked nothing
