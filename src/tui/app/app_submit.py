"""What the app submits: a task file or folder (``o``) and a config template (``t``), checked
and warned about as `tui run FILE` and `tui task` do. A part of ``AppActions`` (its base):
the prompts it opens are ``AppActions._ask_text``."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from textual import work
from textual.app import App
from textual.command import SimpleCommand

from tui.app.engine_api import AppEngine
from tui.app.prompts import Confirm
from tui.config.load import ConfigError, load_settings
from tui.config.merged import load_config
from tui.config.task_files import load_files, with_worktree_setting
from tui.config.templates import (
    TaskRequest,
    Template,
    TemplateError,
    TemplateSource,
    all_templates,
    find,
    template_sources,
)
from tui.engine.copies import ambiguous_names, copies_text, unfinished_copies
from tui.engine.scheduler import EngineError
from tui.model.issues import Issue, TaskFileError
from tui.model.task import Task, default_worktree
from tui.store.records import TaskRecord


class AppSubmit(App[None]):
    """The submitting actions of ``TuiApp`` (through ``AppActions``)."""

    # Set up by TuiApp.
    engine: AppEngine
    _template: tuple[TemplateSource, Template] | None
    _graph_dirty: bool

    if TYPE_CHECKING:  # AppActions's, declared for the type checker only

        def _ask_text(
            self,
            title: str,
            then: Callable[[str], object],
            placeholder: str = "",
            *,
            paths: bool = False,
            value: str = "",
        ) -> None: ...

    def action_open_file(self) -> None:
        self._ask_text(
            "Open: a task file or folder to submit (Tab completes, Esc leaves)",
            self._submit_file,
            "sample_tasks/",
            paths=True,
        )

    def action_run_template(self) -> None:
        try:
            config = load_config()
        except ConfigError as e:
            self._notify_issues(e.issues, "config.toml")
            return
        sources = template_sources(config)
        try:
            templates = all_templates(sources)
        except TemplateError as e:  # e.g. a broken .agent/Taskfile.yml
            self.notify(str(e), title="Templates", severity="error", timeout=10)
            return
        for warning in (w for s in sources for w in s.warnings):  # e.g. a broken Taskfile
            self.notify(warning, title="Templates", severity="warning", timeout=10)
        if not templates:
            self.notify(
                "no templates yet: add [tasks.NAME] to config.toml, or tasks to"
                " .agent/Taskfile.yml",
                severity="warning",
            )
            return
        self.search_commands(
            [
                SimpleCommand(
                    t.name + (f" ({t.alias})" if t.alias else ""),
                    partial(self._template_picked, sources, t),
                    t.description or f"from the {t.source} config",
                )
                for t in templates
            ],
            placeholder="Template to run…",
        )

    def _template_picked(self, sources: list[TemplateSource], template: Template) -> None:
        self._template = find(sources, template.name)
        self._ask_text(f"Instructions for {template.name} (may be empty)", self._run_template)

    @work(group="commands")
    async def _run_template(self, instructions: str) -> None:
        # A worker: filling the template may run its command (up to command_timeout).
        assert self._template is not None
        source, template = self._template
        try:
            seen = len(source.warnings)
            task = await source.make_task(template.name, TaskRequest(instructions))
            default_worktree([task], load_settings()[0].worktree)  # as `tui task` does
            for warning in source.warnings[seen:]:  # e.g. a context's file that is not there
                self.notify(warning, title=template.name, severity="warning", timeout=10)
            await self.engine.submit([task])
        except TaskFileError as e:
            self._notify_issues(e.issues, template.name)
            return
        except (TemplateError, EngineError) as e:
            self.notify(str(e), severity="error", timeout=8)
            return
        self.notify(f"submitted {task.name}")
        self._graph_dirty = True

    def _notify_issues(self, issues: list[Issue], where: str) -> None:
        text = "\n".join(str(i) for i in issues[:8])
        self.notify(
            text, title=f"{len(issues)} problem(s) in {where}", severity="error", timeout=15
        )

    async def _submit_file(self, path: str) -> None:
        if not path.strip():  # the grey "sample_tasks/" is an example, not a value: say so
            self.notify("nothing opened: type a file or folder (Tab completes)", timeout=6)
            return
        try:
            records = await self.engine.list_tasks()
            # As `tui run FILE` / `tui open FILE` load it: a broken config.toml refuses it.
            loaded = load_files([Path(path).expanduser()], known_ids={r.id for r in records})
            tasks = with_worktree_setting(loaded.tasks)
        except TaskFileError as e:
            self._notify_issues(e.issues, "config.toml" if isinstance(e, ConfigError) else path)
            return
        except EngineError as e:
            self.notify(str(e), severity="error", timeout=8)
            return
        for warning in loaded.warnings:  # what `tui run FILE` prints as `warning: ...`
            self.notify(str(warning), severity="warning", timeout=8)
        copies = unfinished_copies(records, tasks)
        if not copies:
            await self._submit_tasks(tasks, path, records)
            return

        # As `tui open FILE` does: a second copy of unfinished tasks only if the person says so.
        async def answered(yes: bool | None) -> None:
            if yes:
                await self._submit_tasks(tasks, path, records)
            else:
                self.notify("nothing submitted", timeout=4)

        self.push_screen(Confirm(f"{copies_text(copies)}. Submit another copy?"), answered)

    async def _submit_tasks(self, tasks: list[Task], path: str, records: list[TaskRecord]) -> None:
        try:
            await self.engine.submit(tasks)
        except EngineError as e:
            self.notify(str(e), severity="error", timeout=8)
            return
        n = len(tasks)
        self.notify(f"submitted {n} task{'s' * (n != 1)} from {path}")
        for note in ambiguous_names(records, tasks):
            self.notify(note, severity="warning", timeout=8)
        self._graph_dirty = True
