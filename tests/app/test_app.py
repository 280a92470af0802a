"""The app as a person uses it: keys in, what the screen and the engine show out."""

from __future__ import annotations

import dataclasses
import json
from functools import partial
from pathlib import Path

import pytest
from textual.widgets import Input, TabbedContent

from tests.app.app_support import screen_text, until, visible_text
from tests.conftest import shell_task, stored
from tui.app.prompts import Confirm, TextPrompt
from tui.app.tui_app import TuiApp
from tui.app.widgets.log_view import LogView
from tui.app.widgets.question_panel import QuestionPanel
from tui.app.widgets.task_list import TaskList
from tui.engine.scheduler import Engine
from tui.model.states import UNSUCCESSFUL, State, being, label
from tui.store.db import Store

SIZE = (120, 40)


def make_app(engine: Engine) -> TuiApp:
    return TuiApp(engine, osc="off", remember_theme=False, toasts=False)


async def state_of(engine: Engine, task_id: str) -> State:
    rec = await engine.get(task_id)
    assert rec is not None
    return rec.state


async def test_selecting_a_task_shows_its_output(engine: Engine) -> None:
    a = shell_task("alpha", "echo hello from alpha")
    b = shell_task("beta", "echo hello from beta; echo oops >&2")
    await engine.submit([a, b])
    await engine.wait_settled([a.id, b.id])
    async with make_app(engine).run_test(size=SIZE) as pilot:
        log = pilot.app.query_one(LogView)
        await until(pilot, lambda: "hello from alpha" in visible_text(log), "alpha's output")
        await pilot.press("j")
        await until(pilot, lambda: "hello from beta" in visible_text(log), "beta's output")
        assert "hello from alpha" not in visible_text(log)
        assert "oops" in visible_text(log)


