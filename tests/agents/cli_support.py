"""What the scripted model servers of the real-CLI tests share: running on 127.0.0.1 in a
thread, and releasing every turn still held back (``Turn.block``) when they stop."""

from __future__ import annotations

import asyncio
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


class ScriptedServer:
    """Base of the scripted servers: its handler class reaches the server as ``server_owner``."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self._handler = handler
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._gates: list[threading.Event] = []  # set on stop, so no handler waits forever

    @staticmethod
    async def wait_reached(turn: Any, timeout: float = 30) -> None:
        """Wait until the server has got to ``turn`` (its ``reached`` event is set)."""
        if not await asyncio.to_thread(turn.reached.wait, timeout):
            raise AssertionError("the model server never got to that turn")

    @property
    def url(self) -> str:
        assert self._httpd is not None, "start() the server first"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> Self:
        handler = type("Handler", (self._handler,), {"server_owner": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        for gate in self._gates:
            gate.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
