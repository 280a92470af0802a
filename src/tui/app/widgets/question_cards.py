"""The cards of the question panel: one per open question, approval or review.

A card is focusable and answers from the keyboard. When it has made up its mind it posts
``QuestionCard.Done`` (an internal message); the panel turns that into its public messages and
moves focus on. A card that has sent shows "sent" and ignores keys until the panel drops it.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Literal

from rich.console import RenderableType
from rich.text import Text
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Input, Static

from tui.app.widgets.question_text import (
    SubQuestion,
    approval_detail,
    detail_renderable,
    lexer_for,
    questions_from_payload,
)
from tui.store.records import QuestionRecord

Outcome = Literal["answer", "accept", "reject"]

# Actions that stay live while the card's Input has focus (everything else yields to it).
_INPUT_ACTIONS = frozenset({"close_input"})


class QuestionCard(Vertical, can_focus=True):
    """Base card: a bordered box titled with the task name and kind, an Input, a hint line."""

    DEFAULT_CSS = """
    QuestionCard {
        height: auto;
        border: round $foreground 30%;
        border-title-color: $foreground;
        border-subtitle-color: $foreground-muted;
        padding: 0 1;
    }
    QuestionCard:focus-within {
        border: heavy $accent;
        border-title-style: bold;
    }
    QuestionCard.-sent {
        opacity: 60%;
    }
    QuestionCard > .qc-detail {
        height: auto;
        max-height: 100%;
        border: round $foreground 20%;
        padding: 0 1;
    }
    QuestionCard > Input {
        display: none;
        margin: 0;
    }
    QuestionCard > Input.-open {
        display: block;
    }
    QuestionCard > .qc-hint {
        color: $foreground-muted;
    }
    QuestionCard > .qc-hint.-warn {
        color: $warning;
        text-style: bold;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close_input", "Close", show=False),
    ]

    class Done(Message):
        """The card decided: ``answer`` (with ``answer``), ``accept`` or ``reject``."""

        def __init__(
            self,
            card: QuestionCard,
            outcome: Outcome,
            answer: dict[str, Any] | None = None,
            comment: str = "",
        ) -> None:
            super().__init__()
            self.card = card
            self.outcome = outcome
            self.answer = answer
            self.comment = comment

    kind_label = "question"
    input_placeholder = ""

    def __init__(self, question: QuestionRecord, task_name: str) -> None:
        super().__init__()
        self.question = question
        self.task_name = task_name
        self.sent = False
        self._input_purpose: str | None = None
        self.border_subtitle = self.kind_label
        self._set_title()

    # -- shared pieces --------------------------------------------------------------------

    @property
    def question_id(self) -> str:
        return self.question.id

    def set_task_name(self, name: str) -> None:
        if name != self.task_name:
            self.task_name = name
            self._set_title()

    def _set_title(self) -> None:
        self.border_title = f"{self.task_name or self.question.task_id[:8]} · {self.kind_label}"

    def compose_body(self) -> ComposeResult:
        yield from ()

    def compose(self) -> ComposeResult:
        yield from self.compose_body()
        yield Input(placeholder=self.input_placeholder, compact=True)
        yield Static(self.hint_text(), classes="qc-hint")

    def hint_text(self) -> str:
        return ""

    @property
    def input(self) -> Input:
        return self.query_one(Input)

    @property
    def input_open(self) -> bool:
        return self._input_purpose is not None

    def show_hint(self, text: str | None = None, *, warn: bool = False) -> None:
        hint = self.query_one(".qc-hint", Static)
        hint.update(self.hint_text() if text is None else text)
        hint.set_class(warn, "-warn")

    def open_input(self, purpose: str, value: str = "", placeholder: str = "") -> None:
        self._input_purpose = purpose
        box = self.input
        box.value = value
        box.cursor_position = len(value)
        box.placeholder = placeholder or self.input_placeholder
        box.add_class("-open")
        box.focus()

    def action_close_input(self) -> None:
        if not self.input_open:
            raise SkipAction()
        self._close_input()

    def _close_input(self) -> None:
        self._input_purpose = None
        box = self.input
        box.remove_class("-open")
        self.show_hint()
        self.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self._input_purpose is None or self.sent:
            return
        self.input_submitted(self._input_purpose, event.value)

    def input_submitted(self, purpose: str, value: str) -> None:
        """Enter in the card's Input, for ``purpose`` (what ``open_input`` was given)."""

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if self.sent:
            return False
        if self.input_open and self.input.has_focus and action not in _INPUT_ACTIONS:
            return False
        return action != "close_input" or self.input_open

    def send(
        self, outcome: Outcome, answer: dict[str, Any] | None = None, comment: str = ""
    ) -> None:
        if self.sent:
            return
        self.sent = True
        self._input_purpose = None
        self.input.remove_class("-open")
        self.add_class("-sent")
        self.show_hint("sent — waiting for the engine…")
        self.refresh_bindings()
        self.post_message(self.Done(self, outcome, answer, comment))

    def reopen(self) -> None:
        """Take keys again after a send that did not go through."""
        self.sent = False
        self.remove_class("-sent")
        self.show_hint()
        self.refresh_bindings()

    def action_expand(self) -> None:
        raise SkipAction()


