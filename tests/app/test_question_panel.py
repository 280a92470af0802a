"""QuestionPanel: answering questions, approvals and reviews from the keyboard."""

from __future__ import annotations

from typing import Any

from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Footer, Input

from tests.app.app_support import until
from tui.app.widgets.question_cards import ApprovalCard, ChoiceCard, QuestionCard, ReviewCard
from tui.app.widgets.question_panel import QuestionItem, QuestionPanel
from tui.app.widgets.question_text import SubQuestion, truncate_lines
from tui.store.records import QuestionRecord


def record(
    qid: str, kind: str, payload: dict[str, Any], created: float = 1.0, task: str = "t1"
) -> QuestionRecord:
    return QuestionRecord(qid, task, 1, kind, payload, "open", None, created, None)


def choice(text: str, labels: list[str], multi: bool = False, header: str = "") -> dict[str, Any]:
    return {
        "question": text,
        "header": header,
        "options": [{"label": lb, "description": f"about {lb}"} for lb in labels],
        "multiSelect": multi,
    }


def question(qid: str, *items: dict[str, Any], created: float = 1.0) -> QuestionItem:
    return QuestionItem(record(qid, "question", {"questions": list(items)}, created), "build")


def approval(
    qid: str, tool: str = "Bash", detail: str = "pytest -q", created: float = 1.0
) -> QuestionItem:
    payload = {"tool": tool, "input": {}, "summary": "run tests", "detail": detail}
    return QuestionItem(record(qid, "approval", payload, created, task="t2"), "deploy")


def review(qid: str, result: str = "All done.", created: float = 1.0) -> QuestionItem:
    return QuestionItem(record(qid, "review", {"result": result}, created, task="t3"), "docs")


class PanelApp(App[None]):
    def __init__(self, items: list[QuestionItem]) -> None:
        super().__init__()
        self.items = items
        self.messages: list[Message] = []

    def compose(self) -> ComposeResult:
        yield QuestionPanel(self.items)

    def on_mount(self) -> None:
        self.query_one(QuestionPanel).focus()

    def on_question_panel_answered(self, message: QuestionPanel.Answered) -> None:
        self.messages.append(message)

    def on_question_panel_accepted(self, message: QuestionPanel.Accepted) -> None:
        self.messages.append(message)

    def on_question_panel_rejected(self, message: QuestionPanel.Rejected) -> None:
        self.messages.append(message)

    @property
    def panel(self) -> QuestionPanel:
        return self.query_one(QuestionPanel)


def screen_text(app: App) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


def answers(app: PanelApp) -> list[tuple[str, dict[str, Any]]]:
    return [
        (m.question_id, m.answer) for m in app.messages if isinstance(m, QuestionPanel.Answered)
    ]


async def test_single_question_number_then_enter() -> None:
    app = PanelApp([question("q1", choice("Which db?", ["Postgres", "SQLite", "Redis"]))])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert isinstance(app.focused, ChoiceCard)
        await pilot.press("2", "enter")
        await pilot.pause()
    assert answers(app) == [("q1", {"answers": {"Which db?": "SQLite"}})]


async def test_question_renders_options_marks_and_other() -> None:
    app = PanelApp([question("q1", choice("Which db?", ["Postgres", "SQLite"], header="DB"))])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("2")
        await pilot.pause()
        text = screen_text(app)
    assert "build · question" in text
    assert "DB: Which db?" in text
    assert "( ) 1. Postgres  about Postgres" in text
    assert "(•) 2. SQLite" in text
    assert "( ) 3. Other (type an answer)" in text


async def test_enter_without_answer_does_not_send() -> None:
    app = PanelApp([question("q1", choice("Which db?", ["Postgres", "SQLite"]))])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert app.messages == []
        assert "pick an option first" in screen_text(app)
        await pilot.press("down", "space", "enter")
        await pilot.pause()
    assert answers(app) == [("q1", {"answers": {"Which db?": "SQLite"}})]


async def test_multiselect_space_on_two_options() -> None:
    app = PanelApp([question("q1", choice("Which checks?", ["lint", "types", "tests"], True))])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("space", "j", "j", "space")
        await pilot.pause()
        text = screen_text(app)
        assert "[x] 1. lint" in text
        assert "[ ] 2. types" in text
        assert "[x] 3. tests" in text
        await pilot.press("enter")
        await pilot.pause()
    assert answers(app) == [("q1", {"answers": {"Which checks?": ["lint", "tests"]}})]


async def test_multiselect_space_twice_untoggles() -> None:
    app = PanelApp([question("q1", choice("Which?", ["a", "b"], True))])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("space", "down", "space", "up", "space", "enter")
        await pilot.pause()
    assert answers(app) == [("q1", {"answers": {"Which?": ["b"]}})]