async def test_live_output_follows_a_running_task(engine: Engine, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    t = shell_task("ticker", f"echo first; while [ ! -e {gate} ]; do sleep 0.05; done; echo last")
    await engine.submit([t])
    async with make_app(engine).run_test(size=SIZE) as pilot:
        log = pilot.app.query_one(LogView)
        await until(pilot, lambda: "first" in visible_text(log), "the first line")
        gate.touch()
        await until(pilot, lambda: "last" in visible_text(log), "the live line")


async def test_answering_a_question_from_the_keyboard(engine: Engine) -> None:
    t = shell_task(
        "pick-db", 'echo "using $(tui ask "Which database?" --option SQLite --option PostgreSQL)"'
    )
    await engine.submit([t])
    async with make_app(engine).run_test(size=SIZE) as pilot:
        panel = pilot.app.query_one(QuestionPanel)
        await until(pilot, lambda: panel.count == 1, "the question to appear")
        assert "Questions (1)" in str(
            pilot.app.query_one("#tabs", TabbedContent).get_tab("questions-tab").label
        )
        await pilot.press("a", "2", "enter")
        await engine.wait_settled([t.id])
        assert await state_of(engine, t.id) == State.COMPLETED
        await until(pilot, lambda: panel.count == 0, "the question to go away")
    lines = [ln.text for ln in await engine.store.read_output(t.id)]
    assert lines == ["using PostgreSQL"]


async def test_cancel_and_retry_from_the_keyboard(engine: Engine) -> None:
    t = shell_task("long", "echo started; sleep 300")
    await engine.submit([t])
    async with make_app(engine).run_test(size=SIZE) as pilot:
        log = pilot.app.query_one(LogView)
        await until(pilot, lambda: "started" in visible_text(log), "the task to start")
        await pilot.press("c")  # a running task: asks first
        await until(pilot, lambda: isinstance(pilot.app.screen, Confirm), "the y/N question")
        assert "Cancel long?" in screen_text(pilot.app)
        await pilot.press("n")
        await until(pilot, lambda: not isinstance(pilot.app.screen, Confirm), "the answer")
        assert await state_of(engine, t.id) == State.RUNNING
        await pilot.press("c", "y")
        await engine.wait_settled([t.id])
        assert await state_of(engine, t.id) == State.CANCELLED
        await pilot.press("r")
        await until(
            pilot,
            lambda: pilot.app.query_one(TaskList).records[t.id].attempts == 2,
            "the second attempt",
        )
        await until(
            pilot, lambda: pilot.app.query_one(TaskList).records[t.id].state == State.RUNNING, "run"
        )
        await pilot.press("c", "y")
        await engine.wait_settled([t.id])
    rec = await engine.get(t.id)
    assert rec is not None and rec.state == State.CANCELLED and rec.attempts == 2


def test_a_state_reads_in_a_sentence() -> None:
    """ "slow-migration is timed out: nothing to cancel", "ask is needs you" were the words
    dropped into "X is STATE" sentences."""
    assert being(State.TIMED_OUT) == "timed out" and being(State.READY) == "needs you"
    assert being(State.COMPLETED) == "is done" and being(State.CANCELLED) == "is cancelled"


async def test_messages_name_states_as_the_list_does(engine: Engine) -> None:
    """The list says "done"; the toast said "hello completed" and `c` on it said "hello is
    COMPLETED: nothing to cancel"."""
    t = shell_task("hello", "true")
    app = TuiApp(engine, osc="off", remember_theme=False, toasts=True)
    async with app.run_test(size=SIZE) as pilot:
        await engine.submit([t])
        await engine.wait_settled([t.id])

        def told() -> list[str]:
            return [str(n.message) for n in app._notifications]

        await until(pilot, lambda: "hello done" in told(), "the done toast")
        await pilot.press("c")
        await until(pilot, lambda: any("nothing to cancel" in m for m in told()), "the refusal")
        assert "hello is done: nothing to cancel" in told()
        assert not any("COMPLETED" in m for m in told()), told()


async def test_cancel_without_asking_when_the_config_says_so(
    engine: Engine, tmp_path: Path
) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.toml").write_text("[settings]\nconfirm_cancel = false\n")
    t = shell_task("long", "echo started; sleep 300")
    await engine.submit([t])
    async with make_app(engine).run_test(size=SIZE) as pilot:
        log = pilot.app.query_one(LogView)
        await until(pilot, lambda: "started" in visible_text(log), "the task to start")
        await pilot.press("c")
        await engine.wait_settled([t.id])
        assert await state_of(engine, t.id) == State.CANCELLED


async def test_the_open_prompt_keeps_the_keyboard(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "cleanup.yaml").write_text(
        "tasks:\n  - name: from-file\n    agent: {type: shell, instructions: echo hi}\n"
    )
    monkeypatch.chdir(tmp_path)
    t = shell_task("long", "echo started; sleep 300")
    await engine.submit([t])
    app = make_app(engine)
    async with app.run_test(size=SIZE) as pilot:
        log = app.query_one(LogView)
        await until(pilot, lambda: "started" in visible_text(log), "the task to start")
        await pilot.press("o")
        await until(pilot, lambda: isinstance(app.screen, TextPrompt), "the prompt")
        await pilot.press(*"jo", "tab")  # completes the folder, focus stays in the prompt
        await pilot.press("tab", "c", "s")  # one match: the file; then typed letters
        await pilot.pause()
        prompt = app.screen.query_one("#prompt", Input)
        assert prompt.value == "jobs/cleanup.yamlcs"
        assert await state_of(engine, t.id) == State.RUNNING  # `c` did not cancel
        await pilot.press("backspace", "backspace", "enter")
        await until(pilot, lambda: len(app._list.records) == 2, "the file's task")
        await pilot.press("o", *"nothing")
        await until(pilot, lambda: isinstance(app.screen, TextPrompt), "the prompt again")
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, TextPrompt), "Esc to leave")
        assert len(app._list.records) == 2


async def test_approve_from_the_keyboard(store: Store) -> None:
    engine = Engine(store, auto_approve=False)
    await engine.start()
    try:
        t = shell_task("gated", "echo ran")
        await engine.submit([t])
        async with make_app(engine).run_test(size=SIZE) as pilot:
            assert await state_of(engine, t.id) == State.PENDING
            await pilot.press("p")
            await engine.wait_settled([t.id])
            assert await state_of(engine, t.id) == State.COMPLETED
    finally:
        await engine.stop()


async def test_filter_by_state_and_text(engine: Engine) -> None:
    tasks = [
        shell_task("good-1", "true"),
        shell_task("good-2", "true"),
        shell_task("bad-1", "exit 1"),
    ]
    await engine.submit(tasks)
    await engine.wait_settled(t.id for t in tasks)
    async with make_app(engine).run_test(size=SIZE) as pilot:
        table = pilot.app.query_one(TaskList)
        assert table.row_count == 3
        await pilot.press("colon", *"state:failed", "enter")
        await until(pilot, lambda: table.row_count == 1, "the filter")
        assert table.selected_id == tasks[2].id
        await pilot.press("colon", *"good-2", "enter")
        await until(
            pilot,
            lambda: table.row_count == 1 and table.selected_id == tasks[1].id,
            "the text filter",
        )
        await pilot.press("colon", "backspace", "enter")  # the filter shown, selected: gone
        await until(pilot, lambda: table.row_count == 3, "the filter to clear")