class ChoiceCard(QuestionCard):
    """A question with 1–4 sub-questions, each with numbered options and "Other"."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("left", "switch(-1)", "Prev question", show=False),
        Binding("right", "switch(1)", "Next question", show=False),
        Binding("shift+tab", "switch(-1, True)", "Prev question", show=False),
        Binding("tab", "switch(1, True)", "Next question", show=False),
        Binding("1", "number(1)", "Pick", key_display="1-9"),
        *[Binding(str(n), f"number({n})", f"Pick {n}", show=False) for n in range(2, 10)],
        # One of the two shows in the footer: what space does for the sub-question in focus.
        Binding("space", "toggle", "Toggle"),
        Binding("space", "pick", "Pick"),
        Binding("enter", "submit", "Send"),
    ]

    kind_label = "question"
    input_placeholder = "your answer (Enter to keep, Esc to cancel)"

    def __init__(self, question: QuestionRecord, task_name: str) -> None:
        super().__init__(question, task_name)
        self.subs: list[SubQuestion] = questions_from_payload(question.payload)
        self.current = 0

    def compose_body(self) -> ComposeResult:
        for i in range(len(self.subs)):
            yield Static(self._render_sub(i), classes="qc-sub")
        if not self.subs:
            yield Static(Text("(no questions in this payload)", style="dim italic"))

    def hint_text(self) -> str:
        move = "←/→ question · " if len(self.subs) > 1 else ""
        multi = bool(self.subs) and self.subs[self.current].multi
        space = "toggle" if multi else "pick"  # one choice: space picks
        return f"↑/↓ move · 1-9 pick · space {space} · {move}enter send"

    def _render_sub(self, index: int) -> RenderableType:
        return self.subs[index].render(
            current=index == self.current,
            number=index + 1 if len(self.subs) > 1 else None,
            show_cursor=True,
        )

    def _refresh_sub(self, index: int, *, reveal: bool = False) -> None:
        views = list(self.query(".qc-sub").results(Static))
        if index < len(views):
            views[index].update(self._render_sub(index))
            if reveal:
                views[index].scroll_visible(animate=False)

    def _refresh_all(self) -> None:
        for i in range(len(self.subs)):
            self._refresh_sub(i)

    def _go_to(self, index: int) -> None:
        old, self.current = self.current, index
        self._refresh_sub(old)
        self._refresh_sub(index, reveal=True)
        self.show_hint()
        self.refresh_bindings()  # space toggles or picks as this sub-question allows

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("toggle", "pick"):
            multi = bool(self.subs) and self.subs[self.current].multi
            if (action == "toggle") != multi:
                return False
        return super().check_action(action, parameters)

    # -- actions ----------------------------------------------------------------------

    def action_cursor(self, step: int) -> None:
        if not self.subs:
            raise SkipAction()
        sub = self.subs[self.current]
        target = sub.cursor + step
        if not 0 <= target < sub.entries:
            raise SkipAction()  # at an edge: let the panel move to the next card
        sub.cursor = target
        self._refresh_sub(self.current, reveal=True)

    def action_switch(self, step: int, tab: bool = False) -> None:
        target = self.current + step
        if not 0 <= target < len(self.subs):
            if tab:
                raise SkipAction()  # Tab past the last sub-question: ordinary focus move
            return
        self._go_to(target)

    def action_number(self, n: int) -> None:
        if not self.subs:
            return
        sub = self.subs[self.current]
        if not 1 <= n <= sub.entries:
            self.app.bell()
            return
        sub.cursor = n - 1
        self._choose(sub)

    # The space key's "toggle" action: Textual's own action_toggle(attribute) is not used here.
    def action_toggle(self) -> None:  # type: ignore[override]
        if self.subs:
            self._choose(self.subs[self.current])

    def action_pick(self) -> None:
        self.action_toggle()

    def _choose(self, sub: SubQuestion) -> None:
        self.show_hint()
        if sub.cursor == sub.other_index:
            if sub.multi and sub.other:
                sub.set_other("")  # a second press on a ticked "Other" unticks it
            else:
                self._refresh_sub(self.current)
                self.open_input("other", sub.other or "")
                return
        else:
            sub.pick(sub.cursor)
        self._refresh_sub(self.current, reveal=True)

    def action_submit(self) -> None:
        missing = [i for i, sub in enumerate(self.subs) if not sub.answered]
        if not missing:
            answers = {sub.text: sub.answer() for sub in self.subs}
            self.send("answer", {"answers": answers})
            return
        if missing[0] != self.current:
            self._go_to(missing[0])
        self.show_hint("pick an option first (1-9 or space; Other to type)", warn=True)

    def input_submitted(self, purpose: str, value: str) -> None:
        sub = self.subs[self.current]
        sub.set_other(value)
        self._refresh_sub(self.current)
        self._close_input()


class _DetailCard(QuestionCard):
    """A card whose body is a long text in a bordered box, cut to a few lines."""

    def __init__(self, question: QuestionRecord, task_name: str) -> None:
        super().__init__(question, task_name)
        self.expanded = False

    def detail_text(self) -> str:
        return ""

    def detail_lexer(self) -> str | None:
        return None

    def _detail(self) -> Any:
        dark = getattr(getattr(self.app, "current_theme", None), "dark", True)
        return detail_renderable(
            self.detail_text(), self.detail_lexer(), expanded=self.expanded, dark=dark
        )

    def on_mount(self) -> None:
        self.query_one(".qc-detail", Static).update(self._detail())

    def action_expand(self) -> None:
        self.expanded = not self.expanded
        self.query_one(".qc-detail", Static).update(self._detail())


class ApprovalCard(_DetailCard):
    """A tool call waiting for permission: allow, deny (with a message), or allow always."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "allow", "Allow"),
        Binding("n", "deny", "Deny"),
        Binding("a", "allow_always", "Allow for task"),
        Binding("e", "expand", "Expand", show=False),
    ]

    kind_label = "approval"
    input_placeholder = "why not? (Enter to deny, Esc to cancel)"

    @property
    def tool(self) -> str:
        return str(self.question.payload.get("tool", "") or "tool")

    def detail_text(self) -> str:
        return approval_detail(self.question.payload)

    def detail_lexer(self) -> str | None:
        return lexer_for(self.tool, self.detail_text())

    def compose_body(self) -> ComposeResult:
        head = Text()
        head.append(self.tool, style="bold")
        summary = str(self.question.payload.get("summary", "") or "")
        if summary:
            head.append(f": {summary}")
        yield Static(head, classes="qc-head")
        yield Static(classes="qc-detail")

    def hint_text(self) -> str:
        return "y allow · n deny · a allow for the rest of the task · e expand"

    def action_allow(self) -> None:
        self.send("answer", {"behavior": "allow"})

    def action_allow_always(self) -> None:
        self.send("answer", {"behavior": "allow_always"})

    def action_deny(self) -> None:
        self.open_input("deny")
        self.show_hint("Enter denies with this message · Esc cancels")

    def input_submitted(self, purpose: str, value: str) -> None:
        self.send("answer", {"behavior": "deny", "message": value.strip()})


