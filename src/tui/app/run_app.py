"""Start the app on an in-process engine (the daemon will later own the engine instead)."""

from __future__ import annotations

from collections.abc import Sequence

from tui.engine.scheduler import Engine
from tui.model.task import Task
from tui.store.db import Store


async def run_app(
    store: Store,
    tasks: Sequence[Task],
    *,
    concurrency: int,
    mouse: bool,
    shell: str = "bash",
) -> None:
    from tui.app.tui_app import TuiApp

    engine = Engine(store, concurrency=concurrency, shell=shell)
    await engine.start()
    try:
        if tasks:
            await engine.submit(list(tasks))
        app = TuiApp(engine, fit_terminal_colors=True)
        await app.run_async(mouse=mouse)
    finally:
        await engine.stop()
