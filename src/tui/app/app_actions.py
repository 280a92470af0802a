"""What the app's keys do: one handler per entry in ``actions.COMMANDS`` (opening a file and
running a template: ``app_submit``, its base), and the prompts they open. ``TuiApp``
(``tui_app``) builds the screen and follows the engine; it sets the widgets and the engine
these handlers use before any key arrives."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any

from textual.app import SystemCommand
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import RichLog, TabbedContent

from tui.app import actions
from tui.app.agent_talk import cannot_talk
from tui.app.app_submit import AppSubmit
from tui.app.engine_api import AppEngine
from tui.app.help_screen import HelpScreen, pretty_key
from tui.app.prompts import Confirm, TextPrompt
from tui.app.task_query import SORTS, FilterError, TaskFilter
from tui.app.widgets.changes_view import ChangesView
from tui.app.widgets.dag_view import DagView
from tui.app.widgets.log_view import LogView
from tui.app.widgets.question_panel import QuestionPanel
from tui.app.widgets.task_list import TaskList
from tui.engine import api
from tui.engine.scheduler import Engine, EngineError
from tui.model.states import State, being

FOLD_ACTIONS = frozenset(
    {"toggle_subtasks", "expand_subtasks", "collapse_subtasks", "fold_all", "unfold_all"}
)
# States whose task has a process (or one waiting on a person) that `c` would kill.
LIVE_STATES = frozenset({State.RUNNING, State.READY, State.BLOCKED})


class AppActions(AppSubmit):
    """The action handlers of ``TuiApp`` (its base class)."""

    # Set up by TuiApp (__init__ and on_mount).
    engine: AppEngine
    _list: TaskList
    _output: LogView
    _dag: DagView
    _panel: QuestionPanel
    _tabs: TabbedContent
    _changes: ChangesView
    _selected: str | None
    _confirm_cancel: bool
    _questions_dirty: bool  # _graph_dirty and _template: AppSubmit's

    async def _call(self, coro: Any, question_id: str | None = None) -> bool:
        try:
            reply = await coro
        except EngineError as e:
            self.notify(str(e), severity="error", timeout=6)
            if question_id is not None:
                self._panel.reopen(question_id)
            return False
        if reply:
            self.notify(str(reply), timeout=3)
        self._questions_dirty = True
        return True

    # -- actions (one per entry in actions.COMMANDS) -----------------------------------------

    def _selected_or_warn(self) -> str | None:
        task_id = self._list.selected_id
        if task_id is None:
            self.notify("select a task first", severity="warning")
        return task_id

    async def action_approve_task(self) -> None:
        if task_id := self._selected_or_warn():
            await self._call(self.engine.approve(task_id))

    def action_cancel_task(self) -> None:
        task_id = self._selected_or_warn()
        rec = self._list.records.get(task_id or "")
        if task_id is None:
            return
        if not self._confirm_cancel or rec is None or rec.state not in LIVE_STATES:
            self._cancel(task_id)
            return
        # A live process dies with its work: ask first ([settings] confirm_cancel = false skips).
        self.push_screen(
            Confirm(f"Cancel {rec.name}? Its running process is killed."),
            lambda yes: self._cancel(task_id) if yes else None,
        )

    def _cancel(self, task_id: str) -> None:
        self.run_worker(self._call(self.engine.cancel(task_id)), group="commands")

    async def action_retry_task(self) -> None:
        if task_id := self._selected_or_warn():
            await self._call(self.engine.retry(task_id))

    async def action_accept_task(self) -> None:
        if task_id := self._selected_or_warn():
            await self._call(self.engine.accept(task_id))

    async def action_reject_task(self) -> None:
        if task_id := self._selected_or_warn():
            # Said before the comment is asked for, not after it was typed in vain.
            if not any(q.kind == "review" for q in await self.engine.questions(task_id)):
                rec = self._list.records.get(task_id)
                what = f"{rec.name} {being(rec.state)}" if rec else "the selected task is"
                self.notify(f"{what} and not waiting for a review", severity="warning")
                return

            async def reject(comment: str) -> None:
                await self._call(self.engine.reject(task_id, comment))

            self._ask_text("Reject: why? (the agent gets this comment)", reject)

    def action_answer(self) -> None:
        self._tabs.active = "questions-tab"
        # None open: the tab says so, and the keys stay where they were (an empty panel
        # would take them and do nothing with j, G…).
        self._panel.focus_oldest()

    def action_filter(self) -> None:
        self._ask_text(
            "Filter the tasks (empty clears)",
            self._apply_filter,
            "text state:failed tag:ci",
            value=self._list.filter.query,  # the filter in force, to edit or type over
        )

    def _apply_filter(self, query: str) -> None:
        try:
            task_filter = TaskFilter.parse(query)
        except FilterError as e:
            self.notify(str(e), title="Filter", severity="error", timeout=8)
            return
        tasks = self._list
        tasks.filter = task_filter
        tasks.rebuild()

    def action_search_log(self) -> None:
        if self.focused is self._list:
            self.action_filter()
            return
        self._tabs.active = "output-tab"
        self._ask_text("Search the output", self._search_output)

    def _search_output(self, term: str) -> None:
        if term:
            self._output.focus()
            self._output.action_search(term)

    def action_cycle_sort(self) -> None:
        tasks = self._list
        keys = list(SORTS)
        tasks.sort_key = keys[(keys.index(tasks.sort_key) + 1) % len(keys)]
        tasks.rebuild()
        self.notify(f"sorted by {tasks.sort_key}", timeout=2)

    # Folding subtasks: one fold state, kept by the list, which the DAG draws too.

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in FOLD_ACTIONS:  # in the footer only once some task has subtasks
            return bool(getattr(self, "_list", None) and self._list.task_tree.any_folds)
        return True

    def action_toggle_subtasks(self) -> None:
        in_dag = self.focused is self._dag
        task_id = self._dag.selected if in_dag else self._list.selected_id
        if task_id is not None and self._list.fold(
            task_id, task_id not in self._list.task_tree.collapsed
        ):
            self._graph_dirty = True

    def action_expand_subtasks(self) -> None:
        if self.focused is self._list:  # elsewhere the arrows move or scroll
            self._list.expand_or_child()
            self._graph_dirty = True

    def action_collapse_subtasks(self) -> None:
        if self.focused is self._list:
            self._list.collapse_or_parent()
            self._graph_dirty = True

    def action_fold_all(self) -> None:
        self._list.fold_all(True)
        self._graph_dirty = True

    def action_unfold_all(self) -> None:
        self._list.fold_all(False)
        self._graph_dirty = True

    def action_toggle_follow(self) -> None:
        log = self._output
        log.follow = not log.follow

    def action_toggle_wrap(self) -> None:
        log = self._output
        log.wrap = not log.wrap

    def action_zoom(self) -> None:
        self.screen.toggle_class("zoomed")
        if self.screen.has_class("zoomed"):
            self._tabs.active = "output-tab"
            self._output.focus()

    def action_show_output(self) -> None:
        self._tabs.active = "output-tab"
        self._output.focus()

    def action_show_dag(self) -> None:
        self._tabs.active = "dag-tab"
        self._dag.focus()

    def action_show_questions(self) -> None:
        self.action_answer()

    # -- worktrees (the Changes tab) -------------------------------------------------------

    async def _worktree_of(self, task_id: str) -> api.WorktreeReply:
        return await self._send(api.GetWorktree(task_id=task_id, diff=True, color=False))

    async def _send(self, message: api.Message[Any]) -> Any:
        if isinstance(self.engine, Engine):
            return await self.engine.handle(message)
        return await self.engine.send(message)

    def action_show_changes(self) -> None:
        self._tabs.active = "changes-tab"
        self._changes.query_one("#changes-diff").focus()

    async def action_merge_task(self) -> None:
        if task_id := self._selected_or_warn():
            await self._call(self._done(api.Merge(task_id=task_id)))
            await self._changes.show(self._selected)

    def action_discard_task(self) -> None:
        task_id = self._selected_or_warn()
        rec = self._list.records.get(task_id or "")
        if task_id is None or rec is None:
            return

        async def discard() -> None:
            await self._call(self._done(api.Discard(task_id=task_id)))
            await self._changes.show(self._selected)

        def answered(yes: bool | None) -> None:
            if yes:
                self.run_worker(discard(), group="commands")

        self.push_screen(
            Confirm(f"Discard {rec.name}'s work? Its worktree and branch are deleted."), answered
        )

    def action_message_task(self) -> None:
        task_id = self._selected_or_warn()
        rec = self._list.records.get(task_id or "")
        if task_id is None or rec is None:
            return
        running = rec.state in (State.RUNNING, State.READY)
        verb = "Message" if running else "Continue"
        # Said before the message is asked for, not after it was typed in vain.
        if refusal := cannot_talk(rec, running):
            self.notify(refusal, severity="warning", timeout=6)
            return

        async def send(text: str) -> None:
            if not text:
                return
            message: api.Message[Any] = (
                api.Send(task_id=task_id, text=text)
                if running
                else api.Continue(task_id=task_id, text=text)
            )
            await self._call(self._done(message))

        self._ask_text(f"{verb} {rec.name}: what to tell the agent (Esc leaves)", send)

    async def _done(self, message: api.Message[Any]) -> str:
        return str((await self._send(message)).text)

    async def action_copy_worktree_path(self) -> None:
        task_id = self._selected_or_warn()
        if task_id is None:
            return
        try:
            reply = await self._send(api.GetWorktree(task_id=task_id))
        except EngineError as e:
            self.notify(str(e), severity="warning", timeout=6)
            return
        self.copy_to_clipboard(reply.path)  # OSC 52: reaches the local clipboard over SSH too
        self.notify(f"copied {reply.path}", timeout=4)

    def action_focus_left(self) -> None:
        self._list.focus()

    def action_focus_right(self) -> None:
        active = self._tabs.active
        panes: dict[str, type[Widget]] = {
            "output-tab": LogView,
            "dag-tab": DagView,
            "changes-tab": RichLog,
        }
        target = panes.get(active)
        if target is not None:
            self.query_one(target).focus()
        else:
            self._panel.focus()

    def action_pick_theme(self) -> None:
        self.search_themes()

    async def action_quit(self) -> None:
        unfinished = sum(not r.settled for r in self._list.records.values())
        if unfinished and getattr(self.engine, "detached", False):
            # Say so on the way out: nothing stops, and it is not obvious that nothing does.
            what = "task goes" if unfinished == 1 else "tasks go"
            self.exit(
                message=f"tui: {unfinished} unfinished {what} on in the daemon; `tui` shows"
                " them again, `tui daemon stop` stops them"
            )
            return
        self.exit()

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.active_bindings_for_help()))

    def active_bindings_for_help(self) -> list[tuple[str, str, str, str]]:
        """(keys, title, help, id) for every command, with the user's remapped keys."""
        keymap = self._keymap
        return [(keymap.get(c.id, c.key), c.title, c.help, c.id) for c in actions.COMMANDS]

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        for key, title, text, command_id in self.active_bindings_for_help():
            action = getattr(self, f"action_{command_id}")
            yield SystemCommand(f"{title}  ({pretty_key(key)})", text, action)
        # Textual's own Theme, Quit and Keys entries would sit beside ours: keep its others.
        ours = {"Theme", "Quit", "Keys"}
        yield from (c for c in super().get_system_commands(screen) if c.title not in ours)

    # -- prompts (filter, search, open, reject comment): modal, so they keep the keyboard --

    def _ask_text(
        self,
        title: str,
        then: Callable[[str], object],  # may return an awaitable
        placeholder: str = "",
        *,
        paths: bool = False,
        value: str = "",
    ) -> None:
        """Ask for one line of text (opening with ``value``); ``then`` gets it (stripped)
        unless the user pressed Esc."""

        async def answer(value: str) -> None:
            result = then(value)
            if inspect.isawaitable(result):
                await result

        def done(value: str | None) -> None:
            # Once the prompt is gone: a toast raised on it would vanish with it.
            if value is not None:
                self.call_after_refresh(answer, value)

        self.push_screen(TextPrompt(title, placeholder, paths=paths, value=value), done)

    def key_escape(self) -> None:
        if self.screen.has_class("zoomed"):
            self.screen.remove_class("zoomed")