async def test_search_follow_and_wrap_in_the_output(engine: Engine) -> None:
    t = shell_task("numbers", 'for i in $(seq 1 2000); do echo "line $i"; done')
    await engine.submit([t])
    await engine.wait_settled([t.id])
    async with make_app(engine).run_test(size=SIZE) as pilot:
        log = pilot.app.query_one(LogView)
        await until(pilot, lambda: "line 2000" in visible_text(log), "the end of the log")
        await pilot.press("l", "slash", *"line 1234", "enter")
        await until(pilot, lambda: "line 1234" in visible_text(log), "the search hit")
        assert "line 2000" not in visible_text(log)
        assert log.follow is False  # searching up the log pauses following
        await pilot.press("f")
        await until(pilot, lambda: "line 2000" in visible_text(log), "follow to resume")
        wrap_before = log.wrap
        await pilot.press("w")
        assert log.wrap is not wrap_before


async def test_theme_switch_from_the_palette_is_remembered(engine: Engine, tmp_path: Path) -> None:
    app = TuiApp(engine, osc="off", remember_theme=True, toasts=False)
    async with app.run_test(size=SIZE) as pilot:
        assert app.theme == "tui-dark"
        await pilot.press("t")
        await pilot.press(*"tui-light")
        await pilot.press("enter")
        await until(pilot, lambda: app.theme == "tui-light", "the theme to change")
    saved = json.loads((tmp_path / "state" / "ui.json").read_text())
    assert saved["theme"] == "tui-light"
    app2 = TuiApp(engine, osc="off", remember_theme=True, toasts=False)
    async with app2.run_test(size=SIZE):
        assert app2.theme == "tui-light"


def test_help_names_every_state_retry_takes() -> None:
    """Help said r retries "failed or cancelled" tasks; it takes timed-out, over-budget and
    skipped ones too (the engine's refusal names them)."""
    from tui.app.actions import COMMANDS

    (retry,) = [c for c in COMMANDS if c.id == "retry_task"]
    for state in (*UNSUCCESSFUL, State.SKIPPED):
        assert label(state).replace(" ", "-") in retry.help, state


