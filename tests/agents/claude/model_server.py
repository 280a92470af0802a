"""A scripted Anthropic Messages API server for driving the real `claude` CLI offline.

Usage::

    server = ModelServer()
    server.script("build-thing", [tool_use("Bash", {"command": "ls"}), text("Done.")])
    with server:  # listens on 127.0.0.1:<free port> in a thread
        env = {"ANTHROPIC_BASE_URL": server.url, ...}

A *conversation* is picked by a marker string found in the first user message of a request
(the task's instructions), or the only scripted one. Inside a conversation the turn answered is
the number of assistant messages already in the request, so a resumed session (``--resume``,
which replays the history) simply continues the script where it stopped.

Requests without ``tools`` are side requests (titles, summaries...) and get a short text.
Every request is recorded (``server.requests``; ``server.main_requests()`` for the scripted
ones). A turn can ``block`` on a :class:`threading.Event` until the test releases it; the
first time it is reached ``turn.reached`` is set (``await server.wait_reached(turn)``).
"""

from __future__ import annotations

import itertools
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.agents.cli_support import ScriptedServer


@dataclass
class Turn:
    """One scripted model answer: optional text, then optional tool calls."""

    text: str = ""
    tools: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    input_tokens: int = 100
    output_tokens: int = 20
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    # Hold the answer until released (once: a replay of the same turn does not block again).
    block: threading.Event | None = None
    reached: threading.Event = field(default_factory=threading.Event)


def text(value: str, **kw: Any) -> Turn:
    return Turn(text=value, **kw)


def tool_use(name: str, tool_input: dict[str, Any], *, say: str = "", **kw: Any) -> Turn:
    return Turn(text=say, tools=[(name, tool_input)], **kw)


@dataclass
class Request:
    path: str
    body: dict[str, Any]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    @property
    def has_tools(self) -> bool:
        return bool(self.body.get("tools"))

    def flat_text(self) -> str:
        """Every string in the messages (text blocks, tool results...), for assertions."""
        return json.dumps(self.messages)

    def tool_results(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for m in self.messages:
            content = m.get("content")
            if isinstance(content, list):
                out.extend(b for b in content if b.get("type") == "tool_result")
        return out


def first_user_text(body: dict[str, Any]) -> str:
    for m in body.get("messages") or []:
        if m.get("role") != "user":
            continue
        content = m.get("content")
        if isinstance(content, str):
            return content
        return " ".join(
            b.get("text", "") for b in content or [] if isinstance(b, dict) and "text" in b
        )
    return ""


class ModelServer(ScriptedServer):
    def __init__(self) -> None:
        super().__init__(_Handler)
        self.requests: list[Request] = []
        self._scripts: dict[str, list[Turn]] = {}
        self._ids = itertools.count(1)

    # -- scripting -------------------------------------------------------------------------

    def script(self, marker: str, turns: list[Turn]) -> None:
        """The turns of the conversation whose first user message contains ``marker``."""
        self._scripts[marker] = turns
        self._gates.extend(t.block for t in turns if t.block is not None)

    def main_requests(self, marker: str | None = None) -> list[Request]:
        with self._lock:
            reqs = [r for r in self.requests if r.has_tools]
        if marker is not None:
            reqs = [r for r in reqs if marker in first_user_text(r.body)]
        return reqs

    # -- answering -------------------------------------------------------------------------

    def _pick(self, body: dict[str, Any]) -> Turn:
        if not body.get("tools"):
            return Turn(text="Scripted title")
        first = first_user_text(body)
        turns = next((t for m, t in self._scripts.items() if m in first), None)
        if turns is None:
            if len(self._scripts) != 1:
                return Turn(text=f"(no script for conversation {first[:60]!r})")
            turns = next(iter(self._scripts.values()))
        done = sum(1 for m in body.get("messages") or [] if m.get("role") == "assistant")
        if done >= len(turns):
            return Turn(text="(script finished)")
        return turns[done]

    def _tool_id(self) -> str:
        return f"toolu_{next(self._ids):04d}"


class _Handler(BaseHTTPRequestHandler):
    server_owner: ModelServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        self._json(200, {"data": [], "has_more": False})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        path = self.path.split("?", 1)[0]
        with self.server_owner._lock:
            self.server_owner.requests.append(Request(self.path, body))
        if path.endswith("/count_tokens"):
            self._json(200, {"input_tokens": 100})
            return
        if not path.endswith("/v1/messages"):
            self._json(404, {"type": "error", "error": {"type": "not_found_error"}})
            return
        with self.server_owner._lock:
            turn = self.server_owner._pick(body)
            # Only the first request that reaches a blocking turn waits; a replay of the same
            # turn (the CLI was killed, then resumed) answers at once.
            gate, turn.block = turn.block, None
        turn.reached.set()
        if gate is not None:
            gate.wait()
            if self.server_owner._httpd is None:
                return
        blocks: list[dict[str, Any]] = [{"type": "text", "text": turn.text}] if turn.text else []
        for name, tool_input in turn.tools:
            blocks.append(
                {
                    "type": "tool_use",
                    "id": self.server_owner._tool_id(),
                    "name": name,
                    "input": tool_input,
                }
            )
        if not blocks:
            blocks = [{"type": "text", "text": "ok"}]
        stop = "tool_use" if turn.tools else "end_turn"
        usage = {
            "input_tokens": turn.input_tokens,
            "output_tokens": turn.output_tokens,
            "cache_read_input_tokens": turn.cache_read_tokens,
            "cache_creation_input_tokens": turn.cache_creation_tokens,
        }
        message = {
            "id": f"msg_{next(self.server_owner._ids)}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "claude-test"),
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }
        try:
            if body.get("stream"):
                self._stream(message, blocks)
            else:
                self._json(200, {**message, "content": blocks})
        except (BrokenPipeError, ConnectionResetError):
            pass  # the CLI was killed while we answered

    def _json(self, status: int, data: dict[str, Any]) -> None:
        payload = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _stream(self, message: dict[str, Any], blocks: list[dict[str, Any]]) -> None:
        events: list[tuple[str, dict[str, Any]]] = [
            (
                "message_start",
                {
                    "type": "message_start",
                    "message": {**message, "content": [], "stop_reason": None},
                },
            )
        ]
        for i, block in enumerate(blocks):
            start: dict[str, Any]
            if block["type"] == "text":
                start = {"type": "text", "text": ""}
                delta = {"type": "text_delta", "text": block["text"]}
            else:
                start = {**block, "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            events += [
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": i, "content_block": start},
                ),
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": i, "delta": delta},
                ),
                ("content_block_stop", {"type": "content_block_stop", "index": i}),
            ]
        events += [
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                    "usage": {"output_tokens": message["usage"]["output_tokens"]},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
        payload = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)
        data = payload.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()
