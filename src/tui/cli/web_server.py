"""The HTTP side of `tui web`: textual-serve's Server, with a token guard, same-origin
websockets, and one app process per browser tab that never outlives the server."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import shlex
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeGuard
from urllib.parse import urlsplit

import aiohttp_jinja2
from aiohttp import WSCloseCode, WSMsgType, web
from textual_serve.app_service import AppService
from textual_serve.server import Server, to_int

from tui.procs.groups import terminate_group

QUIT_GRACE = 5.0  # seconds a tab's app gets to quit by itself before its group is killed
# A tab's terminal at most: a page asking for more has a bug (an app drawing 100000 × 100000
# cells grew by 100 MB a second).
MAX_COLUMNS, MAX_ROWS = 1000, 500
FONT_SIZES = range(6, 73)
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class AppTab(AppService):
    """One browser tab's app: started from an argv list (no shell, so nothing in it is ever
    parsed as shell syntax) as leader of its own process group, so it can be stopped whole."""

    def __init__(self, argv: Sequence[str], **kwargs: Any) -> None:
        super().__init__(shlex.join(argv), **kwargs)
        self.argv = list(argv)

    async def _open_app_process(
        self, width: int = 80, height: int = 24
    ) -> asyncio.subprocess.Process:
        env = self._build_environment(width=width, height=height)
        # textual-serve reads the app through asyncio's stream API: a full asyncio Process.
        proc = await asyncio.create_subprocess_exec(
            *self.argv,
            env=env,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        assert proc.stdin is not None
        self._process, self._stdin = proc, proc.stdin
        return proc

    async def drain(self) -> None:
        """Wait while the app is behind on its input, so a page typing faster than the app
        reads is held back (its websocket unread) instead of buffered here."""
        if self._process is not None and self._process.stdin is not None:
            with contextlib.suppress(ConnectionError):
                await self._process.stdin.drain()

    async def run(self) -> None:
        await super().run()
        # The app is gone (it may have failed to start): end the tab rather than leave the
        # browser looking at a frozen screen.
        await self.remote_close()

    async def close(self) -> None:
        """Ask the app to quit; whatever is left of its group after QUIT_GRACE is killed."""
        with contextlib.suppress(Exception):
            async with asyncio.timeout(QUIT_GRACE):
                await self.stop()
        proc = self._process
        if proc is not None:
            await terminate_group(proc.pid, grace=QUIT_GRACE, proc=proc)


class WebServer(Server):
    """Serves ``argv`` (the app command) to browsers. Every request needs ``token``
    (``?token=``, then a cookie the page sets); on a ``loopback`` address, also a loopback
    Host name."""

    def __init__(
        self, argv: Sequence[str], *, token: str, loopback: bool, max_tabs: int = 8
    ) -> None:
        if not token:
            raise ValueError("tui web always needs a token")
        super().__init__(shlex.join(argv), title="tui")
        self.argv = list(argv)
        self.token = token
        self.loopback = loopback
        self.tabs: set[AppTab] = set()
        self.max_tabs = max_tabs

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.append(self._guard)
        return app

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        from_query = False
        # Cookies ignore the port, so two servers on one host must not share a name.
        cookie = f"tui_web_token_{request.url.port}"
        # Loopback too: any local user can connect to 127.0.0.1, and TCP says not who.
        given = request.cookies.get(cookie, "")
        if not self._token_ok(given):
            given, from_query = request.query.get("token", ""), True
        if not self._token_ok(given):
            return web.Response(
                status=401, text="tui web: open the URL with the token that `tui web` printed\n"
            )
        if self.loopback and (request.url.host or "") not in LOOPBACK_NAMES:
            # A foreign name pointing at 127.0.0.1 (DNS rebinding) has no business here.
            return web.Response(status=403, text="tui web: unexpected Host header\n")
        if request.path == "/ws" and not _same_origin(request):
            # Browsers let any page open a websocket anywhere; only our own page may.
            return web.Response(status=403, text="tui web: cross-site websocket refused\n")
        response = await handler(request)
        if from_query and request.path == "/" and not response.prepared:
            # The page's websocket and assets carry the token as a cookie from here on.
            response.set_cookie(cookie, given, httponly=True, samesite="Strict")
        return response

    def _token_ok(self, given: str) -> bool:
        return bool(given) and hmac.compare_digest(given.encode(), self.token.encode())

    async def on_startup(self, app: web.Application) -> None:
        """Quiet: `tui web` prints its own address (the base class prints a banner)."""

    async def close_tabs(self) -> None:
        await asyncio.gather(*(tab.close() for tab in list(self.tabs)))

    @aiohttp_jinja2.template("app_index.html")
    async def handle_index(self, request: web.Request) -> dict[str, Any]:
        # URLs come from the address the browser used: the bind address (0.0.0.0, ::) is
        # not one a browser can reach.
        origin = str(request.url.origin())
        ws_scheme = "wss" if origin.startswith("https") else "ws"
        font_size = to_int(request.query.get("fontsize", "16"), 16)
        return {
            "font_size": font_size if font_size in FONT_SIZES else 16,
            "app_websocket_url": f"{ws_scheme}:{origin.split(':', 1)[1]}/ws",
            "config": {"static": {"url": f"{origin}/static/"}},
            "application": {"name": self.title},
        }

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        # textual-serve's handler, with an AppTab (own process group, no shell) instead of
        # its AppService, and the tab's app always stopped when the socket goes.
        websocket = web.WebSocketResponse(heartbeat=15)
        width = _clamp(to_int(request.query.get("width", "80"), 80), MAX_COLUMNS)
        height = _clamp(to_int(request.query.get("height", "24"), 24), MAX_ROWS)
        await websocket.prepare(request)
        if len(self.tabs) >= self.max_tabs:
            # Each tab is an app process: without a cap, tabs left open add up to gigabytes.
            n = len(self.tabs)
            open_ = "1 tab is" if n == 1 else f"{n} tabs are"
            why = f"{open_} open (--max-tabs {self.max_tabs}): close one"
            print(f"tui web: refused a tab: {why}", file=sys.stderr, flush=True)
            await websocket.close(code=WSCloseCode.TRY_AGAIN_LATER, message=why.encode())
            return websocket
        tab = AppTab(
            self.argv,
            write_bytes=websocket.send_bytes,
            write_str=websocket.send_str,
            close=websocket.close,
            download_manager=self.download_manager,
        )
        self.tabs.add(tab)
        try:
            await tab.start(width, height)
            try:
                await self._process_messages(websocket, tab)
            except BadMessage as e:  # the page's bug ends its tab, with the reason
                print(f"tui web: closed a tab: {e}", file=sys.stderr, flush=True)
                await websocket.close(code=WSCloseCode.UNSUPPORTED_DATA, message=str(e).encode())
        finally:
            self.tabs.discard(tab)
            await tab.close()
            await websocket.close()
        return websocket

    async def _process_messages(  # type: ignore[override]
        self, websocket: web.WebSocketResponse, app_service: AppTab
    ) -> None:
        """textual-serve's loop over the page's messages, each checked before the app gets it
        (its own took any JSON: `[]` or `["stdin", 5]` was a traceback, a huge resize an app
        that grew without end)."""
        async for message in websocket:
            if message.type != WSMsgType.TEXT:
                continue
            kind, data = _envelope(message.data)
            if kind == "stdin":
                if not isinstance(data, str):
                    raise BadMessage(f"stdin: text expected, got {_shown(data)}")
                await app_service.send_bytes(data.encode())
                await app_service.drain()
            elif kind == "resize":
                await app_service.set_terminal_size(*_size(data))
            elif kind == "ping":
                await websocket.send_json(["pong", data])
            elif kind == "blur":
                await app_service.blur()
            elif kind == "focus":
                await app_service.focus()


class BadMessage(Exception):
    """A websocket message from the page that is not one textual-serve's page sends."""


def _envelope(text: str) -> tuple[str, object]:
    try:
        envelope = json.loads(text)
    except (ValueError, RecursionError):
        raise BadMessage(f"not a JSON message: {text[:60]!r}") from None
    if not (isinstance(envelope, list) and envelope and isinstance(envelope[0], str)):
        raise BadMessage(f'a message is ["type", data], got {_shown(envelope)}')
    return envelope[0], envelope[1] if len(envelope) > 1 else None


def _size(data: object) -> tuple[int, int]:
    if isinstance(data, dict):
        width, height = data.get("width"), data.get("height")
        if _is_int(width) and _is_int(height):
            return _clamp(width, MAX_COLUMNS), _clamp(height, MAX_ROWS)
    raise BadMessage(f'resize: {{"width": N, "height": N}} expected, got {_shown(data)}')


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _clamp(value: int, most: int) -> int:
    return max(1, min(value, most))


def _shown(value: object) -> str:
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _same_origin(request: web.Request) -> bool:
    origin = request.headers.get("Origin")
    if origin is None:
        return True  # not a browser; the token (when required) already vouched for it
    return urlsplit(origin).netloc.lower() == request.host.lower()