class ReviewCard(_DetailCard):
    """A finished task's result waiting for a person: accept, or reject with a comment."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "accept", "Accept"),
        Binding("n", "reject", "Reject"),
        Binding("e", "expand", "Expand", show=False),
    ]

    kind_label = "review"
    input_placeholder = "what should change? (Enter to reject, Esc to cancel)"

    def detail_text(self) -> str:
        return str(self.question.payload.get("result", "") or "")

    def detail_lexer(self) -> str | None:
        return "markdown"

    def compose_body(self) -> ComposeResult:
        yield Static(Text("Result:", style="bold"), classes="qc-head")
        yield Static(classes="qc-detail")

    def hint_text(self) -> str:
        return "y accept · n reject (with a comment) · e expand"

    def action_accept(self) -> None:
        self.send("accept")

    def action_reject(self) -> None:
        self.open_input("reject")
        self.show_hint("Enter rejects with this comment · Esc cancels")

    def input_submitted(self, purpose: str, value: str) -> None:
        comment = value.strip()
        if not comment:
            self.show_hint("a comment is required to reject (Esc cancels)", warn=True)
            return
        self.send("reject", comment=comment)


class OtherCard(_DetailCard):
    """A kind this panel does not know: shown read-only so it is at least visible."""

    kind_label = "?"

    def __init__(self, question: QuestionRecord, task_name: str) -> None:
        self.kind_label = question.kind or "?"
        super().__init__(question, task_name)

    def detail_text(self) -> str:
        return json.dumps(self.question.payload, indent=2, ensure_ascii=False)

    def compose_body(self) -> ComposeResult:
        yield Static(classes="qc-detail")

    def hint_text(self) -> str:
        return "answer this one with `tui answer`"


def make_card(question: QuestionRecord, task_name: str) -> QuestionCard:
    cls: type[QuestionCard] = {
        "question": ChoiceCard,
        "approval": ApprovalCard,
        "review": ReviewCard,
    }.get(question.kind, OtherCard)
    return cls(question, task_name)
