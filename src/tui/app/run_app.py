"""Start the app on an in-process engine (`tui --foreground`): the engine stops with the app."""

from __future__ import annotations

from collections.abc import Sequence

from tui.daemon.lifecycle import serving
from tui.daemon.paths import daemon_paths
from tui.daemon.service import daemon_lock
from tui.engine.runner import Executor
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
    executor: Executor | None = None,
) -> None:
    from tui.app.tui_app import TuiApp

    engine = Engine(store, concurrency=concurrency, shell=shell, executor=executor)
    with daemon_lock(daemon_paths(store.path)):
        await engine.start()
        try:
            # The app owns the database: it serves its socket as the daemon would, so `tui run`,
            # `tui ask` and the other commands reach this engine the one way they always do.
            app = TuiApp(engine, fit_terminal_colors=True)
            async with serving(
                engine, app.exit, foreground=True, reason="the app that owned the database quit"
            ):
                if tasks:
                    await engine.submit(list(tasks))
                await app.run_async(mouse=mouse)
        finally:
            await engine.stop()
