"""QuestionPanel: every open question, approval and review across tasks, newest first.

Each one is a card (see ``question_cards``) that answers from the keyboard:

* question — ↑/↓ (j/k) move over the options of the current sub-question, ←/→ or Tab/shift+Tab
  change sub-question, 1–9 pick option n, Space toggles (several choices) or picks (one),
  "Other" opens an Input for free text, Enter sends once every sub-question has an answer
  (otherwise it goes to the first one without).
* approval — ``y`` allow, ``n`` deny (an Input for the message; Enter sends), ``a`` allow for
  the rest of the task, ``e`` shows the whole detail.
* review — ``y`` accept, ``n`` reject (an Input for the comment, which is required).

Escape in an Input closes it. ↑/↓ past the first or last option (or on a card without
options) move to the previous or next card.

The app feeds the panel with ``set_questions`` whenever the open questions change; cards that
stay keep what the person has chosen so far. The panel posts ``Answered`` (questions and
approvals), ``Accepted`` and ``Rejected`` (reviews), then moves focus to the next open card.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Input, Static

from tui.app.widgets.question_cards import QuestionCard, make_card
from tui.store.records import QuestionRecord

EMPTY_TEXT = "No open questions"


@dataclass
class QuestionItem:
    question: QuestionRecord
    task_name: str


class QuestionPanel(VerticalScroll):
    """The open questions of every task, one focusable card each, newest first."""

    DEFAULT_CSS = """
    QuestionPanel {
        height: 1fr;
    }
    QuestionPanel > .qp-empty {
        color: $foreground-muted;
        text-style: italic;
        padding: 1 2;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "move(-1)", "Prev card", show=False),
        Binding("down,j", "move(1)", "Next card", show=False),
    ]

    class Answered(Message):
        """A question or an approval was answered; ``answer`` is what the engine expects."""

        def __init__(self, question_id: str, answer: dict[str, Any]) -> None:
            super().__init__()
            self.question_id = question_id
            self.answer = answer

    class Accepted(Message):
        """A review was accepted."""

        def __init__(self, task_id: str, question_id: str) -> None:
            super().__init__()
            self.task_id = task_id
            self.question_id = question_id

    class Rejected(Message):
        """A review was rejected with a (non-empty) comment."""

        def __init__(self, task_id: str, question_id: str, comment: str) -> None:
            super().__init__()
            self.task_id = task_id
            self.question_id = question_id
            self.comment = comment

    def __init__(
        self,
        items: Sequence[QuestionItem] = (),
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._cards: dict[str, QuestionCard] = {}  # question id → card, in display order
        self._pending: list[QuestionItem] | None = list(items)
        self._empty = Static(Text(EMPTY_TEXT), classes="qp-empty")

    def compose(self) -> ComposeResult:
        yield self._empty

    def on_mount(self) -> None:
        pending, self._pending = self._pending, None
        self.set_questions(pending or [])

    # -- public API ----------------------------------------------------------------------

    @property
    def count(self) -> int:
        """How many questions the panel shows."""
        return len(self._cards) if self._pending is None else len(self._pending)

    @property
    def cards(self) -> list[QuestionCard]:
        """The cards, in display order (newest first)."""
        return list(self._cards.values())

    def card(self, question_id: str) -> QuestionCard | None:
        return self._cards.get(question_id)

    def set_questions(self, items: Sequence[QuestionItem]) -> None:
        """Show exactly ``items``: add new cards, drop gone ones, keep the rest as they are."""
        if self._pending is not None or not self.is_attached:
            self._pending = list(items)
            return
        wanted = sorted(items, key=lambda it: (-it.question.created_at, it.question.id))
        wanted_ids = {it.question.id for it in wanted}
        gone = [card for qid, card in self._cards.items() if qid not in wanted_ids]

        focused = self.screen.focused if self.screen is not None else None
        focus_lost = any(focused is c or (focused and c in focused.ancestors) for c in gone)
        old_order = list(self._cards)

        new_cards: dict[str, QuestionCard] = {}
        anchor: Widget = self._empty
        for item in wanted:
            card = self._cards.get(item.question.id)
            if card is None:
                card = make_card(item.question, item.task_name)
                self.mount(card, after=anchor)
            else:
                card.set_task_name(item.task_name)
                if self._position(card) != self._position(anchor) + 1:
                    self.move_child(card, after=anchor)
            new_cards[item.question.id] = card
            anchor = card
        self._cards = new_cards

        if focus_lost:
            self._refocus_after(gone, old_order)
        for card in gone:
            card.remove()
        self._empty.display = not new_cards
        self.can_focus = not new_cards

    def reopen(self, question_id: str) -> None:
        """Let a card that has sent take keys again (when its answer did not go through)."""
        card = self._cards.get(question_id)
        if card is not None:
            card.reopen()

    def focus(self, scroll_visible: bool = True) -> QuestionPanel:
        """Focus the first open card (or the panel itself when there is none)."""
        open_cards = [c for c in self._cards.values() if not c.sent]
        if open_cards:
            open_cards[0].focus(scroll_visible)
            return self
        return super().focus(scroll_visible)

    def focus_oldest(self) -> bool:
        """Focus the open card that has waited longest (the last shown; `a` jumps there).
        False, focusing nothing, when there is none."""
        open_cards = [c for c in self._cards.values() if not c.sent]
        if open_cards:
            open_cards[-1].focus()
        return bool(open_cards)

    # -- internals -----------------------------------------------------------------------

    def _position(self, widget: Widget) -> int:
        children = [c for c in self.children if not getattr(c, "_pruning", False)]
        try:
            return children.index(widget)
        except ValueError:
            return -1

    def _refocus_after(self, gone: list[QuestionCard], old_order: list[str]) -> None:
        """Focus was in a card about to go: move it to the open card that took its place."""
        gone_ids = {c.question_id for c in gone}
        focused = self.screen.focused
        focused_id = next(
            (
                c.question_id
                for c in gone
                if focused is not None and (focused is c or c in focused.ancestors)
            ),
            None,
        )
        if focused_id is None:
            return
        index = old_order.index(focused_id)
        after = [q for q in old_order[index + 1 :] if q not in gone_ids]
        before = [q for q in reversed(old_order[:index]) if q not in gone_ids]
        survivors = [self._cards[q] for q in [*after, *before] if q in self._cards]
        candidates = [c for c in survivors if not c.sent] or list(self._cards.values())
        if candidates:
            candidates[0].focus()
        else:
            self.can_focus = True
            super().focus()

    def _neighbour(self, card: QuestionCard, step: int) -> QuestionCard | None:
        """The next open card after ``card`` in direction ``step`` (not wrapping)."""
        order = list(self._cards.values())
        if card not in order:
            return None
        i = order.index(card) + step
        while 0 <= i < len(order):
            if not order[i].sent:
                return order[i]
            i += step
        return None

    def _focused_card(self) -> QuestionCard | None:
        node = self.screen.focused
        while node is not None and node is not self:
            if isinstance(node, QuestionCard):
                return node
            node = node.parent  # type: ignore[assignment]
        return None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Arrows inside a card's Input stay there.
        return not (action == "move" and isinstance(self.screen.focused, Input))

    def action_move(self, step: int) -> None:
        card = self._focused_card()
        if card is None:
            # Nothing focused inside: scroll, at once, so each key of a burst (a held j)
            # moves from where the last one left the view.
            self.scroll_relative(y=step, animate=False, immediate=True)
            return
        target = self._neighbour(card, step)
        if target is not None:
            target.focus()

    def on_question_card_done(self, event: QuestionCard.Done) -> None:
        event.stop()
        card = event.card
        q = card.question
        message: Message
        if event.outcome == "accept":
            message = self.Accepted(q.task_id, q.id)
        elif event.outcome == "reject":
            message = self.Rejected(q.task_id, q.id, event.comment)
        else:
            message = self.Answered(q.id, event.answer or {})
        target = self._neighbour(card, 1) or self._neighbour(card, -1)
        if target is not None:
            target.focus()
        self.post_message(message)
