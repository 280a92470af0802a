"""The Textual app: task list, live output, DAG and questions over the engine's client API.
Here the screen and how it follows the engine; what each key does is in ``app_actions``, and
its toasts, bell and desktop notifications in ``app_toasts``."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, cast

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import Footer, Header, Static, TabbedContent, TabPane

from tui.app import actions
from tui.app.app_actions import AppActions
from tui.app.app_toasts import AppToasts
from tui.app.engine_api import AppEngine
from tui.app.fold_memory import db_key, load_folds, save_folds
from tui.app.help_screen import pretty_key
from tui.app.keymap import keymap_from
from tui.app.main_screen import MainScreen
from tui.app.notify import OscMode, default_osc_mode
from tui.app.themes import discover_themes, pick_theme
from tui.app.ui_state import load_ui_state, save_ui_state
from tui.app.widgets.changes_view import ChangesView
from tui.app.widgets.dag_groups import grouped_nodes
from tui.app.widgets.dag_view import DagView
from tui.app.widgets.log_view import PAUSED_LABEL, LogView
from tui.app.widgets.question_panel import QuestionItem, QuestionPanel
from tui.app.widgets.task_list import TaskList
from tui.config.load import load_settings
from tui.config.templates import (
    Template,
    TemplateSource,
)
from tui.daemon.remote import DaemonStopped
from tui.engine.events import Cursor, Event, Notice, OutputBatch
from tui.engine.scheduler import Engine, EngineError
from tui.gc_tuning import tune_gc
from tui.model.states import FAILED_GROUP, UNSUCCESSFUL, State
from tui.store.records import OutputLine, TaskRecord

REFRESH_HZ = 10  # task list / DAG / question updates are applied in batches this often
UNDER_WAY = frozenset({State.PENDING, State.QUEUED, State.RUNNING, State.BLOCKED})


RESULT_WIDTH = 40  # characters of a result shown under the output pane


def result_line(rec: TaskRecord) -> str:
    """``result: …`` — the first line of the task's result, cut to fit; "" without one."""
    try:
        value = rec.parsed_result
    except ValueError:
        value = rec.result
    if value is None or value == "":
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    lines = text.strip().splitlines() or [""]
    first = lines[0] + (" …" if len(lines) > 1 else "")
    if len(first) > RESULT_WIDTH:
        first = first[: RESULT_WIDTH - 1] + "…"
    return f"result: {first}"


