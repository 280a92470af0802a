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

    def render(self, *, current: bool, number: int | None, show_cursor: bool) -> Text:
        """The header/question line and one line per option (and "Other")."""
        out = Text()
        out.append("▸ " if current else "  ", style="bold")
        if number is not None:
            out.append(f"Q{number} ", style="dim")
        if self.header:
            out.append(f"{self.header}: ", style="bold")
        out.append(self.text, style="bold" if current else "")
        if self.multi:
            out.append(" (choose any)", style="dim")
        if self.answered:
            out.append(" ✓")
        for i in range(self.entries):
            on_cursor = current and show_cursor and i == self.cursor
            chosen = bool(self.other) if i == self.other_index else i in self.picked
            mark = MARKS[self.multi][chosen]
            out.append("\n")
            out.append("  › " if on_cursor else "    ", style="bold")
            row_style = "bold" if on_cursor else ""
            out.append(f"{mark} {i + 1}. ", style=row_style)
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
        return out


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
