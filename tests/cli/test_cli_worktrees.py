"""`tui diff | merge | discard | worktree | gc` on real git repositories, through real `tui`
commands; and a kill -9 of the engine during a worktree task."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from tests.cli.cli_support import Tui, shell_task, wait_until, write_tasks
from tests.worktree.git_support import git, make_repo, show


def wt_task(name: str, script: str, repo: Path, **extra: object) -> dict[str, object]:
    task = shell_task(name, script, worktree=True, **extra)
    task["agent"]["project_dir"] = str(repo)
    return task


def run_ok(tui: Tui, *tasks: dict[str, object]) -> None:
    res = tui("run", str(write_tasks(tui.dir / "tasks.yaml", list(tasks))))
    assert res.returncode == 0, str(res)


def test_diff_merge_conflict_and_discard(tui: Tui) -> None:
    repo = make_repo(tui.dir / "repo")
    run_ok(
        tui,
        wt_task("alpha", "echo alpha > shared.txt", repo),
        wt_task("beta", "echo beta > shared.txt", repo),
    )
    path = tui("worktree", "alpha")
    assert path.returncode == 0, str(path)
    assert (Path(path.stdout.strip()) / "shared.txt").read_text() == "alpha\n"

    diff = tui("diff", "alpha")
    assert diff.returncode == 0, str(diff)
    assert "-base\n+alpha\n" in diff.stdout and "\x1b[" not in diff.stdout  # no tty: no colour
    assert "\x1b[" in tui("diff", "alpha", "--color", "always").stdout
    stat = tui("diff", "alpha", "--stat")
    assert stat.stdout.split() == ["+1", "-1", "shared.txt"], str(stat)

    merged = tui("merge", "alpha")
    assert merged.returncode == 0, str(merged)
    assert "fast-forward" in merged.stdout
    # main is checked out in the repository: its files follow.
    assert (repo / "shared.txt").read_text() == "alpha\n"
    assert show(repo, "main", "shared.txt") == "alpha\n"
    assert not Path(path.stdout.strip()).exists()
    assert "tui/" not in git(repo, "branch", "--list", "tui/*alpha*")

    head = git(repo, "rev-parse", "main")
    beta_path = tui("worktree", "beta").stdout.strip()
    conflict = tui("merge", "beta")
    assert conflict.returncode == 1, str(conflict)
    assert "conflicts in" in conflict.stderr and "shared.txt" in conflict.stderr
    # Everything as it was: main, its checkout, beta's branch and worktree.
    assert git(repo, "rev-parse", "main") == head
    assert git(repo, "status", "--porcelain") == ""
    assert (Path(beta_path) / "shared.txt").read_text() == "beta\n"

    asked = tui("discard", "beta")  # no terminal to ask in: refused, naming --yes
    assert asked.returncode == 1 and "--yes" in asked.stderr, str(asked)
    assert Path(beta_path).exists()
    gone = tui("discard", "beta", "--yes")
    assert gone.returncode == 0, str(gone)
    assert not Path(beta_path).exists()
    assert git(repo, "branch", "--list", "tui/*") == ""
    assert tui("worktree", "beta").returncode == 1


def test_merge_makes_a_merge_commit_when_the_base_moved(tui: Tui) -> None:
    repo = make_repo(tui.dir / "repo", {"a.txt": "a\n", "b.txt": "b\n"})
    run_ok(tui, wt_task("edit-b", "echo task >> b.txt", repo))
    (repo / "a.txt").write_text("moved on\n")
    git(repo, "commit", "-qam", "meanwhile")
    git(repo, "checkout", "-q", "--detach")  # main checked out nowhere: merged by refs alone
    merged = tui("merge", "edit-b")
    assert merged.returncode == 0, str(merged)
    assert "merge commit" in merged.stdout
    parents = git(repo, "log", "-1", "--format=%P", "main").split()
    assert len(parents) == 2
    assert show(repo, "main", "a.txt") == "moved on\n"
    assert show(repo, "main", "b.txt") == "b\ntask\n"


def test_gc_keeps_uncommitted_changes_of_a_task_that_is_gone(tui: Tui) -> None:
    repo = make_repo(tui.dir / "repo")
    run_ok(tui, wt_task("lost", "echo done > shared.txt", repo))
    path = Path(tui("worktree", "lost").stdout.strip())
    branch = git(path, "symbolic-ref", "--short", "HEAD").strip()
    (path / "later.txt").write_text("typed by hand\n")
    # The database is replaced: no task needs the worktree any more.
    tui.db.rename(tui.dir / "old.db")
    res = tui("gc")
    assert res.returncode == 0, str(res)
    assert f"branch {branch} kept" in res.stdout and "committed" in res.stdout
    assert not path.exists()
    assert show(repo, branch, "later.txt") == "typed by hand\n"
    assert show(repo, branch, "shared.txt") == "done\n"
    assert tui("gc").stdout.strip() == "no worktree to remove"


def test_gc_leaves_worktrees_of_existing_tasks(tui: Tui) -> None:
    repo = make_repo(tui.dir / "repo")
    run_ok(tui, wt_task("kept", "echo x > shared.txt", repo))
    path = Path(tui("worktree", "kept").stdout.strip())
    assert tui("gc").stdout.strip() == "no worktree to remove"
    assert path.exists()


HELD = """\
echo "attempt $TUI_ATTEMPT" >> work.txt
if [ "$TUI_ATTEMPT" = 1 ]; then
  for _ in $(seq 1 6000); do sleep 0.01; done  # held until the engine dies