class TuiApp(AppActions, AppToasts):
    TITLE = "tui"
    CSS = """
    #body { height: 1fr; }
    #tasks {
        width: 55%; min-width: 30; border-right: vkey $panel-lighten-2;
        border-top: hkey $panel-lighten-2; border-title-color: $text;
    }
    #right { width: 1fr; border-top: hkey $panel-lighten-2; border-title-color: $text; }
    #status { height: 1; background: $panel; color: $text-muted; padding: 0 1; }
    Screen.zoomed #tasks { display: none; }
    TabbedContent { height: 1fr; }
    TabPane { padding: 0; }
    /* Compact footer keys keep a margin after them: the palette's hint, docked right, would
       leave a cell where keys that overflow the footer show through ("^p paletten"). */
    Footer.-compact FooterKey.-command-palette { margin-right: 0; }
    /* Toasts sit over the output pane's foot: as narrow as their text (never over the task
       list), no blank rows around them, and at most MAX_TOASTS at once (app_toasts). */
    Toast { width: auto; max-width: 42%; padding: 0 1; margin-top: 0; }
    ToastRack { margin-bottom: 2; }  /* above the status line too, not over its counts */
    """
    BINDINGS = actions.bindings()  # type: ignore[assignment]  # Textual's list is invariant

    def __init__(
        self,
        engine: AppEngine | Callable[[], Awaitable[AppEngine]],
        *,
        keymap: dict[str, str] | None = None,
        osc: OscMode | None = None,
        remember_theme: bool = True,
        remember_folds: bool = True,
        toasts: bool = True,
        fit_terminal_colors: bool = False,
        notices: Sequence[str] = (),
        listing: Awaitable[tuple[Cursor, list[TaskRecord]]] | None = None,
    ) -> None:
        """``engine`` is an in-process engine or the daemon's (``RemoteEngine``), or a factory
        of either that the app awaits (and stops or detaches from on exit) when it should own
        that life in its own event loop. ``fit_terminal_colors`` starts on the high-contrast
        theme when the terminal has only 16 colours and the user chose no theme (the real app
        does; tests and benchmarks keep the default theme). ``notices`` are shown once the app
        is up (what the command line could not do, say). ``listing`` is the engine's task
        list already asked for, with the stream's cursor from before it was read (`tui` asks
        while the app's modules load), instead of asking once mounted."""
        super().__init__()
        given = hasattr(engine, "events")
        self._engine_factory: Callable[[], Awaitable[AppEngine]] | None = (
            None if given else cast("Callable[[], Awaitable[AppEngine]]", engine)
        )
        self.engine: AppEngine = cast("AppEngine", engine) if given else None  # type: ignore[assignment]
        settings, config_issues = load_settings()
        self._osc: OscMode = osc if osc is not None else default_osc_mode(settings.notifications)
        self._configured_theme = settings.theme or None  # [settings] theme: a user's choice
        self._remember_theme = remember_theme
        self._remember_folds = remember_folds
        self._db = ""  # the database's key for its remembered folds ("": none kept)
        self._fit_terminal_colors = fit_terminal_colors
        self._toasts = toasts
        self._confirm_cancel = settings.confirm_cancel
        self._dirty: set[str] = set()
        self._questions_dirty = True
        self._graph_dirty = True
        self._changes_dirty = False
        self._finished: list[str] = []
        self._status_note = ""  # e.g. while the daemon is away
        self._template: tuple[TemplateSource, Template] | None = None
        self._status_text = ""
        self._selected: str | None = None
        self._keymap_problems = [f"{i}; settings left as default" for i in config_issues]
        self._notices = list(notices)
        self._listing = listing
        self._untune_gc: Callable[[], None] | None = None
        if keymap is None:
            keymap, problems = keymap_from(settings.keys)
            self._keymap_problems += problems
        if keymap:
            self.set_keymap(keymap)
        if os.environ.get("SSH_CONNECTION"):
            self.animation_level = "none"  # every frame costs bytes over a remote link
        self._load_themes()

    # -- layout ------------------------------------------------------------------------------

    def get_default_screen(self) -> Screen[None]:
        return MainScreen(id="_default")

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="body"):
            yield TaskList(id="tasks")
            with Vertical(id="right"), TabbedContent(initial="output-tab", id="tabs"):
                with TabPane("Output", id="output-tab"):
                    yield LogView(self, id="log")
                with TabPane("DAG", id="dag-tab"):
                    yield DagView(id="dag")
                with TabPane("Questions", id="questions-tab"):
                    yield QuestionPanel(id="questions")
                with TabPane("Changes", id="changes-tab"):
                    yield ChangesView(self._worktree_of, id="changes")
        yield Static(id="status")
        # Compact: the task list's keys, Fold among them, fit in 80 columns.
        yield Footer(compact=True)

    async def on_mount(self) -> None:
        # The main screen's widgets, kept so a pushed screen (help, palette) never hides them.
        self._list = self.query_one(TaskList)
        self._output = self.query_one(LogView)
        self._dag = self.query_one(DagView)
        self._panel = self.query_one(QuestionPanel)
        self._changes = self.query_one(ChangesView)
        self._tabs = self.query_one(TabbedContent)
        self._status = self.query_one("#status", Static)
        self._right = self.query_one("#right")
        if self._engine_factory is not None:
            self.engine = await self._engine_factory()
        if self._listing is not None:
            since, records = await self._listing
        else:
            since = self.engine.cursor
            records = await self.engine.list_tasks()
        if self._remember_folds:
            self._db = db_key(self.engine.db_path)
            self._list.remember_folds(*load_folds(self._db))  # before the size folds apply
        self._list.set_records(records)
        self.refresh_bindings()  # the fold keys show once some task has subtasks
        await self._refresh_questions()
        self._update_status()
        self._consume_events(since)
        self.set_interval(1 / REFRESH_HZ, self._apply_batch)
        self.set_interval(1.0, self._list.refresh_running)
        self._list.approve_key = pretty_key(self._keymap.get("approve_task", "p"))
        self.watch(self._output, "follow", lambda _: self._update_right_title(), init=False)
        self._list.focus()
        await self._show_selected()

    async def on_unmount(self) -> None:
        if self._untune_gc is not None:
            self._untune_gc()
        self._save_folds()
        # An engine the app made is the app's to stop, with its store (whose thread would
        # otherwise keep the process alive); a daemon's is only detached from.
        if self._engine_factory is None or self.engine is None:
            return
        if isinstance(self.engine, Engine):
            await self.engine.stop()
            await self.engine.store.close()
        else:
            await self.engine.aclose()

    # The log view pages lines through the app, so it works before the engine is set.
    async def output_index(self, task_id: str) -> list[tuple[int, int]]:
        return await self.engine.output_index(task_id)

    async def read_run_lines(self, run_id: int, first_seq: int, last_seq: int) -> list[OutputLine]:
        return await self.engine.read_run_lines(run_id, first_seq, last_seq)

    # -- themes ------------------------------------------------------------------------------

    def _load_themes(self) -> None:
        loaded = discover_themes()
        for theme in loaded.themes:
            self.register_theme(theme)
        self._theme_errors = loaded.errors
        remembered = load_ui_state().get("theme") if self._remember_theme else None
        # The console reads COLORTERM/TERM as Textual does (TEXTUAL_COLOR_SYSTEM overrides).
        colors = self.console.color_system if self._fit_terminal_colors else "truecolor"
        self.theme = pick_theme(
            remembered or self._configured_theme, self.available_themes, colors=colors
        )

    def on_ready(self) -> None:
        # The app is built: keep it out of later collections, and pause less.
        self._untune_gc = tune_gc()
        for error in self._theme_errors:
            self.notify(f"theme not loaded: {error}", severity="warning", timeout=8)
        for problem in [*self._keymap_problems, *self._notices]:
            self.notify(problem, severity="warning", timeout=8)

    def watch_theme(self, theme: str) -> None:
        if self._remember_theme and self.is_running:
            save_ui_state(theme=theme)

    # -- events from the engine --------------------------------------------------------------

    @work(exclusive=True, group="events")
    async def _consume_events(self, since: Any) -> None:
        log = self._output
        try:
            async for ev in self.engine.events(since):
                await self._on_event(ev, log)
        except DaemonStopped as e:
            self.exit(message=f"tui: {e}; your tasks are stored — `tui` starts it again")

    async def _on_event(self, ev: Event | Notice, log: LogView) -> None:
        if isinstance(ev, Notice):
            self._tell_notice(ev)
            return
        if isinstance(ev, OutputBatch):
            if self._selected is not None:
                mine = ev.lines_of(self._selected)
                if mine:
                    log.append(mine)
            return
        self._dirty.add(ev.task_id)
        if ev.kind == "submitted":
            self._graph_dirty = True
        elif ev.kind in ("question", "answered"):
            self._questions_dirty = True
            if ev.kind == "question":
                await self._tell_question(ev.task_id, ev.data.get("kind", "question"))
        elif ev.kind == "state" and ev.to_state in (State.COMPLETED, *UNSUCCESSFUL):
            self._finished.append(ev.task_id)
            self._graph_dirty = True
        elif ev.kind == "state":
            self._graph_dirty = True
        if ev.kind == "state" and (rec := self._list.records.get(ev.task_id)) is not None:
            # Its run may have stored a summary on the tasks it depends on, which sends no
            # event of theirs: read them again, or their pane never shows "summary a→b".
            self._dirty.update(rec.depends_on)
        if ev.kind == "state" and ev.task_id == self._selected:
            self._changes_dirty = True  # a run that ended committed its work

    def _tell_notice(self, notice: Notice) -> None:
        if notice.kind == "disconnected":
            self._status_note = "lost the daemon — reconnecting…"
            self.notify(notice.text, title="Daemon", severity="warning", timeout=6)
        else:
            self._status_note = ""
            self.notify(notice.text, title="Daemon", timeout=4)
        self._update_status()

    def _save_folds(self) -> None:
        if self._db and self._list.folds_changed:
            self._list.folds_changed = False
            save_folds(self._db, *self._list.hand_folds())

    async def _apply_batch(self) -> None:
        """Apply what changed since the last tick: one refresh per tick, whatever the rate."""
        self._save_folds()  # a fold is kept at once: a kill -9 later does not lose it
        changed = bool(self._dirty) or self._questions_dirty
        if self._dirty:
            ids, self._dirty = self._dirty, set()
            try:
                records = await self.engine.get_many(ids)
            except EngineError:  # the daemon is away; the stream says so, try next tick
                self._dirty |= ids
                return
            had_subtasks = self._list.task_tree.any_folds
            self._list.upsert(records)
            if had_subtasks != self._list.task_tree.any_folds:
                self.refresh_bindings()  # the fold keys join the footer
            if self._selected is None and records:
                await self._show_selected()
            elif self._selected in ids:
                self._update_right_title()  # its result may have arrived
        if self._graph_dirty and self._tabs.active == "dag-tab":
            self._apply_graph()
        if self._questions_dirty:
            self._questions_dirty = False
            await self._refresh_questions()
        if self._changes_dirty and self._tabs.active == "changes-tab":
            self._changes_dirty = False
            await self._changes.show(self._selected)
        if self._finished:
            await self._tell_finished()
        if changed:  # counting 10k tasks ten times a second for nothing adds up
            self._update_status()

    def _apply_graph(self) -> None:
        # Laying out the graph costs ~0.1 ms per task: done only while the DAG tab is shown.
        self._graph_dirty = False
        # Subtasks grouped under their parent, folded as the task list folds them.
        self._dag.set_graph(grouped_nodes(self._list.records, self._list.task_tree))
        self._dag.select(self._selected)

    @on(TabbedContent.TabActivated, "#tabs")
    def _tab_activated(self, message: TabbedContent.TabActivated) -> None:
        if message.pane.id == "dag-tab" and self._graph_dirty:
            self._apply_graph()
        if message.pane.id == "changes-tab":
            self.run_worker(self._changes.show(self._selected), group="changes", exclusive=True)

    async def _refresh_questions(self) -> None:
        records = self._list.records
        items = [
            QuestionItem(q, records[q.task_id].name if q.task_id in records else q.task_id[:8])
            for q in await self.engine.questions()
        ]
        focused = self.focused
        in_panel = focused is not None and self._panel in (focused, *focused.ancestors)
        had = self._panel.count
        self._panel.set_questions(items)
        if in_panel and had and not items:  # the last one answered: no keys work here now
            self._list.focus()
        try:
            tab = self._tabs.get_tab("questions-tab")
        except NoMatches:  # the app is closing: the batch timer outlived the tabs
            return
        tab.label = f"Questions ({len(items)})" if items else "Questions"

    def _update_status(self) -> None:
        records = self._list.records.values()
        groups = (
            ("running", {State.RUNNING}),
            ("queued", {State.QUEUED}),
            ("failed", FAILED_GROUP),  # failed, timed out, over budget
            ("cancelled", {State.CANCELLED}),
            ("done", {State.COMPLETED}),
        )
        by_state = Counter(r.state for r in records)  # one pass over (maybe 10k) tasks
        counts = {label: sum(by_state[s] for s in states) for label, states in groups}
        open_q = self._panel.count
        n_tasks = len(records)
        parts = [f"{n_tasks} task{'s' * (n_tasks != 1)}"]
        # What wants the person first: a narrow terminal cuts the line's end.
        if open_q:
            parts.append(f"? {open_q} waiting for you (a)")
        if self._status_note:
            parts.append(self._status_note)
        parts += [f"{n} {label}" for label, n in counts.items() if n]
        if len(self._list.projects) > 1:  # several projects: how many tasks each
            named = sorted(self._list.projects.items(), key=lambda kv: (-kv[1], kv[0]))
            parts.append(" ".join(f"{p or '(none)'} {n}" for p, n in named[:4]))
        text = "  ·  ".join(parts)
        if text != self._status_text:  # an unchanged line is not sent to the terminal again
            self._status_text = text
            self._status.update(text)
        self.sub_title = f"{open_q} question{'s' * (open_q != 1)}" if open_q else ""

    # -- selection ---------------------------------------------------------------------------

    @on(TaskList.RowHighlighted)
    async def _row_highlighted(self) -> None:
        await self._show_selected()

    async def _show_selected(self) -> None:
        task_id = self._list.selected_id
        if task_id == self._selected:
            return
        self._selected = task_id
        await self._output.show_task(task_id)
        self._dag.select(task_id)
        self._update_right_title()
        if self._tabs.active == "changes-tab":
            await self._changes.show(task_id)

    def _update_right_title(self) -> None:
        # The pane's top border is drawn: the selected task, and whether output is paused.
        rec = self._list.records.get(self._selected or "")
        title = rec.name if rec else ""
        if not self._output.follow:  # first, so a narrow pane cuts the name, not the hint
            title = f"{PAUSED_LABEL} · {title}" if title else PAUSED_LABEL
        # Last, with the task's result, so a glance at a finished task says what it produced
        # (`tui ls --json` has it whole); a narrow pane cuts it first.
        # A task running again still holds its last attempt's result: not this run's.
        ended = rec is not None and rec.state not in UNDER_WAY
        result = result_line(rec) if rec and ended else ""
        if (
            rec is not None and ended and rec.summary
        ):  # what its dependents got instead of the result
            sizes = json.loads(rec.summary)
            result += f" · summary {sizes['size_before']}→{sizes['size_after']} chars"
        self._right.border_title = f"{title} · {result}" if result else title

    @on(DagView.Selected)
    async def _dag_selected(self, message: DagView.Selected) -> None:
        self._list.select_id(message.task_id)
        await self._show_selected()

    # -- answers -----------------------------------------------------------------------------

    @on(QuestionPanel.Answered)
    async def _answered(self, message: QuestionPanel.Answered) -> None:
        await self._call(
            self.engine.answer(message.question_id, message.answer), message.question_id
        )

    @on(QuestionPanel.Accepted)
    async def _accepted(self, message: QuestionPanel.Accepted) -> None:
        await self._call(self.engine.accept(message.task_id), message.question_id)

    @on(QuestionPanel.Rejected)
    async def _rejected(self, message: QuestionPanel.Rejected) -> None:
        await self._call(self.engine.reject(message.task_id, message.comment), message.question_id)


# Re-exported so tests and the CLI need one import.
__all__ = ["Binding", "TuiApp"]
