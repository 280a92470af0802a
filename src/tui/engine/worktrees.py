"""A git worktree and branch per task (``worktree:`` in a task; issue 15).

Submit pins the base (``plan``); the first run creates branch ``tui/<short-id>-<slug>`` and
its checkout under ``worktrees/DBNAME/`` beside the database, in tui's data dir
(``prepare``), and
every later attempt, a retry or the run after an engine died, reuses it as it is, so nothing
an agent wrote is lost; when a run ends, whatever the agent left uncommitted is committed to
its branch (``save``). ``merge``, ``discard`` and ``gc`` end a worktree's life. All through the
git CLI (``tui.engine.git``), one operation per repository at a time.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from tui.engine.git import GitError, RepoLocks, git, slug
from tui.model.task import Task
from tui.store.db import Store
from tui.store.worktrees import WorktreeRecord

_TUI_IDENTITY = ("-c", "user.name=tui", "-c", "user.email=tui@localhost")


class MergeConflict(GitError):
    """A merge would conflict; nothing was changed."""

    def __init__(self, branch: str, into: str, files: list[str]) -> None:
        self.files = files
        listed = "\n".join(f"  {f}" for f in files) or "  (git named none)"
        super().__init__(
            f"merging {branch} into {into} conflicts in:\n{listed}\n"
            "nothing was changed; resolve it by hand (git merge "
            f"{branch}) or discard the task's work"
        )


@dataclass
class FileChange:
    path: str
    added: int | None  # None for a binary file
    removed: int | None


class Worktrees:
    """The worktrees of one database's tasks."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.locks = RepoLocks()
        # Beside the database (the user data dir by default), one directory per database.
        self.root = Path(store.path).parent / "worktrees" / Path(store.path).stem

    # -- submit: pin the base ---------------------------------------------------------------

    async def plan(
        self, task: Task, planned: Mapping[str, WorktreeRecord]
    ) -> WorktreeRecord | None:
        """The worktree ``task`` will run in, its base resolved now; None when it has no
        ``worktree:`` or its project_dir is not in a git repository (it then runs in place).
        ``planned``: rows of tasks submitted with it (a ``from:`` may name one)."""
        spec = task.worktree
        if spec is None:
            return None
        if spec.from_:
            source = planned.get(spec.from_) or await self.store.get_worktree(spec.from_)
            if source is None:
                return None  # the source task runs in place, so does this one
            return replace(source, task_id=task.id, status="planned", created_at=time.time())
        project = os.path.expanduser(task.agent.project_dir) if task.agent.project_dir else ""
        if not project or not os.path.isdir(project):
            return None
        top = await git(project, "rev-parse", "--show-toplevel", check=False)
        if top.code != 0:
            return None
        repo = top.out.strip()
        base = spec.base or "HEAD"
        sha = await git(repo, "rev-parse", "--verify", "--quiet", f"{base}^{{commit}}", check=False)
        if sha.code != 0:
            raise GitError(
                f"task {task.name!r}: worktree.base {base!r} is not a commit in {repo}; "
                "name a branch, tag or commit that exists there"
            )
        if spec.base:
            is_branch = await git(
                repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{spec.base}", check=False
            )
            base_branch = spec.base if is_branch.code == 0 else ""
        else:
            head = await git(repo, "symbolic-ref", "--quiet", "--short", "HEAD", check=False)
            base_branch = head.out.strip() if head.code == 0 else ""
        name = f"{slug(task.id, 8)}-{slug(task.name)}"
        where = f"{slug(os.path.basename(repo), 20)}-{hashlib.sha1(repo.encode()).hexdigest()[:8]}"
        subdir = os.path.relpath(os.path.realpath(project), os.path.realpath(repo))
        return WorktreeRecord(
            task_id=task.id,
            repo=repo,
            subdir="" if subdir == "." else subdir,
            base_ref=spec.base,
            base_sha=sha.out.strip(),
            base_branch=base_branch,
            branch=f"tui/{name}",
            path=str(self.root / where / name),
            status="planned",
            created_at=time.time(),
        )

    # -- runs ---------------------------------------------------------------------------------

    async def prepare(self, rec: WorktreeRecord) -> str:
        """Create the branch and checkout, or reuse them; the directory the agent runs in."""
        if not rec.live:
            raise GitError(f"the task's worktree was {rec.status}; its branch is gone")
        path = Path(rec.path)
        async with self.locks.of(rec.repo):
            if path.exists() and rec.status == "planned" and not await _is_checkout(path):
                # A first `git worktree add` cut short (kill -9): no agent has run there yet
                # (the status turns active only after the add), so nothing of value is lost.
                shutil.rmtree(path)
            if path.exists():
                if not await _is_checkout(path):
                    raise GitError(
                        f"{path} exists but is not this task's git worktree; move it away"
                    )
                await clear_stale_lock(path)
            else:
                await git(rec.repo, "worktree", "prune")
                branch = f"refs/heads/{rec.branch}"
                has = await git(rec.repo, "rev-parse", "--verify", "--quiet", branch, check=False)
                path.parent.mkdir(parents=True, exist_ok=True)
                if has.code == 0:
                    await git(rec.repo, "worktree", "add", str(path), rec.branch)
                else:
                    await git(
                        rec.repo, "worktree", "add", "-b", rec.branch, str(path), rec.base_sha
                    )
            if rec.status == "planned":
                await self.store.set_worktree_status(rec.path, "active")
        return str(path / rec.subdir) if rec.subdir else str(path)

    async def save(self, rec: WorktreeRecord, message: str) -> str:
        """Commit everything uncommitted in the worktree to its branch; the new commit's id,
        or "" when there was nothing to commit (or no checkout)."""
        async with self.locks.of(rec.repo):
            return await self._save(Path(rec.path), message)

    async def _save(self, path: Path, message: str) -> str:
        if not path.exists():
            return ""
        await clear_stale_lock(path)
        await git(path, "add", "-A")
        staged = await git(path, "diff", "--cached", "--quiet", check=False)
        if staged.code == 0:
            return ""
        who = await _identity(path)
        await git(path, *who, "commit", "--no-verify", "-q", "-m", message)
        return (await git(path, "rev-parse", "HEAD")).out.strip()

    # -- looking at the work ------------------------------------------------------------------

    async def _diff(self, rec: WorktreeRecord, *args: str) -> str:
        """``git diff ARGS`` of the work against its base: the checkout while it exists —
        committed, uncommitted and untracked (not ignored) files — else the branch."""
        if not Path(rec.path).exists():
            if not rec.live:
                raise GitError(f"the task's worktree was {rec.status}; there is no diff any more")
            return (await git(rec.repo, "diff", *args, rec.base_sha, rec.branch, "--")).out
        # Untracked files are marked intent-to-add in a copy of the checkout's index, so the
        # diff shows them as new while the agent's own index (and its next commit) stays as is.
        index = (
            await git(rec.path, "rev-parse", "--path-format=absolute", "--git-path", "index")
        ).out
        with tempfile.TemporaryDirectory(prefix="tui-diff-") as tmp:
            temp_index = os.path.join(tmp, "index")
            if os.path.exists(index.strip()):
                shutil.copyfile(index.strip(), temp_index)
            env = {"GIT_INDEX_FILE": temp_index}
            await git(rec.path, "add", "--intent-to-add", "--all", "--", ".", env=env)
            return (await git(rec.path, "diff", *args, rec.base_sha, "--", env=env)).out

    async def diff(self, rec: WorktreeRecord, *, color: bool = False) -> str:
        return await self._diff(rec, "--color=always" if color else "--no-color")

    async def changes(self, rec: WorktreeRecord) -> list[FileChange]:
        out = await self._diff(rec, "--numstat")
        found = []
        for line in out.splitlines():
            added, removed, name = line.split("\t", 2)
            found.append(
                FileChange(
                    name,
                    int(added) if added.isdigit() else None,
                    int(removed) if removed.isdigit() else None,
                )
            )
        return found

    # -- ending a worktree's life ---------------------------------------------------------------

    async def merge(self, rec: WorktreeRecord, title: str) -> str:
        """Merge the task's branch into its base branch: fast-forward when possible, else a
        merge commit. A conflict raises :class:`MergeConflict` with everything as it was.
        Then the worktree and the (merged) branch are removed."""
        if not rec.live:
            raise GitError(f"the task's worktree was already {rec.status}")
        if not rec.base_branch:
            raise GitError(
                f"the task branched from a detached HEAD ({rec.base_sha[:12]}): there is no "
                f"branch to merge into; merge {rec.branch} by hand"
            )
        async with self.locks.of(rec.repo):
            await self._save(Path(rec.path), f"tui: {title}")
            how = await self._merge(rec, f"Merge tui task {title}")
            await self._remove(rec, force=False)
            await self.store.set_worktree_status(rec.path, "merged")
        return f"merged {rec.branch} into {rec.base_branch} ({how}); removed its worktree"

    async def _merge(self, rec: WorktreeRecord, message: str) -> str:
        repo, base, branch = rec.repo, rec.base_branch, rec.branch
        where = await _checked_out(repo, base)
        if where is not None:
            dirty = await git(where, "status", "--porcelain", "--untracked-files=no")
            if dirty.out.strip():
                raise GitError(
                    f"{base} is checked out in {where} with uncommitted changes; commit or "
                    "stash them, then merge again (nothing was changed)"
                )
            if (await git(where, "merge", "--ff-only", "-q", branch, check=False)).code == 0:
                return "fast-forward"
            who = await _identity(where)
            args = ("merge", "--no-ff", "--no-edit", "-q", "-m", message, branch)
            tried = await git(where, *who, *args, check=False)
            if tried.code == 0:
                return "merge commit"
            unmerged = await git(where, "diff", "--name-only", "--diff-filter=U", check=False)
            files = unmerged.out.split("\n")[:-1]
            if not files:  # refused before it began (an untracked file in the way, say)
                said = tried.err.strip() or tried.out.strip()
                raise GitError(f"git merge {branch} in {where} failed: {said}")
            await git(where, "merge", "--abort", check=False)
            raise MergeConflict(branch, base, files)
        # The base branch is checked out nowhere: move its ref without touching any files.
        old = (await git(repo, "rev-parse", f"refs/heads/{base}")).out.strip()
        new = (await git(repo, "rev-parse", f"refs/heads/{branch}")).out.strip()
        ancestor = await git(repo, "merge-base", "--is-ancestor", old, new, check=False)
        if ancestor.code == 0:
            await git(repo, "update-ref", f"refs/heads/{base}", new, old)
            return "fast-forward"
        tree = await git(repo, "merge-tree", "--write-tree", "--name-only", old, new, check=False)
        lines = tree.out.split("\n")
        if tree.code != 0:
            files = []
            for line in lines[1:]:
                if not line:
                    break
                files.append(line)
            if tree.code == 1:
                raise MergeConflict(branch, base, files)
            raise GitError(f"git merge-tree failed: {tree.err.strip()}")
        who = await _identity(repo)
        commit = await git(repo, *who, "commit-tree", lines[0], "-p", old, "-p", new, "-m", message)
        await git(repo, "update-ref", f"refs/heads/{base}", commit.out.strip(), old)
        return "merge commit"

    async def discard(self, rec: WorktreeRecord) -> str:
        """Remove the worktree and delete its branch: the task's work is thrown away."""
        if not rec.live:
            raise GitError(f"the task's worktree was already {rec.status}")
        async with self.locks.of(rec.repo):
            await self._remove(rec, force=True)
            await self.store.set_worktree_status(rec.path, "discarded")
        return f"discarded {rec.branch} and its worktree"

    async def _remove(self, rec: WorktreeRecord, *, force: bool) -> None:
        if Path(rec.path).exists():
            extra = ["--force"] if force else []
            await git(rec.repo, "worktree", "remove", *extra, rec.path)
        await git(rec.repo, "worktree", "prune")
        await git(rec.repo, "branch", "-D" if force else "-d", rec.branch, check=False)

    async def gc(self, task_ids: Collection[str]) -> list[str]:
        """Remove checkouts under our directory that no task needs any more: tasks that no
        longer exist, or worktrees left after a merge or discard was interrupted. Changes left
        uncommitted in one are first committed to its branch, and the branch is kept; a
        checkout that is not on a branch and has changes is left alone and reported."""
        rows = await self.store.list_worktrees()
        needed = {r.path for r in rows if r.live and r.task_id in task_ids}
        said: list[str] = []
        if not self.root.is_dir():
            return said
        for repo_dir in sorted(self.root.iterdir()):
            for path in sorted(p for p in repo_dir.iterdir() if p.is_dir()):
                if str(path) not in needed:
                    said.append(await self._collect(path))
            if repo_dir.is_dir() and not any(repo_dir.iterdir()):
                repo_dir.rmdir()
        return said

    async def _collect(self, path: Path) -> str:
        common = await git(
            path, "rev-parse", "--path-format=absolute", "--git-common-dir", check=False
        )
        if common.code != 0:
            return f"left {path}: not a git worktree"
        repo = str(Path(common.out.strip()).parent)
        async with self.locks.of(repo):
            branch = await git(path, "symbolic-ref", "--quiet", "--short", "HEAD", check=False)
            dirty = (await git(path, "status", "--porcelain")).out.strip()
            note = ""
            if dirty and branch.code != 0:
                return f"left {path}: uncommitted changes and no branch to keep them on"
            if dirty:
                await self._save(path, "tui gc: changes left in a worktree whose task is gone")
                note = ", its uncommitted changes committed"
            await git(repo, "worktree", "remove", str(path))
            await git(repo, "worktree", "prune")
        kept = f" (branch {branch.out.strip()} kept{note})" if branch.code == 0 else ""
        return f"removed {path}{kept}"


