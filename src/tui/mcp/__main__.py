"""`python -m tui.mcp`: serve tui's tools over stdio for the run named by TUI_DB,
TUI_TASK_ID and TUI_RUN_ID (an agent CLI starts it from the configuration tui gives it)."""

from __future__ import annotations

import os
import sys

import anyio

from tui.mcp.server import build_server
from tui.mcp.stdio import serve
from tui.mcp.tools import RunInfo, Tools


def main() -> int:
    try:
        run = RunInfo.from_env(os.environ)
    except ValueError as e:
        print(f"tui mcp: {e}", file=sys.stderr)
        return 2
    anyio.run(serve, build_server(Tools(run)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