async def test_help_lists_every_command(engine: Engine) -> None:
    from tui.app.actions import COMMANDS

    async with make_app(engine).run_test(size=(120, 80)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        text = screen_text(pilot.app.screen)
        for c in COMMANDS:
            assert c.title in text, c.title
        await pilot.press("escape")
        assert not pilot.app.screen.query("HelpScreen")


async def test_dag_selection_follows_the_task_list(engine: Engine) -> None:
    from tui.app.widgets.dag_view import DagView

    a = shell_task("root", "true")
    b = shell_task("leaf", "true", depends_on=[a.id])
    await engine.submit([a, b])
    await engine.wait_settled([a.id, b.id])
    async with make_app(engine).run_test(size=SIZE) as pilot:
        dag = pilot.app.query_one(DagView)
        await pilot.press("2")
        await until(pilot, lambda: "leaf" in dag.render_text(), "the graph")
        assert dag.selected == a.id
        await pilot.press("down")
        await until(
            pilot,
            lambda: pilot.app.query_one(TaskList).selected_id == b.id,
            "the list to follow the graph",
        )


async def test_keys_remapped_in_the_config(engine: Engine, tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.mkdir()
    (config / "config.toml").write_text(
        '[settings.keys]\ncancel_task = "K"\ncancle = "x"\n', encoding="utf-8"
    )
    t = shell_task("long", "echo started; sleep 300")
    await engine.submit([t])
    app = TuiApp(engine, osc="off", remember_theme=False, toasts=True)
    async with app.run_test(size=SIZE) as pilot:
        log = pilot.app.query_one(LogView)
        await until(pilot, lambda: "started" in visible_text(log), "the task to start")
        await pilot.press("c")  # the old key does nothing now
        await pilot.pause()
        assert await state_of(engine, t.id) == State.RUNNING
        await pilot.press("K", "y")
        await engine.wait_settled([t.id])
        assert await state_of(engine, t.id) == State.CANCELLED
        notes = [n.message for n in app._notifications]
        assert any("did you mean 'cancel_task'" in m for m in notes)


# -- config.toml templates and settings ----------------------------------------------------

CONFIG = """
[agents.echo]
type = "shell"
script = 'printf "%s\\n" "$TUI_PROMPT"'

[tasks.greet]
alias = "hi"
description = "Say hello"
agent = "echo"
prompt = "Hello, {instructions}!"

[tasks.other]
agent = "echo"
prompt = "other"
"""


@pytest.fixture
def config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The config dir the autouse fixture set, created; the project is tmp_path."""
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "config"
    config.mkdir()
    return config


async def test_run_template_from_the_palette(engine: Engine, config_dir: Path) -> None:
    (config_dir / "config.toml").write_text(CONFIG, encoding="utf-8")
    app = TuiApp(engine, osc="off", remember_theme=False, toasts=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("T")
        await until(pilot, lambda: "Say hello" in screen_text(app), "the template list")
        await pilot.press(*"greet", "enter")
        await until(pilot, lambda: isinstance(app.screen, TextPrompt), "the prompt")
        await pilot.press(*"world $(x) 'q'", "enter")
        await until(pilot, lambda: bool(app._list.records), "the task in the list")
        (rec,) = app._list.records.values()
        await engine.wait_settled([rec.id])
        assert (await stored(engine, rec.id)).state == State.COMPLETED
        log = app.query_one(LogView)
        await until(
            pilot, lambda: "Hello, world $(x) 'q'!" in visible_text(log), "the task's output"
        )


async def test_a_broken_config_is_reported_not_raised(engine: Engine, config_dir: Path) -> None:
    (config_dir / "config.toml").write_text('[tasks.x]\nprompt = "{nope}"\n')
    app = TuiApp(engine, osc="off", remember_theme=False, toasts=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("T")
        await until(
            pilot,
            lambda: any("unknown placeholder {nope}" in n.message for n in app._notifications),
            "the problem to be shown",
        )
        assert not app._list.records


async def test_settings_theme_is_the_default_theme(engine: Engine, config_dir: Path) -> None:
    (config_dir / "config.toml").write_text('[settings]\ntheme = "tui-light"\n')
    app = TuiApp(engine, osc="off", remember_theme=False, toasts=True)
    async with app.run_test(size=SIZE) as pilot:
        # Settled first: leaving mid-mount races the batch timer against teardown.
        await until(pilot, lambda: "0 tasks" in screen_text(app), "the app to be up")
        assert app.theme == "tui-light"


async def test_task_list_scrolls_selects_with_keys_and_mouse_and_sorts(store: Store) -> None:
    engine = Engine(store, auto_approve=False)  # tasks stay PENDING: no processes needed
    await engine.start()
    try:
        tasks = [
            shell_task(f"t-{i:03d}", "true", priority="high" if i == 42 else "normal")
            for i in range(150)
        ]
        await engine.submit(tasks)
        async with make_app(engine).run_test(size=SIZE) as pilot:
            table = pilot.app.query_one(TaskList)
            assert table.row_count == 150
            assert "t-000" in visible_text(table) and "t-149" not in visible_text(table)
            await pilot.press("G")
            await until(pilot, lambda: table.selected_id == tasks[-1].id, "the last row")
            assert "t-149" in visible_text(table) and "t-000" not in visible_text(table)
            await pilot.click(TaskList, offset=(20, 4))  # a top border, then the header
            (clicked,) = [w for w in visible_text(table).splitlines()[3].split() if "t-" in w]
            await until(
                pilot,
                lambda: table.records[table.selected_id or ""].name == clicked,
                "the clicked row to be selected",
            )
            await pilot.press("g", "s", "s", "s")  # submitted → state → name → priority
            await until(pilot, lambda: table.sort_key == "priority", "the priority sort")
            assert "t-042" in visible_text(table).splitlines()[1]
    finally:
        await engine.stop()


@pytest.mark.parametrize(
    ("term", "colorterm", "chosen", "expected"),
    [
        ("xterm", None, None, "high-contrast"),  # 16 colours (COLORTERM not forwarded)
        ("xterm-256color", None, None, "tui-dark"),
        ("xterm", "truecolor", None, "tui-dark"),
        ("xterm", None, "tui-light", "tui-light"),  # the user's own choice is kept
    ],
)
async def test_theme_fits_the_terminal_colours(
    engine: Engine,
    monkeypatch: pytest.MonkeyPatch,
    term: str,
    colorterm: str | None,
    chosen: str | None,
    expected: str,
) -> None:
    import textual.constants

    from tui.app.ui_state import load_ui_state, save_ui_state

    monkeypatch.setattr(textual.constants, "COLOR_SYSTEM", "auto")  # as when not overridden
    monkeypatch.setenv("TERM", term)
    if colorterm:
        monkeypatch.setenv("COLORTERM", colorterm)
    else:
        monkeypatch.delenv("COLORTERM", raising=False)
    if chosen:
        save_ui_state(theme=chosen)
    app = TuiApp(engine, osc="off", remember_theme=True, toasts=False, fit_terminal_colors=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.theme == expected
        assert app.current_theme.name == expected
    assert load_ui_state()["theme"] == chosen  # an automatic pick is not remembered as a choice


# -- keys that say what they do ------------------------------------------------------------


async def test_h_goes_back_to_the_task_list_from_output_and_dag(engine: Engine) -> None:
    from tui.app.widgets.dag_view import DagView

    a = shell_task("root", "echo hi")
    await engine.submit([a])
    await engine.wait_settled([a.id])
    app = make_app(engine)
    async with app.run_test(size=SIZE) as pilot:
        task_list = app.query_one(TaskList)
        await pilot.press("l")
        assert app.focused is app.query_one(LogView)
        await pilot.press("h")
        assert app.focused is task_list
        await pilot.press("2")
        await until(pilot, lambda: app.focused is app.query_one(DagView), "the DAG")
        await pilot.press("h")  # no box to the left of the only one
        assert app.focused is task_list


async def test_help_scrolls_with_j_k_and_shows_every_description_whole(engine: Engine) -> None:
    import re

    from textual.containers import VerticalScroll

    from tui.app.actions import COMMANDS

    def squash(text: str) -> str:
        return re.sub(r"[\s│]+", "", text)  # lines wrapped inside the box, joined

    async with make_app(engine).run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        body = pilot.app.screen.query_one("#help-body", VerticalScroll)
        assert body.max_scroll_y > 0  # more keys than lines at 80×24
        seen = ""
        while True:
            seen += squash(screen_text(pilot.app))
            if body.scroll_y >= body.max_scroll_y:
                break
            before = body.scroll_y
            await pilot.press("j")
            await pilot.pause()
            assert body.scroll_y == before + 1
        for c in COMMANDS:
            assert squash(c.help) in seen, c.help
        await pilot.press("k")
        await pilot.pause()
        assert body.scroll_y == body.max_scroll_y - 1


async def test_palette_shows_keys_and_one_theme_entry(engine: Engine) -> None:
    async with make_app(engine).run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+p", *"theme")
        await until(pilot, lambda: "Switch theme" in screen_text(pilot.app), "the palette")
        await pilot.pause(0.3)
        text = screen_text(pilot.app)
        assert "Switch theme…  (t)" in text
        assert "Change the current theme" not in text  # Textual's own, merged into ours


async def test_slash_filters_the_list_and_the_footer_says_so(engine: Engine) -> None:
    tasks = [shell_task("alpha", "true"), shell_task("beta", "true")]
    await engine.submit(tasks)
    await engine.wait_settled(t.id for t in tasks)
    async with make_app(engine).run_test(size=(80, 24)) as pilot:
        footer = screen_text(pilot.app).splitlines()[-1]
        for shown in ("/ Find", "? Help", "q Quit"):
            assert shown in footer, footer
        await pilot.press("slash", *"beta", "enter")
        table = pilot.app.query_one(TaskList)
        await until(pilot, lambda: table.row_count == 1, "the filter")
        assert table.selected_id == tasks[1].id


async def test_the_filter_prompt_opens_with_the_filter_in_force(engine: Engine) -> None:
    """`/` opened an empty prompt over a filtered list: changing the filter meant typing it
    all again. It opens with the filter, selected: typing replaces it, End keeps it to edit."""
    tasks = [shell_task("alpha", "true"), shell_task("beta", "true"), shell_task("beta-2", "true")]
    await engine.submit(tasks)
    await engine.wait_settled(t.id for t in tasks)
    async with make_app(engine).run_test(size=(80, 24)) as pilot:
        table = pilot.app.query_one(TaskList)
        await until(pilot, lambda: table.row_count == 3, "the tasks")
        await pilot.press("slash", *"beta", "enter")
        await until(pilot, lambda: table.row_count == 2, "the filter")
        await pilot.press("slash")
        prompt = pilot.app.screen.query_one("#prompt", Input)
        assert prompt.value == "beta" and prompt.selected_text == "beta"
        await pilot.press("end", *"-2", "enter")  # edited, not typed again
        await until(pilot, lambda: table.row_count == 1, "the edited filter")
        await pilot.press("colon")
        await until(pilot, lambda: bool(pilot.app.screen.query("#prompt")), "the prompt")
        await pilot.press(*"alpha", "enter")  # typed over
        await until(pilot, lambda: table.row_count == 1 and table.selected_id == tasks[0].id, "a")


# -- indicators that tell the truth --------------------------------------------------------


async def test_filter_words_match_the_screen(engine: Engine) -> None:
    tasks = [
        shell_task("good", "true"),
        shell_task("bad", "exit 1"),
        shell_task("slow", "sleep 30", timeout="0.2s"),
        shell_task("stopped", "sleep 300"),
    ]
    await engine.submit(tasks)
    await engine.cancel(tasks[3].id)
    await engine.wait_settled(t.id for t in tasks)
    app = TuiApp(engine, osc="off", remember_theme=False, toasts=True)
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(TaskList)

        async def filter_by(query: str) -> set[str]:
            await pilot.press("colon", *query, "enter")
            await until(pilot, lambda: not isinstance(app.screen, TextPrompt), "the filter")
            await pilot.pause()
            return {table.records[table._shown[i]].name for i in range(table.row_count)}

        assert await filter_by("state:done") == {"good"}
        assert await filter_by("state:failed") == {"bad", "slow"}  # not the cancelled one
        assert "Tasks 2/4 · state:failed" in screen_text(app)
        assert await filter_by("state:cancelled") == {"stopped"}
        assert await filter_by("state:timed-out") == {"slow"}
        await filter_by("state:nope")
        assert any("no state 'nope'" in n.message for n in app._notifications)
        assert table.filter.query == "state:timed-out"  # the bad filter changed nothing
        assert await filter_by("zzz") == set()
        assert "no task matches" in screen_text(app)
        await pilot.press("s")
        assert "Tasks 0/4 · zzz · by state" in screen_text(app)


async def test_status_counts_cancelled_apart_from_failed(engine: Engine) -> None:
    tasks = [shell_task("bad", "exit 1"), shell_task("stopped", "sleep 300")]
    await engine.submit(tasks)
    await engine.cancel(tasks[1].id)
    await engine.wait_settled(t.id for t in tasks)
    async with make_app(engine).run_test(size=SIZE) as pilot:
        await pilot.pause()
        status = str(pilot.app.query_one("#status").render())
        assert "1 failed" in status and "1 cancelled" in status, status


async def test_a_retried_task_shows_no_result_of_the_attempt_before(engine: Engine) -> None:
    """Cancelled, then retried with `r`: while the new attempt ran, the pane's title still
    said "result: …" of the cancelled one."""
    t = shell_task("fixtures", 'echo "fixture $TUI_ATTEMPT"; sleep 300')
    await engine.submit([t])
    async with make_app(engine).run_test(size=(120, 40)) as pilot:
        right = pilot.app.query_one("#right")
        await until(pilot, lambda: "fixture 1" in visible_text(pilot.app.query_one(LogView)), "1")
        await engine.cancel(t.id)
        await engine.wait_settled([t.id])
        rec = await engine.get(t.id)
        assert rec is not None and rec.result  # what the cancelled attempt left
        await until(pilot, lambda: "result: fixture 1" in str(right.border_title), "its result")
        await pilot.press("r")
        await until(pilot, lambda: "fixture 2" in visible_text(pilot.app.query_one(LogView)), "2")
        await pilot.pause()
        assert "result" not in str(right.border_title), right.border_title
        await engine.cancel(t.id)


@pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=["120x40", "80x24"])
async def test_paused_output_says_so(engine: Engine, size: tuple[int, int]) -> None:
    """At 80 columns too: after the task's name the hint was cut ("paused — G to fo…")."""
    t = shell_task("numbers-of-the-batch", 'for i in $(seq 1 500); do echo "line $i"; done')
    await engine.submit([t])
    await engine.wait_settled([t.id])
    async with make_app(engine).run_test(size=size) as pilot:
        log = pilot.app.query_one(LogView)
        await until(pilot, lambda: "line 500" in visible_text(log), "the end of the log")
        assert "paused" not in screen_text(pilot.app)
        await pilot.press("l", "k", "k")
        await until(pilot, lambda: "paused — G to follow" in screen_text(pilot.app), "paused")
        await pilot.press("G")
        await until(pilot, lambda: "paused" not in screen_text(pilot.app), "following again")


async def test_a_task_waiting_for_approval_says_so(store: Store) -> None:
    engine = Engine(store, auto_approve=False)
    await engine.start()
    try:
        await engine.submit([shell_task("gated", "echo ran")])
        async with make_app(engine).run_test(size=SIZE) as pilot:
            await until(
                pilot,
                lambda: "waiting for approval — p" in screen_text(pilot.app),
                "the approval note",
            )
    finally:
        await engine.stop()


# -- the task list fits the terminal -------------------------------------------------------

HEADERS = {"NAME", "AGENT", "PRIO", "TIME", "TRY", "COST", "TAGS", "NOTE"}


@pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=["120x40", "80x24"])
async def test_the_task_list_fits_without_sideways_scrolling(
    store: Store, size: tuple[int, int]
) -> None:
    engine = Engine(store, auto_approve=False)
    await engine.start()
    try:
        first = shell_task("gated", "true", tags=["ci", "nightly"])
        long = "a-very-long-task-name-that-goes-on-and-on-forever"
        await engine.submit([first, shell_task(long, "true", depends_on=[first.id])])
        async with make_app(engine).run_test(size=size) as pilot:
            table = pilot.app.query_one(TaskList)
            await until(pilot, lambda: "waiting" in visible_text(table), "the notes")
            assert "COST" not in visible_text(table)  # no task has a cost: no room taken
            # The engine reports a cost (as an agent's run does): the column appears.
            table.upsert([dataclasses.replace(table.records[first.id], cost_usd=0.25)])
            if size[0] >= 120:
                await until(pilot, lambda: "$0.25" in visible_text(table), "the cost")
            assert table.virtual_size.width <= table.scrollable_content_region.width
            lines = visible_text(table).splitlines()
            header = set(lines[0].split())
            assert header <= HEADERS, header  # no header cut to a stray letter
            if size[0] >= 120:
                assert {"NOTE", "TRY", "COST"} <= header
                # The name column at its cap first; the note takes what is left, cut with "…".
                assert long[:27] + "…" in lines[2]
                assert "waiting for appr" in lines[1] and lines[1].rstrip().endswith("…")
                assert "waiting on " in lines[2]
            assert long not in lines[2] and "…" in lines[2]  # cut, not widening the column
            name_start = lines[0].index("NAME")
            assert lines[1][name_start:].startswith("gated ")
    finally:
        await engine.stop()


async def test_help_and_quit_stay_in_the_footer_at_80_columns(engine: Engine) -> None:
    t = shell_task("pick", 'tui ask "Which?" --option A --option B')
    await engine.submit([t])
    app = make_app(engine)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.query_one(QuestionPanel).count == 1, "the question")
        for keys in (("l",), ("a",)):  # the output pane, then the question card
            await pilot.press(*keys)
            await pilot.pause()
            footer = screen_text(app).splitlines()[-1]
            assert footer.lstrip().startswith("? Help q Quit"), footer


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_the_task_lists_keys_all_fit_in_the_footer(
    engine: Engine, size: tuple[int, int]
) -> None:
    parent = shell_task("parent", "true")
    child = shell_task("child", "true", parent_task_id=parent.id)
    await engine.submit([parent, child])
    app = make_app(engine)
    async with app.run_test(size=size) as pilot:
        await until(pilot, lambda: app._list.task_tree.any_folds, "the subtask")
        await pilot.pause()
        footer = screen_text(app).splitlines()[-1]
        labels = ["? Help", "q Quit", "a Answer", "p Approve", "c Cancel", "r Retry"]
        for label in [*labels, "/ Find", "space Fold", "^p palette"]:
            assert label in footer, footer


