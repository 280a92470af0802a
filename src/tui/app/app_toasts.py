"""How the app tells a person what happened: toasts (at most MAX_TOASTS at once, the least
important dropped first), the bell and a desktop notification (OSC, tui.app.notify) when a task
waits for an answer or tasks end. A part of ``TuiApp``, which sets what it uses."""

from __future__ import annotations

from typing import Any

from textual.app import App
from textual.notifications import Notify

from tui.app.engine_api import AppEngine
from tui.app.notify import OscMode, osc_sequence
from tui.app.state_style import style_for
from tui.app.widgets.task_list import TaskList
from tui.model.states import FAILED_GROUP, State

MAX_TOASTS = 2  # more at once (a burst at start) would cover the output pane


class AppToasts(App[None]):
    """The notifications of ``TuiApp`` (mixed in)."""

    # Set up by TuiApp (__init__ and on_mount).
    engine: AppEngine
    _list: TaskList
    _osc: OscMode
    _toasts: bool
    _finished: list[str]  # tasks ended since the last batch, told together

    def _desktop(self, title: str, body: str) -> None:
        seq = osc_sequence(self._osc, title, body)
        driver = self._driver
        if seq and driver is not None and not self.is_headless:
            driver.write(seq)

    def notify(self, message: str, *args: Any, **kwargs: Any) -> None:
        if self._toasts or kwargs.get("severity") == "error":
            super().notify(message, *args, **kwargs)

    def on_notify(self, event: Notify) -> None:
        # Runs before Textual's own handler (the subclass's comes first) adds the toast.
        self._make_room()

    def _make_room(self) -> None:
        """Leave room for one more toast among MAX_TOASTS: the oldest that is not a warning
        or an error goes first, then the oldest. (The list, the status line and the title
        still say what a dropped one said.)"""
        # Textual keeps no public handle on shown notifications; these two are its own.
        shown = list(self._notifications)
        while len(shown) >= MAX_TOASTS:
            info = [n for n in shown if n.severity == "information"]
            old = (info or shown)[0]
            shown.remove(old)
            self._unnotify(old, refresh=False)

    async def _tell_question(self, task_id: str, kind: str) -> None:
        rec = await self.engine.get(task_id)
        name = rec.name if rec else task_id[:8]
        what = {"approval": "needs an approval", "review": "is ready for review"}.get(
            kind, "has a question"
        )
        self.notify(f"{name} {what}", title="Waiting for you", timeout=6)
        self.bell()
        self._desktop("tui", f"{name} {what}")

    async def _tell_finished(self) -> None:
        ids, self._finished = self._finished, []
        records = await self.engine.get_many(ids)
        failed = [r for r in records if r.state in FAILED_GROUP and r.settled]
        done = [r for r in records if r.state == State.COMPLETED]
        if failed:
            names = ", ".join(r.name for r in failed[:3]) + (" …" if len(failed) > 3 else "")
            self.notify(
                f"{names}: {style_for(failed[0].state).label}",
                title="Failed",
                severity="error",
                timeout=6,
            )
            self.bell()
            self._desktop("tui", f"failed: {names}")
        if done:
            text = done[0].name if len(done) == 1 else f"{len(done)} tasks"
            self.notify(f"{text} done", timeout=3)
            if all(r.settled for r in self._list.records.values()):
                self._desktop("tui", "all tasks finished")