async def test_two_sub_questions_single_and_other_free_text() -> None:
    app = PanelApp(
        [
            question(
                "q1",
                choice("Which db?", ["Postgres", "SQLite"]),
                choice("Table name?", ["users", "accounts"]),
            )
        ]
    )
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("1", "enter")  # second sub-question unanswered: Enter goes there
        await pilot.pause()
        assert app.messages == []
        card = app.panel.cards[0]
        assert isinstance(card, ChoiceCard) and card.current == 1
        await pilot.press("3")  # "Other"
        await pilot.pause()
        assert isinstance(app.focused, Input)
        await pilot.press(*"people", "enter")
        await pilot.pause()
        assert app.focused is card  # Enter in the Input keeps the text, back on the card
        assert "Other: people" in screen_text(app)
        assert app.messages == []
        await pilot.press("enter")
        await pilot.pause()
    assert answers(app) == [("q1", {"answers": {"Which db?": "Postgres", "Table name?": "people"}})]


async def test_tab_and_arrows_change_sub_question() -> None:
    app = PanelApp([question("q1", choice("A?", ["a1", "a2"]), choice("B?", ["b1", "b2"]))])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        card = app.panel.cards[0]
        assert isinstance(card, ChoiceCard)
        await pilot.press("tab")
        assert card.current == 1
        await pilot.press("2", "shift+tab", "2", "right", "left")
        assert card.current == 0
        await pilot.press("enter")
        await pilot.pause()
    assert answers(app) == [("q1", {"answers": {"A?": "a2", "B?": "b2"}})]


async def test_escape_in_other_input_returns_to_card() -> None:
    app = PanelApp([question("q1", choice("Which db?", ["Postgres"]))])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        card = app.focused
        await pilot.press("2", *"xy")
        assert isinstance(app.focused, Input)
        await pilot.press("escape")
        await pilot.pause()
        assert app.focused is card
        assert not card.query_one(Input).display
        await pilot.press("enter")  # nothing chosen: Escape dropped the text
        await pilot.pause()
    assert app.messages == []


async def test_approval_allow() -> None:
    app = PanelApp([approval("a1")])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert "deploy · approval" in text
        assert "Bash: run tests" in text
        assert "pytest -q" in text
        assert "y allow" in text
        assert isinstance(app.focused, ApprovalCard)
        await pilot.press("y")
        await pilot.pause()
    assert answers(app) == [("a1", {"behavior": "allow"})]


async def test_approval_deny_with_message() -> None:
    app = PanelApp([approval("a1")])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.focused, Input)
        await pilot.press(*"not now", "enter")
        await pilot.pause()
    assert answers(app) == [("a1", {"behavior": "deny", "message": "not now"})]


async def test_approval_allow_always() -> None:
    app = PanelApp([approval("a1")])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("a")
        await pilot.pause()
    assert answers(app) == [("a1", {"behavior": "allow_always"})]


async def test_approval_escape_closes_deny_input() -> None:
    app = PanelApp([approval("a1")])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        card = app.focused
        await pilot.press("n", "escape")
        await pilot.pause()
        assert app.focused is card
        await pilot.press("y")
        await pilot.pause()
    assert answers(app) == [("a1", {"behavior": "allow"})]


async def test_approval_long_detail_truncated_and_expands() -> None:
    diff = "--- a/x.py\n+++ b/x.py\n@@ -1,30 +1,30 @@\n" + "\n".join(
        f"+line {i}" for i in range(30)
    )
    app = PanelApp([approval("a1", tool="Edit", detail=diff)])
    async with app.run_test(size=(80, 40)) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert "… 18 more lines" in text
        assert "+line 11" in text
        assert "+line 12" not in text
        await pilot.press("e")
        await pilot.pause()
        assert "+line 25" in screen_text(app)


async def test_review_accept() -> None:
    app = PanelApp([review("r1", "Refactored the loader.")])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert "docs · review" in text
        assert "Refactored the loader." in text
        assert isinstance(app.focused, ReviewCard)
        await pilot.press("y")
        await pilot.pause()
    [msg] = app.messages
    assert isinstance(msg, QuestionPanel.Accepted)
    assert (msg.task_id, msg.question_id) == ("t3", "r1")


async def test_review_reject_requires_comment() -> None:
    app = PanelApp([review("r1")])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("n", "enter")
        await pilot.pause()
        assert app.messages == []
        assert "a comment is required" in screen_text(app)
        assert isinstance(app.focused, Input)
        await pilot.press(*"add tests", "enter")
        await pilot.pause()
    [msg] = app.messages
    assert isinstance(msg, QuestionPanel.Rejected)
    assert (msg.task_id, msg.question_id, msg.comment) == ("t3", "r1", "add tests")


