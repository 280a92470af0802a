"""`tui` with no daemon running loads the app while the daemon starts, not after."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

# A fresh interpreter (the app's modules not yet imported) where starting the daemon waits
# until the app's module is being imported, then gives up: without the overlap the import
# would only begin once the daemon was up, and this start would time out.
SCRIPT = textwrap.dedent(
    """
    import asyncio, sys
    from tui.cli import open_app
    from tui.cli.main import build_parser

    class Started(Exception):
        pass

    async def ensure(db, **_kw):
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        while "tui.app.tui_app" not in sys.modules:
            if loop.time() > deadline:
                print("the app was not loading while the daemon started")
                sys.exit(1)
            await asyncio.sleep(0.01)  # polling another thread's import: no event to wait on
        raise Started

    async def attach(db):
        return None

    open_app.ensure, open_app.attach = ensure, attach
    args = build_parser().parse_args(["open", "--db", sys.argv[1]])
    try:
        asyncio.run(open_app.cmd_open(args))
    except Started:
        print("overlapped")
    """
)


def test_the_app_loads_while_the_daemon_starts(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "tui.db")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.stdout.strip() == "overlapped", out.stdout + out.stderr
