"""`tui web`: the app in browser tabs (textual-serve), each tab running `tui open`.

Every address needs the token (generated unless --token/$TUI_WEB_TOKEN), loopback included:
loopback TCP carries no peer uid, so without it any local user could run commands as ours.
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import ipaddress
import logging
import os
import secrets
import signal
import socket
import sys
from typing import Any

from tui.cli.common import err, open_store

DEFAULT_PORT = 8000
DEFAULT_MAX_TABS = 8  # each tab is an app process of ~80 MB
TOKEN_ENV = "TUI_WEB_TOKEN"
SHUTDOWN_TIMEOUT = 5.0  # seconds open connections get when the server stops


def add_parsers(sub: Any, db: argparse.ArgumentParser) -> None:
    web = sub.add_parser("web", parents=[db], help="serve the app to browser tabs")
    web.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1)",
    )
    web.add_argument(
        "--port",
        type=_port,
        default=DEFAULT_PORT,
        metavar="N",
        help=f"port to listen on (default {DEFAULT_PORT}; 0 picks a free one)",
    )
    web.add_argument(
        "--token",
        help=f"the token browsers must present (default: ${TOKEN_ENV}, which unlike this "
        "option no other user sees in `ps`; else a random one, printed in the URL)",
    )
    web.add_argument(
        "--max-tabs",
        type=_tabs,
        default=DEFAULT_MAX_TABS,
        metavar="N",
        help=f"tabs open at once (default {DEFAULT_MAX_TABS}; each runs an app of ~80 MB): "
        "one more is closed with the reason",
    )


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0-65535)")
    return port


def _tabs(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of tabs (1 or more)")
    return n


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name: it may resolve to anything


async def cmd_web(args: argparse.Namespace) -> int:
    from aiohttp import web

    from tui.cli.web_server import WebServer

    # Taken out of the environment so tab apps and the tasks they run never see it.
    from_env = os.environ.pop(TOKEN_ENV, None)
    token = args.token or from_env or None
    # The token goes only to a terminal: redirected output (a file, a journal) would keep it.
    show_token = sys.stdout.isatty()
    if token is None:
        if not show_token:
            err(
                "tui web needs a token, and a generated one would be printed to output that "
                f"is not a terminal; set ${TOKEN_ENV} (or --token)"
            )
            return 2
        token = secrets.token_urlsafe(24)
    async with open_store(args.db) as store:  # a bad --db fails here, not in every tab
        db = str(store.path.resolve())
    argv = [sys.executable, "-m", "tui", "open", "--db", db]
    _one_line_errors()
    server = WebServer(argv, token=token, loopback=is_loopback(args.host), max_tabs=args.max_tabs)
    runner = web.AppRunner(await server._make_app(), access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, args.host, args.port, shutdown_timeout=SHUTDOWN_TIMEOUT)
    try:
        await site.start()
    except OSError as e:
        await runner.cleanup()
        err(_listen_error(args.host, args.port, e))
        return 1
    try:
        shown = token if show_token else f"<${TOKEN_ENV} or --token>"
        print(f"tui web: serving {db}\n  {_url(args.host, _bound_port(runner), shown)}", flush=True)
        print("  Ctrl+C stops the server and every tab's app.", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
    finally:
        await server.close_tabs()
        await runner.cleanup()
    return 0


class _OneLine(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        exc = record.exc_info[1] if record.exc_info else None
        why = f": {type(exc).__name__}: {' '.join(str(exc).split())}" if exc else ""
        text = f"tui web: {record.getMessage()}{why}"
        return text if len(text) <= 200 else text[:197] + "..."


def _one_line_errors() -> None:
    """aiohttp logs a request it cannot parse (a URL over 8 KB, a bad header) with a whole
    traceback; the server's output gets one line for it instead."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLine())
    aiohttp_log = logging.getLogger("aiohttp")
    aiohttp_log.addHandler(handler)
    aiohttp_log.propagate = False


def _listen_error(host: str, port: int, e: OSError) -> str:
    if e.errno == errno.EADDRINUSE:
        return f"port {port} is in use on {host}; pick another with --port (0: any free one)"
    if isinstance(e, socket.gaierror) or e.errno == errno.EADDRNOTAVAIL:
        why = e.strerror if isinstance(e, socket.gaierror) else "not an address of this machine"
        return f"cannot listen on --host {host}: {why}"
    reason = os.strerror(e.errno) if e.errno else str(e)
    return f"cannot listen on {host} port {port}: {reason}"


def _bound_port(runner: Any) -> int:
    return runner.addresses[0][1]  # --port 0 asks the system for a free one


def _url(host: str, port: int, token: str) -> str:
    if host in ("", "0.0.0.0", "::"):
        host = socket.gethostname()  # any address of this machine; its name is a fair guess
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}/?token={token}"