async def test_newest_first() -> None:
    app = PanelApp(
        [approval("old", created=1.0), review("new", created=3.0), approval("mid", created=2.0)]
    )
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert [c.question_id for c in app.panel.cards] == ["new", "mid", "old"]
        order = [c.question_id for c in app.panel.query(QuestionCard)]
        assert order == ["new", "mid", "old"]
        assert app.focused is app.panel.cards[0]
        assert app.panel.count == 3


async def test_reconcile_keeps_in_progress_selection() -> None:
    q = question("q1", choice("A?", ["a1", "a2"]), choice("B?", ["b1", "b2"]), created=1.0)
    app = PanelApp([q])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        card = app.panel.cards[0]
        await pilot.press("2", "right", "down")  # A? answered, cursor on b2
        app.panel.set_questions([approval("a9", created=5.0), q])
        await pilot.pause()
        assert app.panel.cards[1] is card
        assert [c.question_id for c in app.panel.query(QuestionCard)] == ["a9", "q1"]
        assert app.focused is card
        await pilot.press("space", "enter")
        await pilot.pause()
    assert answers(app) == [("q1", {"answers": {"A?": "a2", "B?": "b2"}})]


async def test_focus_moves_to_next_card_after_answer() -> None:
    app = PanelApp(
        [approval("a1", created=3.0), review("r1", created=2.0), approval("a2", created=1.0)]
    )
    async with app.run_test(size=(80, 40)) as pilot:
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
        panel = app.panel
        assert app.focused is panel.card("r1")
        # the app then drops the answered one; focus stays put
        panel.set_questions([review("r1", created=2.0), approval("a2", created=1.0)])
        await pilot.pause()
        assert app.focused is panel.card("r1")
        assert panel.count == 2
        await pilot.press("y")
        await pilot.pause()
        assert app.focused is panel.card("a2")
        await pilot.press("a")
        await pilot.pause()
    assert [type(m).__name__ for m in app.messages] == ["Answered", "Accepted", "Answered"]


async def test_removing_focused_card_focuses_neighbour() -> None:
    app = PanelApp([approval("a1", created=3.0), approval("a2", created=2.0)])
    async with app.run_test(size=(80, 40)) as pilot:
        await pilot.pause()
        panel = app.panel
        assert app.focused is panel.card("a1")
        panel.set_questions([approval("a2", created=2.0)])  # answered elsewhere (the CLI)
        await pilot.pause()
        assert app.focused is panel.card("a2")


async def test_arrows_at_edges_move_between_cards() -> None:
    app = PanelApp([question("q1", choice("A?", ["a1"]), created=2.0), approval("a1", created=1.0)])
    async with app.run_test(size=(80, 40)) as pilot:
        await pilot.pause()
        panel = app.panel
        await pilot.press("down")  # a1 → Other
        assert app.focused is panel.card("q1")
        await pilot.press("down")  # past the last entry: next card
        assert app.focused is panel.card("a1")
        await pilot.press("k")
        assert app.focused is panel.card("q1")


async def test_arrows_inside_an_input_stay_in_the_card() -> None:
    app = PanelApp([approval("a1", created=2.0), approval("a2", created=1.0)])
    async with app.run_test(size=(80, 40)) as pilot:
        await pilot.pause()
        await pilot.press("n", "down", "j")
        await pilot.pause()
        card = app.panel.card("a1")
        assert card is not None
        box = card.query_one(Input)
        assert app.focused is box
        assert box.value == "j"


def test_bindings_have_descriptions() -> None:
    for cls in (QuestionPanel, ChoiceCard, ApprovalCard, ReviewCard):
        for binding in cls.BINDINGS:
            assert isinstance(binding, Binding) and binding.description


async def test_empty_panel() -> None:
    app = PanelApp([])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "No open questions" in screen_text(app)
        assert app.panel.count == 0
        app.panel.set_questions([review("r1")])
        await pilot.pause()
        assert "No open questions" not in screen_text(app)
        app.panel.set_questions([])
        await pilot.pause()
        assert "No open questions" in screen_text(app)


async def test_sent_card_ignores_keys_until_dropped() -> None:
    app = PanelApp([approval("a1")])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("y", "y", "a")
        await pilot.pause()
        assert len(app.messages) == 1
        app.panel.reopen("a1")
        await pilot.press("a")
        await pilot.pause()
    assert answers(app) == [("a1", {"behavior": "allow"}), ("a1", {"behavior": "allow_always"})]


