"""Worktree tasks on the engine, with real git repositories and real shell agents."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.conftest import shell_task, stored
from tests.worktree.git_support import git, make_repo, show
from tui.engine import api
from tui.engine.scheduler import Engine, EngineError
from tui.model.states import State
from tui.store.db import Store


async def settle(engine: Engine, *ids: str) -> None:
    await asyncio.wait_for(engine.wait_settled(ids), 60)


async def output_of(store: Store, task_id: str) -> str:
    lines = []
    for run_id, count in await store.output_index(task_id):
        lines += [ln.text for ln in await store.read_run_lines(run_id, 1, count)]
    return "\n".join(lines)


async def test_two_tasks_write_the_same_file_in_their_own_worktrees(
    store: Store, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "repo")
    a = shell_task("Writer A", "echo from-a > shared.txt", worktree=True)
    a.agent.project_dir = str(repo)
    b = shell_task("writer-b", "echo from-b > shared.txt; echo new > b.txt", worktree=True)
    b.agent.project_dir = str(repo)
    async with Engine(store, concurrency=2) as engine:
        await engine.submit([a, b])
        await settle(engine, a.id, b.id)
        assert (await stored(engine, a.id)).state == State.COMPLETED
        assert (await stored(engine, b.id)).state == State.COMPLETED
    wa, wb = await store.get_worktree(a.id), await store.get_worktree(b.id)
    assert wa is not None and wb is not None
    assert wa.branch == f"tui/{a.id[:8]}-writer-a"
    assert Path(wa.path).is_relative_to(store.path.parent / "worktrees" / "tui")
    # Each branch holds its own agent's edit, committed with a message naming the task.
    assert show(repo, wa.branch, "shared.txt") == "from-a\n"
    assert show(repo, wb.branch, "shared.txt") == "from-b\n"
    assert show(repo, wb.branch, "b.txt") == "new\n"
    assert "Writer A" in git(repo, "log", "-1", "--format=%B", wa.branch)
    # The repository's own checkout and branch are untouched.
    assert (repo / "shared.txt").read_text() == "base\n"
    assert git(repo, "status", "--porcelain") == ""
    assert show(repo, "main", "shared.txt") == "base\n"
    assert "committed the agent's changes" in await output_of(store, a.id)


async def test_a_retry_reuses_the_worktree(store: Store, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    script = 'echo "attempt $TUI_ATTEMPT" >> notes.txt; pwd > /dev/stderr; [ "$TUI_ATTEMPT" = 2 ]'
    t = shell_task("flaky", script, worktree=True, retry={"max_attempts": 2, "delay": "0s"})
    t.agent.project_dir = str(repo)
    async with Engine(store) as engine:
        await engine.submit([t])
        await settle(engine, t.id)
        assert (await stored(engine, t.id)).state == State.COMPLETED
    wt = await store.get_worktree(t.id)
    assert wt is not None
    # The second attempt found the first one's (committed) work in the same checkout.
    assert show(repo, wt.branch, "notes.txt") == "attempt 1\nattempt 2\n"
    assert (Path(wt.path) / "notes.txt").read_text() == "attempt 1\nattempt 2\n"


async def test_a_stale_index_lock_left_by_a_killed_git_does_not_block_the_retry(
    store: Store, tmp_path: Path
) -> None:
    # Attempt 1 leaves what a git killed mid-write leaves (index.lock, nobody holding it) and
    # fails; its changes must still be committed and attempt 2 must run and commit too.
    repo = make_repo(tmp_path / "repo")
    script = (
        'echo "attempt $TUI_ATTEMPT" >> notes.txt; '
        '[ "$TUI_ATTEMPT" = 2 ] || { : > "$(git rev-parse --git-path index.lock)"; exit 1; }'
    )
    t = shell_task("locked", script, worktree=True, retry={"max_attempts": 2, "delay": "0s"})
    t.agent.project_dir = str(repo)
    async with Engine(store) as engine:
        await engine.submit([t])
        await settle(engine, t.id)
        rec = await engine.get(t.id)
        assert rec is not None and rec.state == State.COMPLETED, rec and rec.reason
    wt = await store.get_worktree(t.id)
    assert wt is not None
    assert show(repo, wt.branch, "notes.txt") == "attempt 1\nattempt 2\n"
    assert "could not commit" not in await output_of(store, t.id)


async def test_a_half_made_first_checkout_is_made_again(store: Store, tmp_path: Path) -> None:
    # What a kill -9 during the first `git worktree add` leaves: the directory, part-filled,
    # not a checkout; no agent has run there yet.
    repo = make_repo(tmp_path / "repo")
    t = shell_task("half", "cat shared.txt > seen.txt", worktree=True)
    t.agent.project_dir = str(repo)
    async with Engine(store) as engine:
        await engine.submit([t], approved=False)
        wt = await store.get_worktree(t.id)
        assert wt is not None and wt.status == "planned"
        Path(wt.path).mkdir(parents=True)
        (Path(wt.path) / "shared.txt").write_text("partial\n")
        await engine.approve(t.id)
        await settle(engine, t.id)
        rec = await engine.get(t.id)
        assert rec is not None and rec.state == State.COMPLETED, rec and rec.reason
    assert show(repo, wt.branch, "seen.txt") == "base\n"


async def test_a_held_index_lock_is_left_alone(tmp_path: Path) -> None:
    from tui.engine.worktrees import clear_stale_lock

    repo = make_repo(tmp_path / "repo")
    lock = repo / ".git" / "index.lock"
    with lock.open("w"):  # held open, as by a git still writing
        assert not await clear_stale_lock(repo)
        assert lock.exists()
    assert await clear_stale_lock(repo)
    assert not lock.exists()


async def test_base_is_pinned_at_submit(store: Store, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    t = shell_task("pinned", "cat shared.txt > seen.txt", worktree=True)
    t.agent.project_dir = str(repo)
    async with Engine(store) as engine:
        await engine.submit([t], approved=False)
        (repo / "shared.txt").write_text("later\n")
        git(repo, "commit", "-qam", "later")
        await engine.approve(t.id)
        await settle(engine, t.id)
    wt = await store.get_worktree(t.id)
    assert wt is not None and wt.base_branch == "main"
    assert show(repo, wt.branch, "seen.txt") == "base\n"


async def test_base_ref_and_a_dependent_task_on_the_same_branch(
    store: Store, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "checkout", "-qb", "feature")
    (repo / "shared.txt").write_text("feature\n")
    git(repo, "commit", "-qam", "feature")
    git(repo, "checkout", "-q", "main")
    edit = shell_task("edit", "echo edited >> shared.txt", worktree={"base": "feature"})
    edit.agent.project_dir = str(repo)
    check = shell_task(
        "check", "grep -q edited shared.txt && echo checked > check.txt", worktree={"from": edit.id}
    )
    check.depends_on = [edit.id]
    async with Engine(store) as engine:
        await engine.submit([edit, check])
        await settle(engine, edit.id, check.id)
        assert (await stored(engine, check.id)).state == State.COMPLETED
    we, wc = await store.get_worktree(edit.id), await store.get_worktree(check.id)
    assert we is not None and wc is not None
    assert (wc.branch, wc.path) == (we.branch, we.path)
    assert we.base_branch == "feature"
    assert show(repo, we.branch, "shared.txt") == "feature\nedited\n"
    assert show(repo, we.branch, "check.txt") == "checked\n"


async def test_a_base_that_does_not_exist_refuses_the_batch(store: Store, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    t = shell_task("nobase", "true", worktree={"base": "no-such-branch"})
    t.agent.project_dir = str(repo)
    async with Engine(store) as engine:
        with pytest.raises(EngineError, match=r"nobase.*no-such-branch.*is not a commit"):
            await engine.submit([t])
    assert await store.list_tasks() == []
    assert await store.list_worktrees() == []


async def test_outside_a_repository_the_task_runs_in_place(store: Store, project: Path) -> None:
    t = shell_task("plain", "echo hi > out.txt", worktree=True)
    t.agent.project_dir = str(project)
    async with Engine(store) as engine:
        await engine.submit([t])
        await settle(engine, t.id)
    assert (project / "out.txt").read_text() == "hi\n"
    assert "not in a git repository" in await output_of(store, t.id)
    with pytest.raises(EngineError, match="no worktree"):
        await engine.handle(api.GetWorktree(task_id=t.id))


async def test_many_worktrees_of_one_repository_at_once(store: Store, tmp_path: Path) -> None:
    # Creating and committing worktrees of one repository at the same moment would trip over
    # git's own locks (config, refs) without tui's lock per repository.
    repo = make_repo(tmp_path / "repo")
    tasks = [shell_task(f"t{i}", f"echo {i} > shared.txt", worktree=True) for i in range(6)]
    for t in tasks:
        t.agent.project_dir = str(repo)
    async with Engine(store, concurrency=6) as engine:
        await engine.submit(tasks)
        await settle(engine, *(t.id for t in tasks))
        states = [(await stored(engine, t.id)).state for t in tasks]
    assert states == [State.COMPLETED] * 6
    for i, t in enumerate(tasks):
        wt = await store.get_worktree(t.id)
        assert wt is not None and show(repo, wt.branch, "shared.txt") == f"{i}\n"
