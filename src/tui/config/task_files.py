"""Task files as every way in loads them — `tui run`, `tui open`, `tui validate` and the app's
`o` — so that each refuses what the others would, with the same message: config.toml's
workflow defaults ([summarizer] and [classifier] among them), classify rules, system parts
and the worktree setting applied."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported on use: `tui ask` and the like never read a task file
    from tui.model.loader import LoadResult
    from tui.model.task import Task


def load_files(files: Sequence[str | Path], known_ids: Collection[str] = ()) -> LoadResult:
    """Raises TaskFileError listing every problem (ConfigError, first, for a broken
    config.toml: a task file is not loaded with defaults the person did not mean)."""
    from tui.config.load import settings_or_raise
    from tui.config.system_parts import named_parts
    from tui.model.loader import load_task_files

    settings = settings_or_raise()
    return load_task_files(
        files,
        known_ids=known_ids,
        parts=named_parts,  # read only when a task names a part
        classify=lambda: list(settings.classify),
        defaults=settings.workflow_defaults(),
    )


def with_worktree_setting(tasks: list[Task]) -> list[Task]:
    """Loaded tasks with the config's ``worktree`` setting applied."""
    from tui.config.load import settings_or_raise
    from tui.model.task import default_worktree

    return default_worktree(tasks, settings_or_raise().worktree)