async def _is_checkout(path: Path) -> bool:
    """Whether ``path`` is the top of a git checkout (a whole worktree, not a leftover)."""
    top = await git(path, "rev-parse", "--show-toplevel", check=False)
    return top.code == 0 and os.path.samefile(top.out.strip(), path)


async def clear_stale_lock(path: Path) -> bool:
    """Remove the checkout's ``index.lock`` if no process holds it open: git (ours or the
    agent's) killed mid-write (a ``kill -9`` of the engine) leaves it behind, and every later
    git command there would then refuse to run. A lock some live process has open is left
    alone. True when one was removed."""
    found = await git(path, "rev-parse", "--git-path", "index.lock", check=False)
    if found.code != 0:
        return False
    lock = Path(found.out.strip())
    lock = lock if lock.is_absolute() else path / lock
    if not lock.exists() or _held_open(lock):
        return False
    lock.unlink(missing_ok=True)
    return True


def _held_open(file: Path) -> bool:
    """Whether any process we can see has ``file`` open (Linux /proc; others' processes we
    cannot read are not ours, and cannot be writing our checkout's index)."""
    target = str(file.resolve())
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                    return True
            except OSError:
                continue
    return False


async def _identity(where: str | Path) -> tuple[str, ...]:
    """``-c`` options giving git a committer when the user has none configured."""
    has = await git(where, "config", "user.email", check=False)
    return () if has.code == 0 and has.out.strip() else _TUI_IDENTITY


async def _checked_out(repo: str, branch: str) -> str | None:
    """The worktree (the main one included) where ``branch`` is checked out, if any."""
    out = (await git(repo, "worktree", "list", "--porcelain")).out
    where = None
    for line in out.splitlines():
        if line.startswith("worktree "):
            where = line[len("worktree ") :]
        elif line == f"branch refs/heads/{branch}":
            return where
    return None
