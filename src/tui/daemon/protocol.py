"""The daemon's wire protocol: one JSON object per line over a Unix socket.

The server speaks first with ``hello`` (protocol, ``version`` of its tui, pid, cursor). A client
then sends requests ``{"id", "msg"}`` — ``msg`` is a message of ``tui.engine.api`` as JSON — and
gets ``reply`` objects with the same id, whose ``result`` is the message's reply model. A
connection that sends ``subscribe`` becomes a one-way event stream: ``ev`` (a journal event,
numbered by its journal id), ``out`` / ``outc`` (output lines, or stored chunks of lines,
numbered by their output ids), ``lag`` (the viewer fell behind and is being caught up from the
database) and ``bye`` (the daemon is stopping). Sequence numbers are the store's own ids, so a
viewer resumes from its ``Cursor`` with no gap and no duplicate, across reconnects and daemon
restarts.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import tui
from tui.engine import api
from tui.engine.events import Cursor, OutputBatch
from tui.store.chunks import ChunkRow
from tui.store.records import EventRecord

PROTOCOL = 2  # 2: typed messages (tui.engine.api)
# One message per line. Replies (every task at attach) can be large; an event stream's
# messages are kept small, and its reader's limit is small too, because a stream reader
# buffers up to twice its limit before it pushes back on the daemon.
REQUEST_LINE_LIMIT = 256 * 1024 * 1024
STREAM_LINE_LIMIT = 1024 * 1024
OUT_BYTES = 256 * 1024  # output text per ``out`` message (a line is at most 16k chars)


# The files whose models travel on the socket: a daemon whose copies differ from a viewer's may
# refuse what it sends ("Extra inputs are not permitted" for a new task field).
WIRE_SOURCES = ("model/*.py", "engine/api.py", "store/records.py", "daemon/protocol.py")
VERSION_ENV = "TUI_VERSION_OVERRIDE"  # tests: a daemon that reports another version


@functools.cache
def _wire_fingerprint() -> str:
    root = Path(tui.__file__).parent
    digest = hashlib.sha256()
    for pattern in WIRE_SOURCES:
        for f in sorted(root.glob(pattern)):
            digest.update(f.name.encode() + b"\0" + f.read_bytes())
    return digest.hexdigest()[:10]


def software_version() -> str:
    """This tui as the daemon's ``hello`` names it: the release and a fingerprint of the wire's
    models, so two builds of one release that disagree on a field are told apart too."""
    return os.environ.get(VERSION_ENV) or f"{tui.__version__}+{_wire_fingerprint()}"


def encode(msg: dict[str, Any]) -> bytes:
    return json.dumps(msg, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def decode(line: bytes) -> dict[str, Any]:
    """One message; ValueError for anything that is not a JSON object in UTF-8."""
    try:
        text = line.decode()  # UTF-8, not the encoding json would guess
        msg = json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    if _SURROGATE_ESCAPE.search(text):  # rare: only then the cost of a look at every string
        try:
            json.dumps(msg, ensure_ascii=False).encode()
        except UnicodeEncodeError:
            raise ValueError(
                "a string holds a lone surrogate (a \\udXXX escape that is not half of a pair): "
                "not text that can be stored"
            ) from None
    if not isinstance(msg, dict):
        raise ValueError("a message must be a JSON object")
    return msg


# -- requests and replies ----------------------------------------------------------------------


def request(rid: int, message: api.Message[Any]) -> bytes:
    return encode({"id": rid, "msg": message.model_dump(mode="json")})


def reply(rid: Any, result: api.Reply) -> bytes:
    # The reply model straight to JSON (pydantic's encoder): a 10,000-task list costs no more
    # than the plain records did; only the envelope goes through json.dumps.
    head = json.dumps({"t": "reply", "id": rid, "ok": True}, separators=(",", ":"))
    return f'{head[:-1]},"result":{result.model_dump_json()}}}\n'.encode()


def failure(rid: Any, error: str) -> bytes:
    return encode({"t": "reply", "id": rid, "ok": False, "error": error})


# -- the event stream --------------------------------------------------------------------------


def event_messages(item: EventRecord | OutputBatch) -> list[dict[str, Any]]:
    if not isinstance(item, OutputBatch):
        return [{"t": "ev", "ev": dataclasses.asdict(item)}]
    chunks = item.chunks
    if chunks is not None and all(len(c[5]) <= OUT_BYTES for c in chunks):
        return _chunk_messages(item.first_id, chunks)
    msgs: list[dict[str, Any]] = []
    rows: list[list[Any]] = []
    size = 0
    for i, row in enumerate(item.rows):
        rows.append(list(row))
        size += len(row[-1]) + 64
        if size >= OUT_BYTES:
            msgs.append({"t": "out", "first": item.first_id + i + 1 - len(rows), "rows": rows})
            rows, size = [], 0
    if rows:
        msgs.append({"t": "out", "first": item.last_id + 1 - len(rows), "rows": rows})
    return msgs


def _chunk_messages(first_id: int, chunks: Sequence[ChunkRow]) -> list[dict[str, Any]]:
    """Stored chunks as they are (one string per read, not one row per line): the cheap form
    to encode and decode, split into messages of at most about OUT_BYTES."""
    msgs: list[dict[str, Any]] = []
    batch: list[list[Any]] = []
    size, start, line_id = 0, first_id, first_id
    for c in chunks:
        if batch and size + len(c[5]) > OUT_BYTES:
            msgs.append({"t": "outc", "first": start, "chunks": batch})
            batch, size, start = [], 0, line_id
        batch.append(list(c))
        size += len(c[5]) + 64
        line_id += c[6]
    if batch:
        msgs.append({"t": "outc", "first": start, "chunks": batch})
    return msgs


def event_from_wire(msg: dict[str, Any]) -> EventRecord | OutputBatch:
    if msg["t"] == "outc":
        return OutputBatch.of_chunks(msg["first"], [tuple(c) for c in msg["chunks"]])
    if msg["t"] == "out":
        return OutputBatch(msg["first"], [tuple(r) for r in msg["rows"]])
    return EventRecord(**msg["ev"])


def cursor_to_wire(c: Cursor) -> list[int]:
    return [c.event_id, c.output_id]


def cursor_from_wire(v: Any) -> Cursor:
    return Cursor(int(v[0]), int(v[1]))
