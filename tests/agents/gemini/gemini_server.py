"""A scripted Gemini API server for driving the real `gemini` CLI offline.

Usage::

    server = GeminiServer()
    server.script("zg-marker", [call("write_file", {...}), say("Done.")])
    with server:  # listens on 127.0.0.1:<free port> in a thread
        env = {"GOOGLE_GEMINI_BASE_URL": server.url, ...}

The CLI calls ``POST /v1beta/models/<model>:generateContent`` for side requests (the routing
classifier wants a JSON answer) and ``POST /v1beta/models/<model>:streamGenerateContent?alt=sse``
for the turns. A *conversation* is picked by a marker found in a user text of the request's
``contents`` (the task's instructions), or the only scripted one. The turn answered is the number
of ``model`` contents after the first user content holding the marker (not counting the CLI's
own "[The previous response was interrupted...]" filler), so a resumed session (``--resume``,
which replays the history) continues the script where it stopped.

A turn may answer with an HTTP error instead (``fail(status, message)``), or hold its answer on a
:class:`threading.Event` until the test releases it (``turn.reached`` is set when it is reached).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.agents.cli_support import ScriptedServer

# Both routing classifiers' answers in one object (each schema ignores the other's keys).
CLASSIFIER_ANSWER = {
    "reasoning": "scripted: simple task",
    "model_choice": "flash",
    "complexity_reasoning": "scripted: simple task",
    "complexity_score": 10,
}


# A resumed session whose last turn never got an answer gets this filler model message from the
# CLI itself; it is not one of the scripted turns.
INTERRUPTED = "[The previous response was interrupted"


@dataclass
class Turn:
    text: str = ""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    input_tokens: int = 100
    output_tokens: int = 20
    cached_tokens: int = 0
    error: tuple[int, str] | None = None  # (HTTP status, message) instead of an answer
    error_once: bool = False  # answer the error the first time only, then `text`
    block: threading.Event | None = None
    reached: threading.Event = field(default_factory=threading.Event)


def say(text: str, **kw: Any) -> Turn:
    return Turn(text=text, **kw)


def call(name: str, args: dict[str, Any], *, text: str = "", **kw: Any) -> Turn:
    return Turn(text=text, calls=[(name, args)], **kw)


def fail(status: int, message: str, *, once: bool = False, then: str = "") -> Turn:
    """An HTTP error instead of an answer; ``once``: only the first time, then ``then``."""
    return Turn(text=then, error=(status, message), error_once=once)


@dataclass
class Request:
    path: str
    body: dict[str, Any]

    @property
    def streaming(self) -> bool:
        return ":streamGenerateContent" in self.path

    @property
    def model(self) -> str:
        tail = self.path.split("/models/", 1)[-1]
        return tail.split(":", 1)[0]

    @property
    def contents(self) -> list[dict[str, Any]]:
        return list(self.body.get("contents") or [])

    def flat_text(self) -> str:
        return json.dumps(self.contents)

    def function_responses(self) -> list[dict[str, Any]]:
        return [
            p["functionResponse"]
            for c in self.contents
            for p in c.get("parts") or []
            if isinstance(p, dict) and "functionResponse" in p
        ]


def _user_texts(content: dict[str, Any]) -> str:
    return " ".join(
        str(p.get("text", "")) for p in content.get("parts") or [] if isinstance(p, dict)
    )


class GeminiServer(ScriptedServer):
    def __init__(self) -> None:
        super().__init__(_Handler)
        self.requests: list[Request] = []
        self._scripts: dict[str, list[Turn]] = {}

    def script(self, marker: str, turns: list[Turn]) -> None:
        self._scripts[marker] = turns
        self._gates.extend(t.block for t in turns if t.block is not None)

    def turn_requests(self, marker: str | None = None) -> list[Request]:
        """The streamed (turn) requests, optionally of one conversation."""
        with self._lock:
            reqs = [r for r in self.requests if r.streaming]
        if marker is not None:
            reqs = [r for r in reqs if marker in r.flat_text()]
        return reqs

    def pick(self, contents: list[dict[str, Any]]) -> Turn:
        turns: list[Turn] | None = None
        start = 0
        for marker, script in self._scripts.items():
            for i, c in enumerate(contents):
                if c.get("role") == "user" and marker in _user_texts(c):
                    turns, start = script, i
                    break
            if turns is not None:
                break
        if turns is None:
            if len(self._scripts) != 1:
                return Turn(text="(no script for this conversation)")
            turns = next(iter(self._scripts.values()))
        done = sum(
            1
            for c in contents[start:]
            if c.get("role") == "model" and not _user_texts(c).startswith(INTERRUPTED)
        )
        if done >= len(turns):
            return Turn(text="(script finished)")
        return turns[done]


class _Handler(BaseHTTPRequestHandler):
    server_owner: GeminiServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._json(200, {"models": []})

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
        path = self.path.split("?", 1)[0]
        if path.endswith(":countTokens"):
            self._json(200, {"totalTokens": 100})
            return
        if path.endswith(":generateContent"):
            self._json(200, _response(json.dumps(CLASSIFIER_ANSWER), [], 10, 5, 0, req.model))
            return
        if not path.endswith(":streamGenerateContent"):
            self._json(404, {"error": {"code": 404, "message": "not found", "status": "NOT_FOUND"}})
            return
        with owner._lock:
            turn = owner.pick(req.contents)
            gate, turn.block = turn.block, None
            error = turn.error
            if turn.error_once:
                turn.error = None
        turn.reached.set()
        if gate is not None:
            gate.wait()
            if owner._httpd is None:
                return
        try:
            if error is not None:
                status, message = error
                self._json(
                    status,
                    {"error": {"code": status, "message": message, "status": "INVALID_ARGUMENT"}},
                )
                return
            chunk = _response(
                turn.text,
                turn.calls,
                turn.input_tokens,
                turn.output_tokens,
                turn.cached_tokens,
                req.model,
            )
            data = f"data: {json.dumps(chunk)}\r\n\r\n".encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _json(self, status: int, data: dict[str, Any]) -> None:
        payload = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def _response(
    text: str,
    calls: list[tuple[str, dict[str, Any]]],
    tokens_in: int,
    tokens_out: int,
    cached: int,
    model: str,
) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"text": text}] if text else []
    parts += [{"functionCall": {"name": n, "args": a}} for n, a in calls]
    if not parts:
        parts = [{"text": "ok"}]
    usage: dict[str, Any] = {
        "promptTokenCount": tokens_in,
        "candidatesTokenCount": tokens_out,
        "totalTokenCount": tokens_in + tokens_out,
    }
    if cached:
        usage["cachedContentTokenCount"] = cached
    return {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": usage,
        "modelVersion": model,
    }