fi
"""


def test_kill_9_during_a_worktree_task_keeps_branch_and_changes(tui: Tui) -> None:
    repo = make_repo(tui.dir / "repo")
    marker = tui.marker()
    f = write_tasks(tui.dir / "held.yaml", [wt_task("held", f"# {marker}\n{HELD}", repo)])
    run = tui.popen("run", str(f))

    def written() -> Path | None:
        rows = tui.sql("SELECT path FROM worktrees")
        work = Path(rows[0][0]) / "work.txt" if rows else None
        return work if work is not None and work.exists() else None

    work = wait_until(written, "the agent's first edit in its worktree", proc=run)
    os.kill(run.pid, signal.SIGKILL)
    run.communicate(timeout=30)
    ((branch,),) = tui.sql("SELECT branch FROM worktrees")
    assert git(repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}").strip()
    assert work.read_text() == "attempt 1\n"  # uncommitted, and still there

    res = tui("run", timeout=120)  # recovery: the same worktree, attempt 2
    assert res.returncode == 0, str(res)
    assert work.read_text() == "attempt 1\nattempt 2\n"
    assert show(repo, branch, "work.txt") == "attempt 1\nattempt 2\n"


def test_config_setting_gives_tasks_that_do_not_say_a_worktree(tui: Tui) -> None:
    repo = make_repo(tui.dir / "repo")
    config = tui.dir / "user-config"
    config.mkdir(exist_ok=True)
    (config / "config.toml").write_text("[settings]\nworktree = true\n")
    plain = shell_task("plain", "echo plain > shared.txt")
    plain["agent"]["project_dir"] = str(repo)
    opted_out = shell_task("opted-out", "echo mine > own.txt", worktree=False)
    opted_out["agent"]["project_dir"] = str(repo)
    run_ok(tui, plain, opted_out)
    assert (repo / "shared.txt").read_text() == "base\n"  # plain ran in its worktree
    assert (repo / "own.txt").read_text() == "mine\n"  # opted-out ran in the repository
    assert tui("worktree", "opted-out").returncode == 1
    assert "+plain" in tui("diff", "plain").stdout


def test_diff_of_a_running_task_shows_files_it_has_not_committed(tui: Tui) -> None:
    repo = make_repo(tui.dir / "repo")
    release = tui.dir / "release"
    script = (
        f"# {tui.marker()}\n"
        "echo edited > shared.txt\nmkdir -p sub && echo new > sub/fresh.txt\n"
        "echo ignored > junk.log && echo '*.log' > .gitignore\n"
        "touch ready\n"
        f'while [ ! -e "{release}" ]; do sleep 0.01; done\n'
    )
    run = tui.popen("run", str(write_tasks(tui.dir / "t.yaml", [wt_task("busy", script, repo)])))

    def ready() -> Path | None:
        rows = tui.sql("SELECT path FROM worktrees")
        return Path(rows[0][0]) if rows and (Path(rows[0][0]) / "ready").exists() else None

    work = wait_until(ready, "the agent's files in its worktree", proc=run)
    try:
        status = git(work, "status", "--porcelain")
        diff = tui("diff", "busy")
        assert diff.returncode == 0, str(diff)
        assert "+++ b/sub/fresh.txt\n" in diff.stdout and "+new\n" in diff.stdout
        assert "-base\n+edited\n" in diff.stdout
        assert "junk.log" not in diff.stdout  # ignored files stay out
        stat = tui("diff", "busy", "--stat").stdout.splitlines()
        assert ["+1", "-0", "sub/fresh.txt"] in [line.split() for line in stat], stat
        # The agent's own index is untouched: its new files are still untracked.
        assert git(work, "status", "--porcelain") == status
        assert "?? sub/" in status
    finally:
        release.touch()
    out, errs = run.communicate(timeout=60)
    assert run.returncode == 0, out + errs
    ((branch,),) = tui.sql("SELECT branch FROM worktrees")
    assert show(repo, branch, "sub/fresh.txt") == "new\n"


def test_config_setting_reaches_tui_task_templates(tui: Tui) -> None:
    make_repo(tui.dir)  # the project `tui task` runs in
    config = tui.dir / "user-config"
    config.mkdir(exist_ok=True)
    (config / "config.toml").write_text(
        "[settings]\nworktree = true\n\n"
        '[agents.sh]\ntype = "shell"\nscript = "echo templated > shared.txt"\n\n'
        '[tasks.edit]\nagent = "sh"\nprompt = "edit {instructions}"\n'
    )
    res = tui("task", "edit", "now")
    assert res.returncode == 0, str(res)
    assert (tui.dir / "shared.txt").read_text() == "base\n"  # it ran in its worktree
    ((task_id,),) = tui.sql("SELECT task_id FROM worktrees")
    assert "+templated" in tui("diff", task_id).stdout
