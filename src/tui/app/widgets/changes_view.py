"""ChangesView: what a worktree task changed — its branch, the files with +/− counts, and the
diff against its pinned base in colour. The diff is a RichLog: only the lines on screen are
drawn, PageUp/PageDown and j/k page it as the output pane pages its lines."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import RichLog, Static

from tui.engine import api
from tui.engine.errors import EngineError

MAX_DIFF_LINES = 20_000  # past this the view says to use `tui diff`
MAX_FILES_SHOWN = 12

Fetch = Callable[[str], Awaitable[api.WorktreeReply]]


def diff_line(line: str) -> Text:
    """One line of `git diff`, coloured as git colours it."""
    if line.startswith(("+++", "---", "diff --git", "index ")):
        return Text(line, style="bold")
    if line.startswith("+"):
        return Text(line, style="green")
    if line.startswith("-"):
        return Text(line, style="red")
    if line.startswith("@@"):
        return Text(line, style="cyan")
    return Text(line)


def summary(reply: api.WorktreeReply) -> Text:
    text = Text()
    base = reply.base_branch or reply.base_sha[:12]
    text.append(f"{reply.branch}", style="bold")
    text.append(f" from {base} · {reply.status}\n")
    if reply.status in ("merged", "discarded"):
        text.append(f"its worktree and branch were removed when it was {reply.status}")
        return text
    if not reply.files:
        text.append("no changes", style="italic")
        return text
    added = sum(a or 0 for _, a, _ in reply.files)
    removed = sum(r or 0 for _, _, r in reply.files)
    n = len(reply.files)
    text.append(f"{n} file{'s' * (n != 1)} changed, ")
    text.append(f"+{added}", style="green")
    text.append(" ")
    text.append(f"−{removed}", style="red")
    for path, a, r in reply.files[:MAX_FILES_SHOWN]:
        text.append("\n  ")
        if a is None:
            text.append("binary".rjust(11))
        else:
            text.append(f"+{a}".rjust(5), style="green")
            text.append(" ")
            text.append(f"−{r}".rjust(5), style="red")
        text.append(f"  {path}")
    if n > MAX_FILES_SHOWN:
        text.append(f"\n  … and {n - MAX_FILES_SHOWN} more")
    return text


class ChangesView(Vertical):
    """The selected task's worktree changes; ``show(task_id)`` (re)loads them."""

    DEFAULT_CSS = """
    ChangesView { height: 1fr; }
    ChangesView > #changes-summary {
        height: auto; max-height: 50%; padding: 0 1;
        border-bottom: hkey $panel-lighten-2;
    }
    ChangesView > #changes-diff { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "scroll('down')", "Down", show=False),
        Binding("k", "scroll('up')", "Up", show=False),
    ]

    def __init__(self, fetch: Fetch, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._fetch = fetch
        self.task_id: str | None = None
        self.path = ""  # the worktree shown, for copying

    def compose(self) -> ComposeResult:
        yield Static(id="changes-summary")
        # No auto_scroll: a diff opens at its top (the lines are laid out after `show` returns)
        yield RichLog(
            id="changes-diff", wrap=False, highlight=False, markup=False, auto_scroll=False
        )

    def action_scroll(self, where: str) -> None:
        log = self.query_one(RichLog)
        log.scroll_down() if where == "down" else log.scroll_up()

    async def show(self, task_id: str | None) -> None:
        self.task_id = task_id
        head = self.query_one("#changes-summary", Static)
        log = self.query_one(RichLog)
        log.clear()
        self.path = ""
        if task_id is None:
            head.update("No task selected")
            return
        try:
            reply = await self._fetch(task_id)
        except EngineError as e:
            head.update(Text(str(e), style="italic"))
            return
        self.path = reply.path
        head.update(summary(reply))
        lines = reply.diff.splitlines()
        for line in lines[:MAX_DIFF_LINES]:
            log.write(diff_line(line))
        if len(lines) > MAX_DIFF_LINES:
            log.write(Text(f"… {len(lines) - MAX_DIFF_LINES} more lines: `tui diff`", "italic"))
        log.scroll_home(animate=False)
