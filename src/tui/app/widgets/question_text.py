"""Pure pieces of the question panel: the choice state of a sub-question and how things read.

Nothing here touches Textual, so it is cheap to test and to reason about. Everything reads
without colour: marks are ``( )``/``(•)`` for one choice and ``[ ]``/``[x]`` for several, the
cursor row starts with ``›``, and colour (dim descriptions, bold cursor) only adds to that.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

DETAIL_LINES = 15  # lines of an approval's detail or a review's result shown before "… N more"
LINE_CHARS = 400  # a single line longer than this is cut (unless expanded)
OTHER_LABEL = "Other (type an answer)"
MARKS = {False: {False: "( )", True: "(•)"}, True: {False: "[ ]", True: "[x]"}}  # [multi][chosen]


@dataclass
class SubQuestion:
    """One entry of a question payload, plus what the person has chosen so far."""

    text: str
    header: str
    options: list[tuple[str, str]]  # (label, description)
    multi: bool
    cursor: int = 0  # over options, then the "Other" entry at index len(options)
    picked: set[int] = field(default_factory=set)
    other: str | None = None  # free text given through "Other"

    @staticmethod
    def from_payload(item: dict[str, Any]) -> SubQuestion:
        options = [
            (str(o.get("label", "")), str(o.get("description", "") or ""))
            for o in item.get("options", []) or []
            if isinstance(o, dict)
        ]
        return SubQuestion(
            text=str(item.get("question", "")),
            header=str(item.get("header", "") or ""),
            options=options,
            multi=bool(item.get("multiSelect")),
        )

    @property
    def other_index(self) -> int:
        return len(self.options)

    @property
    def entries(self) -> int:
        """Options plus the "Other" entry."""
        return len(self.options) + 1

    @property
    def answered(self) -> bool:
        return bool(self.picked) or bool(self.other)

    def pick(self, index: int) -> None:
        """Choose option ``index``: the only choice (single) or toggled in (multi)."""
        if self.multi:
            self.picked ^= {index}
        else:
            self.picked = {index}
            self.other = None

    def set_other(self, text: str) -> None:
        text = text.strip()
        self.other = text or None
        if text and not self.multi:
            self.picked = set()

    def answer(self) -> str | list[str]:
        labels = [self.options[i][0] for i in sorted(self.picked)]
        if self.multi:
            return [*labels, *([self.other] if self.other else [])]
        if self.other:
            return self.other
        return labels[0] if labels else ""

    def render(self, *, current: bool, number: int | None, show_cursor: bool) -> RenderableType:
        """The header/question line and one line per option (and "Other"). A line too long
        for the card wraps under its own text, not under the marks before it."""
        head = Text()
        if number is not None:
            head.append(f"Q{number} ", style="dim")
        if self.header:
            head.append(f"{self.header}: ", style="bold")
        head.append(self.text, style="bold" if current else "")
        if self.multi:
            head.append(" (choose any)", style="dim")
        if self.answered:
            head.append(" ✓")
        top = _hanging()
        top.add_row(Text("▸ " if current else "  ", style="bold"), head)
        rows = _hanging()
        for i in range(self.entries):
            on_cursor = current and show_cursor and i == self.cursor
            chosen = bool(self.other) if i == self.other_index else i in self.picked
            mark = MARKS[self.multi][chosen]
            row_style = "bold" if on_cursor else ""
            lead = Text("  › " if on_cursor else "    ", style="bold")
            lead.append(f"{mark} {i + 1}. ", style=row_style)
            out = Text()
            if i == self.other_index:
                if self.other:
                    out.append("Other: ", style=row_style)
                    out.append(self.other, style=row_style)
                else:
                    out.append(OTHER_LABEL, style=f"{row_style} italic".strip())
            else:
                label, description = self.options[i]
                out.append(label, style=row_style)
                if description:
                    out.append(f"  {description}", style="dim")
            rows.add_row(lead, out)
        return Group(top, rows)


def _hanging() -> Table:
    """Rows of (marks, text) whose text wraps under itself."""
    grid = Table.grid(expand=True)
    grid.add_column(no_wrap=True)
    grid.add_column(ratio=1)
    return grid


def questions_from_payload(payload: dict[str, Any]) -> list[SubQuestion]:
    items = payload.get("questions", []) if isinstance(payload, dict) else []
    return [SubQuestion.from_payload(item) for item in items if isinstance(item, dict)]


def truncate_lines(text: str, limit: int = DETAIL_LINES) -> tuple[str, int]:
    """The first ``limit`` lines of ``text`` (long lines cut) and how many lines were left out."""
    lines = text.splitlines()
    shown = [line if len(line) <= LINE_CHARS else line[:LINE_CHARS] + " …" for line in lines]
    if len(shown) <= limit:
        return "\n".join(shown), 0
    return "\n".join(shown[:limit]), len(lines) - limit


def looks_like_diff(text: str) -> bool:
    head = text.lstrip().splitlines()[:40]
    markers = sum(1 for line in head if line.startswith(("--- ", "+++ ", "@@", "diff --git")))
    return markers >= 2


def lexer_for(tool: str, text: str) -> str | None:
    """A cheap guess at how to highlight an approval's detail (None: plain text)."""
    if looks_like_diff(text):
        return "diff"
    if tool == "Bash":
        return "bash"
    if tool == "ExitPlanMode":
        return "markdown"
    return None


def approval_detail(payload: dict[str, Any]) -> str:
    """The full detail of an approval: the payload's ``detail``, else its tool input as JSON."""
    detail = payload.get("detail")
    if detail:
        return str(detail)
    tool_input = payload.get("input")
    if tool_input:
        if isinstance(tool_input, dict) and set(tool_input) == {"command"}:
            return str(tool_input["command"])
        return json.dumps(tool_input, indent=2, ensure_ascii=False)
    return ""


def detail_renderable(
    text: str, lexer: str | None, *, expanded: bool, dark: bool = True
) -> RenderableType:
    """``text`` highlighted (when ``lexer``) and cut to ``DETAIL_LINES`` unless ``expanded``."""
    if expanded:
        shown, more = text, 0
    else:
        shown, more = truncate_lines(text)
    body: RenderableType
    if lexer and shown:
        body = Syntax(
            shown,
            lexer,
            theme="ansi_dark" if dark else "ansi_light",
            background_color="default",
            word_wrap=True,
        )
    else:
        body = Text(shown or "(empty)", style="" if shown else "dim italic")
    if not more:
        return body
    return Group(body, Text(f"… {more} more lines (e to expand)", style="dim"))
