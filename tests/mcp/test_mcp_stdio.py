"""The real MCP server (`python -m tui.mcp`) fed bad input on its stdin by hand: every line
that is not a JSON-RPC message gets a JSON-RPC error, a huge one is dropped without being held,
and the server goes on answering."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from tui.mcp.stdio import MAX_LINE

MB = 1024 * 1024


class Server:
    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.lines: queue.Queue[bytes] = queue.Queue()
        assert proc.stdout is not None
        threading.Thread(target=self._read, args=(proc.stdout,), daemon=True).start()

    def _read(self, out: IO[bytes]) -> None:
        for line in out:
            self.lines.put(line)

    def send(self, data: bytes | dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        raw = data if isinstance(data, bytes) else json.dumps(data).encode() + b"\n"
        self.proc.stdin.write(raw)
        self.proc.stdin.flush()

    def reply(self, timeout: float = 30.0) -> dict[str, Any]:
        try:
            return json.loads(self.lines.get(timeout=timeout))
        except queue.Empty:
            pytest.fail(f"no reply from the MCP server in {timeout}s")

    def call(self, data: bytes | dict[str, Any]) -> dict[str, Any]:
        self.send(data)
        return self.reply()

    def memory_mb(self, field: str) -> float:
        """VmRSS (now) or VmHWM (the peak) of the server process."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
        raise AssertionError(f"no {field}")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    env = {
        **os.environ,
        "TUI_DB": str(tmp_path / "tui.db"),
        "TUI_TASK_ID": "t1",
        "TUI_RUN_ID": "1",
        "TUI_CONFIG_DIR": str(tmp_path / "config"),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui.mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=tmp_path,
    )
    s = Server(proc)
    init = s.call(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        }
    )
    assert "result" in init, init
    s.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    try:
        yield s
    finally:
        proc.kill()
        proc.wait(10)


def lists_tools(s: Server, rid: int) -> None:
    got = s.call({"jsonrpc": "2.0", "id": rid, "method": "tools/list"})
    assert got["id"] == rid and "ask_user" in json.dumps(got["result"]), got


def test_every_bad_line_gets_a_json_rpc_error_and_the_server_goes_on(server: Server) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    cases: list[tuple[bytes | dict[str, Any], Any, int, str]] = [
        (b"hello\n", None, -32700, "not JSON"),
        (b"\xff\xfe\n", None, -32700, "utf-8"),
        (b'{"jsonrpc": "2.0", "id": 8, "params": ' + deep + b"}\n", None, -32700, "deeply"),
        (b"[1, 2]\n", None, -32600, "not a JSON-RPC message"),
        ({"jsonrpc": "2.0", "id": 2}, 2, -32600, "method: Field required"),
        ({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": [1]}, 3, -32600, "params"),
        ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/list"}, None, -32600, "id"),
        ({"jsonrpc": "2.0", "id": "s", "method": "frobnicate"}, "s", -32601, "not found"),
    ]
    for i, (line, rid, code, said) in enumerate(cases):
        got = server.call(line)
        assert got.get("id") == rid and got["error"]["code"] == code, (line, got)
        assert said in got["error"]["message"], (line, got)
        lists_tools(server, 100 + i)
    assert server.proc.poll() is None


def test_wrong_tools_and_arguments_are_errors_naming_them(server: Server) -> None:
    def call_tool(rid: int, name: str, arguments: Any) -> dict[str, Any]:
        params = {"name": name, "arguments": arguments}
        return server.call({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})

    got = call_tool(1, "no_such_tool", {})
    assert got["result"]["isError"] and "Unknown tool: no_such_tool" in json.dumps(got)
    got = call_tool(2, "create_subtask", {"name": 5, "instructions": "x"})
    assert got["result"]["isError"] and "name" in got["result"]["content"][0]["text"]
    got = call_tool(3, "ask_user", "not an object")
    assert got["error"]["code"] == -32602, got
    lists_tools(server, 4)


def test_a_message_over_the_cap_is_dropped_as_it_comes_and_answered(server: Server) -> None:
    before = server.memory_mb("VmRSS")
    head = b'{"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": {"x": "'
    server.send(head)
    chunk = b"a" * MB
    for _ in range(MAX_LINE // MB * 6):  # six times the cap, one line
        server.send(chunk)
    server.send(b'"}}\n')
    got = server.reply()
    assert got["id"] == 41 and got["error"]["code"] == -32600, got
    assert "longer than 16 MiB" in got["error"]["message"]
    lists_tools(server, 42)
    grew = server.memory_mb("VmHWM") - before
    assert grew < 2 * MAX_LINE / MB, f"the server grew {grew:.0f} MB: it held the long line"
