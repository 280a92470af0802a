"""Workflows in the app: a task's result under the output pane, skipped tasks by name."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from tests.app.app_support import screen_text, until
from tests.conftest import owned_engine
from tui.app.tui_app import TuiApp
from tui.model.loader import load_task_text
from tui.store.db import Store

SIZE = (120, 40)


async def test_the_selected_tasks_result_shows_as_it_arrives(store: Store, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    tasks = load_task_text(
        f"""
tasks:
  - name: scan
    output_format: {{type: json}}
    agent:
      type: shell
      instructions: |
        while [ ! -e {gate} ]; do sleep 0.05; done
        echo '{{"files": ["a.py", "b.py"]}}'
  - name: never
    depends_on: [scan]
    when: len(needs.scan.result.files) > 5
    agent: {{type: shell, instructions: "true"}}
""",
        "wf.yaml",
    ).tasks
    async with owned_engine(store, kill_grace=1.0) as engine:
        await engine.submit(tasks)
        app = TuiApp(engine, osc="off", remember_theme=False, toasts=False)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: "▶" in screen_text(app), "scan running")
            assert "result:" not in screen_text(app)
            gate.touch()
            await until(
                pilot,
                lambda: 'scan · result: {"files": ["a.py", "b.py"]}' in screen_text(app),
                "scan's result above the output pane",
            )
            await until(pilot, lambda: "skipped" in screen_text(app), "never shown skipped")
            await engine.wait_settled([t.id for t in tasks])


async def test_a_summarised_tasks_sizes_show_with_its_result(store: Store) -> None:
    tasks = load_task_text(
        """
tasks:
  - name: build
    agent: {type: shell, instructions: "seq 1 30"}
  - name: report
    depends_on: [build]
    context: {transfer: summary}
    agent: {type: shell, instructions: 'cat "$TUI_CONTEXT_FILE"'}
""",
        "wf.yaml",
    ).tasks
    before = len("\n".join(str(i) for i in range(11, 31)))
    after = len("build completed: success")
    async with owned_engine(store, kill_grace=1.0) as engine:
        app = TuiApp(engine, osc="off", remember_theme=False, toasts=False)
        async with app.run_test(size=SIZE) as pilot:
            await engine.submit(tasks)
            await until(
                pilot,
                lambda: f"summary {before}→{after} chars" in screen_text(app),
                "build's summary sizes above the output pane",
            )
            await engine.wait_settled([t.id for t in tasks])


async def test_a_task_waiting_on_its_classifier_shows_as_classifying(
    store: Store, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    tasks = load_task_text(
        f"""
classifier:
  agent: shell
  prompt: 'read -r _ < "{gate}"; echo "{{\\"agent\\": \\"shell\\"}}"'
tasks:
  - name: sorted-out
    agent: {{instructions: "echo done"}}
""",
        "wf.yaml",
    ).tasks
    async with owned_engine(store, kill_grace=1.0) as engine:
        await engine.submit(tasks)
        app = TuiApp(engine, osc="off", remember_theme=False, toasts=False)
        # Wide enough for the state column's words, not only its symbols.
        async with app.run_test(size=(220, 40)) as pilot:
            row = lambda: next(  # noqa: E731
                (ln for ln in screen_text(app).splitlines() if " sorted-out " in ln), ""
            )
            await until(pilot, lambda: "classifying" in row(), "sorted-out classifying")
            await asyncio.to_thread(gate.write_text, "go\n")
            await until(pilot, lambda: "done" in row().split(" sorted-out ")[0], "sorted-out done")
            assert "classifying" not in screen_text(app)
            await engine.wait_settled([t.id for t in tasks])
