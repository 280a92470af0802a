"""Hooks (issue 12): argv commands run on a task's state changes, with the task as JSON on
stdin and TUI_* variables; bounded by a timeout, process-group cleaned, never changing the
task's state. Real hook processes; waits are on the engine's event stream."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from tui.engine.scheduler import Engine
from tui.model.loader import load_task_text
from tui.model.states import State
from tui.model.workflow import FileDefaults
from tui.store.db import Store
from tui.store.records import EventRecord

HOOK = """\
import json, os, sys
out = sys.argv[1]
task = json.load(sys.stdin)
env = {k: v for k, v in os.environ.items() if k.startswith("TUI_")}
name = f"{env['TUI_HOOK']}-{task['state']}-{task['attempts']}.json"
with open(os.path.join(out, name), "w") as f:
    json.dump({"task": task, "env": env}, f)
if len(sys.argv) > 2:
    sys.exit(int(sys.argv[2]))
"""


async def hook_rows(engine: Engine, task_id: str, count: int) -> list[dict[str, Any]]:
    """Wait (on the event stream) until ``count`` hook rows are journaled for the task."""

    async def watch() -> list[dict[str, Any]]:
        since = (0, 0)
        from tui.engine.events import Cursor

        rows: list[dict[str, Any]] = []
        async for ev in engine.events(Cursor(*since)):
            if isinstance(ev, EventRecord) and ev.kind == "hook" and ev.task_id == task_id:
                rows.append(ev.data)
                if len(rows) == count:
                    return rows
        return rows

    return await asyncio.wait_for(watch(), 30)


def hook_file(tmp_path: Path) -> list[str]:
    script = tmp_path / "hook.py"
    script.write_text(HOOK)
    out = tmp_path / "hooks"
    out.mkdir()
    return [sys.executable, str(script), str(out)]


async def test_hooks_receive_the_task_and_never_change_its_state(
    store: Store, tmp_path: Path
) -> None:
    argv = json.dumps(hook_file(tmp_path))
    failing = json.dumps([*hook_file_again(tmp_path), "7"])
    text = f"""
tasks:
  - name: flaky
    retry: {{max_attempts: 2, delay: 10ms}}
    on_max_retries: skip
    hooks: {{on_start: {argv}, on_error: {argv}, on_skip: {argv}, on_progress: {argv}}}
    agent: {{type: shell, instructions: "exit 1"}}
  - name: fine
    hooks: {{on_complete: {failing}}}
    agent: {{type: shell, instructions: "echo '{{\\"ok\\": true}}'"}}
    output_format: {{type: json}}
"""
    tasks = load_task_text(text, "h.yaml").tasks
    flaky, fine = tasks
    async with Engine(store) as engine:
        await engine.submit(tasks)
        await engine.wait_settled([t.id for t in tasks])
        # flaky: QUEUED (progress), RUNNING (start), FAILED (error), QUEUED (progress),
        # RUNNING (start), SKIPPED (skip): six hooks, all succeeding.
        rows = await hook_rows(engine, flaky.id, 6)
        fine_rows = await hook_rows(engine, fine.id, 1)
    assert sorted(r["hook"] for r in rows) == sorted(
        ["on_progress", "on_start", "on_error", "on_progress", "on_start", "on_skip"]
    )
    assert all(r["ok"] for r in rows), rows
    out = tmp_path / "hooks"
    skip = json.loads((out / "on_skip-SKIPPED-2.json").read_text())
    assert skip["task"]["name"] == "flaky" and skip["task"]["previous_state"] == "RUNNING"
    assert skip["task"]["reason"].startswith("skipped (on_max_retries: skip)")
    assert skip["env"]["TUI_TASK_ID"] == flaky.id
    assert skip["env"]["TUI_TASK_STATE"] == "SKIPPED"
    assert skip["env"]["TUI_DB"] == str(store.path)
    error = json.loads((out / "on_error-FAILED-1.json").read_text())
    assert error["env"]["TUI_REASON"].startswith("exit code 1; retry 2/2")
    # A failing hook is logged on its task; the task's state is its own.
    (row,) = fine_rows
    assert row["ok"] is False and row["exit_code"] == 7 and row["hook"] == "on_complete"
    rec = await store.get_task(fine.id)
    assert rec is not None and rec.state == State.COMPLETED
    done = json.loads((out / "on_complete-COMPLETED-1.json").read_text())
    assert done["task"]["result"] == {"ok": True}


def hook_file_again(tmp_path: Path) -> list[str]:
    return [sys.executable, str(tmp_path / "hook.py"), str(tmp_path / "hooks")]


async def test_a_hook_past_its_timeout_is_ended_with_its_group(
    store: Store, tmp_path: Path
) -> None:
    pid_file = tmp_path / "bg.pid"
    # The hook leaves a background process in its group, then hangs.
    hook = ["bash", "-c", f"sleep 600 & echo $! > {pid_file}; wait"]
    tasks = load_task_text(
        "tasks:\n  - {name: t, agent: {type: shell, instructions: 'true'}}\n", "t.yaml"
    ).tasks
    defaults = FileDefaults.model_validate({"hooks": {"on_complete": hook, "timeout": "300ms"}})
    async with Engine(store, defaults=defaults) as engine:
        await engine.submit(tasks)
        (row,) = await hook_rows(engine, tasks[0].id, 1)
    assert row == {
        "hook": "on_complete",
        "argv": hook,
        "ok": False,
        "error": "timed out after 0.3s",
    }
    bg = int(pid_file.read_text())
    assert not alive(bg), f"the hook's background process {bg} outlived it"


def alive(pid: int) -> bool:
    """Running, not a zombie waiting for its new parent to reap it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


async def test_a_hook_that_cannot_start_is_logged(store: Store, tmp_path: Path) -> None:
    tasks = load_task_text(
        "name: t\nhooks: {on_start: [/nonexistent/hook]}\n"
        "agent: {type: shell, instructions: 'true'}\n",
        "t.yaml",
    ).tasks
    async with Engine(store) as engine:
        await engine.submit(tasks)
        (row,) = await hook_rows(engine, tasks[0].id, 1)
        await engine.wait_settled([tasks[0].id])
    assert row["ok"] is False and "cannot start /nonexistent/hook" in row["error"]
    rec = await store.get_task(tasks[0].id)
    assert rec is not None and rec.state == State.COMPLETED
