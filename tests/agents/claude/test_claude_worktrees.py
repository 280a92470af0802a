"""Two real claude CLIs (scripted model server) writing the same file, each in its own git
worktree of one repository, without meeting."""

from __future__ import annotations

from pathlib import Path

from tests.agents.claude.conftest import claude_task, needs_cli
from tests.agents.claude.model_server import ModelServer, text, tool_use
from tests.agents.cli_support import settled
from tests.worktree.git_support import git, make_repo, show
from tui.engine.scheduler import Engine
from tui.model.states import State
from tui.store.db import Store

pytestmark = needs_cli


async def test_two_claude_tasks_write_one_file_in_their_own_worktrees(
    engine: Engine, store: Store, model: ModelServer, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "repo")
    tasks = [
        claude_task(
            name,
            f"zq-{name}: write your name into shared.txt",
            repo,
            worktree=True,
            agent={"permission_mode": "acceptEdits"},
        )
        for name in ("left", "right")
    ]
    # Held until scripted: the model writes to where each task's worktree will be.
    await engine.submit(tasks, approved=False)
    for t in tasks:
        wt = await store.get_worktree(t.id)
        assert wt is not None
        target = str(Path(wt.path) / "shared.txt")
        write = tool_use("Write", {"file_path": target, "content": f"{t.name}\n"})
        model.script(f"zq-{t.name}", [write, text("Written.")])
    for t in tasks:
        await engine.approve(t.id)
    for t in tasks:
        await settled(engine, t.id)
        rec = await engine.get(t.id)
        assert rec is not None and rec.state == State.COMPLETED, rec and rec.reason
        wt = await store.get_worktree(t.id)
        assert wt is not None
        assert show(repo, wt.branch, "shared.txt") == f"{t.name}\n"
        assert t.name in git(repo, "log", "-1", "--format=%s", wt.branch)
    assert (repo / "shared.txt").read_text() == "base\n"
    assert git(repo, "status", "--porcelain") == ""