def test_sub_question_answers() -> None:
    sub = SubQuestion("Q?", "", [("a", ""), ("b", "")], multi=False)
    assert not sub.answered
    sub.pick(1)
    assert sub.answer() == "b"
    sub.set_other("free")
    assert (sub.answer(), sub.picked) == ("free", set())
    multi = SubQuestion("M?", "", [("a", ""), ("b", "")], multi=True)
    multi.pick(1)
    multi.pick(0)
    multi.set_other("c")
    assert multi.answer() == ["a", "b", "c"]


def test_truncate_lines() -> None:
    text = "\n".join(str(i) for i in range(20))
    shown, more = truncate_lines(text, 15)
    assert shown.splitlines()[-1] == "14"
    assert more == 5
    assert truncate_lines("a\nb", 15) == ("a\nb", 0)


async def test_a_burst_of_js_on_the_panel_itself_scrolls_a_line_per_key() -> None:
    """The last card answered leaves the focus on the panel; questions that arrive then are
    scrolled with j/k. Twelve keys in one read from the terminal scroll twelve lines (the
    scroll was deferred to the next refresh, so a burst moved one)."""
    app = PanelApp([approval("a0")])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        panel = app.panel
        panel.set_questions([])  # answered: the focus falls back to the panel
        await pilot.pause()
        assert app.focused is panel
        panel.set_questions([approval(f"a{i}", created=float(i)) for i in range(1, 15)])
        await until(pilot, lambda: panel.max_scroll_y > 20, "the cards laid out")
        assert app.focused is panel and panel.scroll_y == 0
        for _ in range(12):  # in one read from the terminal: no refresh between them
            app.post_message(events.Key("j", "j"))
        await until(pilot, lambda: panel.scroll_y >= 12, "twelve lines scrolled", rounds=50)
        assert panel.scroll_y == 12
        for _ in range(5):
            app.post_message(events.Key("k", "k"))
        await until(pilot, lambda: panel.scroll_y <= 7, "five lines back", rounds=50)
        assert panel.scroll_y == 7


async def test_the_hint_says_what_space_does() -> None:
    """A question of one choice said "space toggle"; space picks there (it toggles only where
    several choices are allowed)."""
    app = PanelApp(
        [
            question("one", choice("Which?", ["a", "b"]), created=2.0),
            question("many", choice("Which ones?", ["a", "b"], multi=True), created=1.0),
        ]
    )
    async with app.run_test(size=(80, 40)) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert "space pick" in text and "space toggle" in text
        one, many = app.panel.card("one"), app.panel.card("many")
        assert isinstance(one, ChoiceCard) and isinstance(many, ChoiceCard)
        assert "space pick" in one.hint_text() and "space toggle" in many.hint_text()


class FooterPanelApp(PanelApp):
    def compose(self) -> ComposeResult:
        yield QuestionPanel(self.items)
        yield Footer(compact=True)


async def test_the_footer_says_what_space_does_for_the_question_in_focus() -> None:
    """The footer said "space Toggle/pick" on every question: on one of a single choice
    space picks, and moving to a sub-question of several choices makes it toggle."""
    both = question(
        "q", choice("Which?", ["a", "b"]), choice("Which ones?", ["a", "b"], multi=True)
    )
    app = FooterPanelApp([both])
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        footer = screen_text(app).splitlines()[-1]
        assert "space Pick" in footer and "Toggle" not in footer, footer
        await pilot.press("right")  # the second sub-question: several choices
        await pilot.pause()
        footer = screen_text(app).splitlines()[-1]
        assert "space Toggle" in footer and "Pick " not in footer.replace("1-9 Pick", ""), footer
        await pilot.press("space", "down", "space")
        card = app.panel.card("q")
        assert isinstance(card, ChoiceCard) and card.subs[1].answered


async def test_a_long_option_wraps_under_its_own_text() -> None:
    """In the 36-cell right pane of 80×24, "3. Other (type an answer)" wrapped to "answer)"
    at the card's left edge, under the marks, where the next option's marks begin."""
    app = PanelApp([question("q", choice("Which database should the service use?", ["SQLite"]))])
    async with app.run_test(size=(36, 20)) as pilot:
        await pilot.pause()
        lines = screen_text(app).splitlines()
        (at,) = [i for i, line in enumerate(lines) if "Other (type" in line]
        assert "answer)" in lines[at + 1], lines
        assert lines[at + 1].index("answer)") == lines[at].index("Other"), lines
        (head,) = [i for i, line in enumerate(lines) if "Which database" in line]
        wrapped = lines[head + 1].strip("┃ ")
        assert "use?" in wrapped and lines[head + 1].index(wrapped) == lines[head].index("Which")
