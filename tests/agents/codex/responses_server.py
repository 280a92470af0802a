"""A scripted OpenAI Responses API server for driving the real `codex` CLI offline.

Usage::

    server = ResponsesServer()
    server.script("zc-marker", [call("shell_command", {...}), say("Done.")])
    with server:  # 127.0.0.1:<free port> in a thread; codex gets base_url = server.url + "/v1"

codex calls ``POST /v1/responses`` with ``"stream": true`` and reads SSE events
(response.created, response.output_item.added/done, response.output_text.delta,
response.completed with usage). A *conversation* is picked by a marker found in a user message
of the request's ``input``, or the only scripted one. The turn answered is the number of
assistant outputs (messages and function calls, one per scripted turn) after the first user
message holding the marker, so a resumed thread continues the script where it stopped.

A turn may answer with an HTTP error (``fail``; ``once`` then answers normally) or a
``response.failed`` event (``failed_event``).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.agents.cli_support import ScriptedServer


@dataclass
class Turn:
    text: str = ""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    input_tokens: int = 100
    cached_tokens: int = 0
    output_tokens: int = 20
    error: tuple[int, str] | None = None  # HTTP status, message
    error_once: bool = False
    failed: str = ""  # a response.failed event with this message
    namespace: str = ""  # the calls' tool namespace (MCP tools: "mcp__<server>")


def say(text: str, **kw: Any) -> Turn:
    return Turn(text=text, **kw)


def call(name: str, args: dict[str, Any], *, text: str = "", **kw: Any) -> Turn:
    return Turn(text=text, calls=[(name, args)], **kw)


def fail(status: int, message: str, *, once: bool = False, then: str = "") -> Turn:
    return Turn(text=then, error=(status, message), error_once=once)


def failed_event(message: str) -> Turn:
    return Turn(failed=message)


@dataclass
class Request:
    path: str
    body: dict[str, Any]

    @property
    def items(self) -> list[dict[str, Any]]:
        return [i for i in self.body.get("input") or [] if isinstance(i, dict)]

    def flat_text(self) -> str:
        return json.dumps(self.items)

    def outputs(self) -> list[dict[str, Any]]:
        """function_call_output items (tool results the CLI sent back)."""
        return [i for i in self.items if i.get("type") == "function_call_output"]


def _text_of(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    return " ".join(str(c.get("text", "")) for c in content or [] if isinstance(c, dict))


class ResponsesServer(ScriptedServer):
    def __init__(self) -> None:
        super().__init__(_Handler)
        self.requests: list[Request] = []
        self._scripts: dict[str, list[Turn]] = {}
        self._ids = itertools.count(1)

    def script(self, marker: str, turns: list[Turn]) -> None:
        self._scripts[marker] = turns

    def turn_requests(self, marker: str | None = None) -> list[Request]:
        with self._lock:
            reqs = [r for r in self.requests if r.path.startswith("/v1/responses")]
        if marker is not None:
            reqs = [r for r in reqs if marker in r.flat_text()]
        return reqs

    def pick(self, items: list[dict[str, Any]]) -> Turn:
        turns: list[Turn] | None = None
        start = 0
        for marker, script in self._scripts.items():
            for i, item in enumerate(items):
                if item.get("role") == "user" and marker in _text_of(item):
                    turns, start = script, i
                    break
            if turns is not None:
                break
        if turns is None:
            if len(self._scripts) != 1:
                return Turn(text="(no script for this conversation)")
            turns = next(iter(self._scripts.values()))
        done = 0
        for item in items[start:]:
            if item.get("type") == "function_call" or (
                item.get("type") == "message" and item.get("role") == "assistant"
            ):
                done += 1
        # A turn with text and a call produces two items: count turns, not items.
        done -= sum(1 for t in turns[: max(done, 0)] if t.text and t.calls)
        if done >= len(turns):
            return Turn(text="(script finished)")
        return turns[done]


class _Handler(BaseHTTPRequestHandler):
    server_owner: ResponsesServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._json(200, {"object": "list", "data": [], "models": []})

    def do_POST(self) -> None:
        owner = self.server_owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        req = Request(self.path, body)
        with owner._lock:
            owner.requests.append(req)
        if not self.path.startswith("/v1/responses"):
            self._json(404, {"error": {"message": "not found", "type": "not_found"}})
            return
        with owner._lock:
            turn = owner.pick(req.items)
            error = turn.error
            if turn.error_once:
                turn.error = None
        try:
            if error is not None:
                status, message = error
                self._json(
                    status,
                    {"error": {"message": message, "type": "invalid_request_error", "code": None}},
                )
                return
            self._stream(turn, str(body.get("model") or "gpt-test"))
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _json(self, status: int, data: dict[str, Any]) -> None:
        payload = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _stream(self, turn: Turn, model: str) -> None:
        owner = self.server_owner
        rid = f"resp_{next(owner._ids)}"
        base = {"id": rid, "object": "response", "model": model, "output": []}
        events: list[dict[str, Any]] = [
            {"type": "response.created", "response": {**base, "status": "in_progress"}}
        ]
        if turn.failed:
            events.append(
                {
                    "type": "response.failed",
                    "response": {
                        **base,
                        "status": "failed",
                        "error": {"code": "server_error", "message": turn.failed},
                    },
                }
            )
            self._send(events)
            return
        items: list[dict[str, Any]] = []
        if turn.text:
            mid = f"msg_{next(owner._ids)}"
            part = {"type": "output_text", "text": turn.text, "annotations": []}
            msg = {
                "type": "message",
                "id": mid,
                "role": "assistant",
                "status": "completed",
                "content": [part],
            }
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": 0,
                    "item": {**msg, "status": "in_progress", "content": []},
                }
            )
            events.append(
                {
                    "type": "response.output_text.delta",
                    "item_id": mid,
                    "output_index": 0,
                    "content_index": 0,
                    "delta": turn.text,
                }
            )
            events.append({"type": "response.output_item.done", "output_index": 0, "item": msg})
            items.append(msg)
        for name, args in turn.calls:
            n = next(owner._ids)
            fc = {
                "type": "function_call",
                "id": f"fc_{n}",
                "call_id": f"call_{n}",
                "name": name,
                "arguments": json.dumps(args),
                "status": "completed",
            }
            if turn.namespace:
                fc["namespace"] = turn.namespace
            idx = len(items)
            events.append({"type": "response.output_item.added", "output_index": idx, "item": fc})
            events.append({"type": "response.output_item.done", "output_index": idx, "item": fc})
            items.append(fc)
        usage = {
            "input_tokens": turn.input_tokens,
            "input_tokens_details": {"cached_tokens": turn.cached_tokens},
            "output_tokens": turn.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": turn.input_tokens + turn.output_tokens,
        }
        events.append(
            {
                "type": "response.completed",
                "response": {**base, "status": "completed", "output": items, "usage": usage},
            }
        )
        self._send(events)

    def _send(self, events: list[dict[str, Any]]) -> None:
        data = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()