async def test_time_is_this_attempts_and_a_finished_runs_duration(
    engine: Engine, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    # The first attempt fails after 3 s; the retry (gate open) runs on.
    t = shell_task("flaky", f"[ -e {gate} ] || {{ sleep 3; exit 1; }}; echo again; sleep 300")
    await engine.submit([t])
    await engine.wait_settled([t.id])
    first = (await engine.store.runs(t.id))[0]
    stored = await engine.store.get_task(t.id)
    assert stored is not None and stored.run_started_at == first.started_at
    assert stored.run_ended_at == first.ended_at
    async with make_app(engine).run_test(size=SIZE) as pilot:
        table = pilot.app.query_one(TaskList)

        def time_cell() -> str:
            header, row = visible_text(table).splitlines()[:2]
            start = header.index("TIME")
            return (row[start:].split() or [""])[0] if row[start] != " " else ""

        await until(pilot, lambda: time_cell() != "", "the run's duration")
        assert int(time_cell().rstrip("s")) >= 3  # failed: how long the run took
        gate.touch()
        await pilot.press("r")
        await until(pilot, lambda: "again" in visible_text(pilot.app.query_one(LogView)), "retry")
        # Rows are refreshed in batches: the output can show before the record does.
        await until(pilot, lambda: table.records[t.id].attempts == 2, "the retry's record")
        assert int(time_cell().rstrip("s")) < 3  # this attempt's time, not since the first
        await pilot.press("c", "y")
        await engine.wait_settled([t.id])


async def test_opening_a_file_of_unfinished_tasks_again_asks_first(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As `tui open FILE` does: a second copy of tasks still running is submitted only on `y`.
    (tmp_path / "jobs.yaml").write_text(
        "tasks:\n  - name: waits\n    agent: {type: shell, instructions: echo up; sleep 300}\n"
    )
    monkeypatch.chdir(tmp_path)
    app = make_app(engine)
    async with app.run_test(size=SIZE) as pilot:

        async def open_file() -> None:
            await pilot.press("o", *"jobs.yaml", "enter")

        await open_file()
        await until(pilot, lambda: len(app._list.records) == 1, "the file's task")
        await open_file()
        await until(pilot, lambda: isinstance(app.screen, Confirm), "the question")
        question = str(app.screen.query_one("Static").render())
        assert "1 of these tasks are already in the database, unfinished: waits" in question
        await pilot.press("n")
        await until(pilot, lambda: not isinstance(app.screen, Confirm), "no")
        await pilot.pause()
        assert len(await engine.list_tasks()) == 1
        await open_file()
        await until(pilot, lambda: isinstance(app.screen, Confirm), "the question again")
        await pilot.press("y")
        await until(pilot, lambda: len(app._list.records) == 2, "the second copy, on yes")


async def test_a_jumps_to_the_oldest_open_question(engine: Engine) -> None:
    """The panel shows the newest first; `a` ("Jump to the oldest open question") went to it."""
    first = shell_task("asked-first", 'tui ask "Which database?" --option SQLite --option PG')
    then = shell_task("asked-then", 'tui ask "Which port?" --option 80 --option 8080')
    app = make_app(engine)
    async with app.run_test(size=SIZE) as pilot:
        panel = app.query_one(QuestionPanel)
        await engine.submit([first])
        await until(pilot, lambda: panel.count == 1, "the first question")
        await engine.submit([then])
        await until(pilot, lambda: panel.count == 2, "the second question")
        assert [c.question.task_id for c in panel.cards] == [then.id, first.id]  # newest first
        await pilot.press("a")
        await until(pilot, lambda: app.focused is not None, "a card focused")
        assert app.focused is panel.cards[1], app.focused
        await pilot.press("1", "enter")
        await engine.wait_settled([first.id])
        await until(pilot, lambda: panel.count == 1, "the first one answered")
        assert panel.cards[0].question.task_id == then.id


async def test_m_on_a_shell_task_says_why_before_asking_for_text(engine: Engine) -> None:
    """`m` opened the message prompt on a shell task; what was typed then came back refused."""
    done = shell_task("finished", "true")
    live = shell_task("ongoing", "echo started; sleep 300")
    await engine.submit([done, live])
    await engine.wait_settled([done.id])
    app = TuiApp(engine, osc="off", remember_theme=False)  # toasts on: the warning is one

    def toasts() -> list[str]:
        return [n.message for n in app._notifications]

    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: len(app._list.records) == 2, "the tasks")
        for task, said in ((done, "sessions continue"), (live, "tasks take messages")):
            app._list.select_id(task.id)
            await pilot.press("m")
            refused = partial(lambda s: any(s in t for t in toasts()), said)
            await until(pilot, refused, "the refusal")
            assert not isinstance(app.screen, TextPrompt)
            assert f"{task.name} is a shell task: only claude" in toasts()[-1]


async def test_answering_the_last_question_gives_the_keys_back_to_the_list(
    engine: Engine,
) -> None:
    """The empty panel kept the focus: j, G and the rest did nothing until h or Tab."""
    other = shell_task("other", "true")
    ask = shell_task("pick-db", 'tui ask "Which database?" --option SQLite --option PG')
    await engine.submit([other, ask])
    app = make_app(engine)
    async with app.run_test(size=SIZE) as pilot:
        panel = app.query_one(QuestionPanel)
        await until(pilot, lambda: panel.count == 1, "the question")
        app._list.select_id(other.id)
        await pilot.press("a", "1", "enter")
        await until(pilot, lambda: panel.count == 0, "the question answered")
        await until(pilot, lambda: isinstance(app.focused, TaskList), "the list focused")
        await pilot.press("j")
        assert app._list.selected_id == ask.id


async def test_the_status_line_says_a_question_waits_even_at_80_columns(
    engine: Engine, tmp_path: Path
) -> None:
    """Counts of every state and of two projects pushed "? 1 waiting for you (a)" past the
    right edge at 80 columns."""
    ask = shell_task("pick-db", 'tui ask "Which database?" --option SQLite --option PG')
    busy = shell_task("busy", "sleep 300")
    queued = shell_task("queued", "true", depends_on=[busy.id])
    broken = shell_task("broken", "exit 3")
    fine = shell_task("fine", "true")
    elsewhere = shell_task("elsewhere", "true")
    (tmp_path / "another-project").mkdir()
    elsewhere.agent.project_dir = str(tmp_path / "another-project")
    await engine.submit([ask, busy, queued, broken, fine, elsewhere])
    await engine.wait_settled([broken.id, fine.id, elsewhere.id])
    app = make_app(engine)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.query_one(QuestionPanel).count == 1, "the question")
        await until(pilot, lambda: "failed" in screen_text(app).splitlines()[-2], "the counts")
        status = screen_text(app).splitlines()[-2]
        assert "? 1 waiting for you (a)" in status, status


async def test_a_without_questions_shows_so_and_leaves_the_keys_to_the_list(
    engine: Engine,
) -> None:
    first, second = shell_task("first", "true"), shell_task("second", "true")
    await engine.submit([first, second])
    await engine.wait_settled([first.id, second.id])
    app = make_app(engine)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: len(app._list.records) == 2, "the tasks")
        await pilot.press("a")
        await until(pilot, lambda: "No open questions" in screen_text(app), "the empty panel")
        assert isinstance(app.focused, TaskList)
        await pilot.press("j")
        assert app._list.selected_id == second.id
