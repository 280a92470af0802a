"""`tui web` end to end: a real server subprocess, real HTTP and websockets, real app processes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pty
import re
import select
import shutil
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from tests.cli.cli_support import TUI, marker_processes, wait_until

URL = re.compile(r"http://\S+:(\d+)/\?token=([\w-]+|<[^>]*>)")
ESCAPES = re.compile(rb"\x1b(\[[0-9;?$]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[()][0-9A-B]|.)")
APP_TIMEOUT = 60.0  # seconds a tab's app may take to draw its first screen on a busy machine


class Web:
    """One `tui web` subprocess (own session, so its group can be checked and killed)."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.db = tmp_path / "web.db"
        self.proc: subprocess.Popen[bytes] | None = None
        self.out = tmp_path / "web.out"
        self.terminal: int | None = None  # pty master when the output goes to a terminal
        self.seen = b""

    def start(self, *args: str, env: dict[str, str] | None = None, tty: bool = False) -> None:
        """Start the server; with ``tty`` its output is a terminal (else a file)."""
        if tty:
            self.terminal, out = pty.openpty()
        else:
            out = os.open(self.out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        try:
            self.proc = subprocess.Popen(
                [*TUI, "web", "--db", str(self.db), *args],
                stdout=out,
                stderr=out,
                stdin=subprocess.DEVNULL,
                cwd=self.tmp,
                env={**os.environ, **(env or {})},
                start_new_session=True,
            )
        finally:
            os.close(out)
        match = wait_until(self._url, "tui web prints its URL")
        self.port, self.token = int(match.group(1)), match.group(2)
        self.base = f"http://127.0.0.1:{self.port}"

    def url(self, path: str, query: str = "") -> str:
        """``path`` on this server, carrying the printed token as the printed URL does."""
        return f"{self.base}{path}?token={self.token}" + (f"&{query}" if query else "")

    def _url(self) -> re.Match[str] | None:
        assert self.proc is not None
        found = URL.search(self.output())
        if found is None and self.proc.poll() is not None:
            pytest.fail(f"tui web exited ({self.proc.returncode}):\n{self.output()}")
        return found

    def output(self) -> str:
        if self.terminal is None:
            return self.out.read_text(errors="replace")
        while select.select([self.terminal], [], [], 0)[0]:
            try:
                chunk = os.read(self.terminal, 4096)
            except OSError:  # EIO: the server closed the terminal
                break
            if not chunk:
                break
            self.seen += chunk
        return self.seen.decode(errors="replace")

    def apps(self) -> list[int]:
        """Live app processes of this server: each has our database in its argv, as has the
        server itself."""
        server = self.proc.pid if self.proc is not None else None
        return [
            pid
            for pid in marker_processes(str(self.db))
            if pid != server and b"\0open\0" in Path(f"/proc/{pid}/cmdline").read_bytes()
        ]

    def stop(self) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=60)

    def cleanup(self) -> None:
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            with contextlib.suppress(Exception):
                self.proc.wait(timeout=10)
        if self.terminal is not None:
            os.close(self.terminal)
        for pid in self.apps():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)


@pytest.fixture
def web(tmp_path: Path) -> Iterator[Web]:
    w = Web(tmp_path)
    try:
        yield w
    finally:
        w.cleanup()


async def screen_text(ws: aiohttp.ClientWebSocketResponse, *words: str) -> str:
    """Read the app's terminal stream until every word is on screen (escapes stripped)."""
    data = b""

    async def read() -> str:
        nonlocal data
        while True:
            msg = await ws.receive()
            assert msg.type == aiohttp.WSMsgType.BINARY, f"stream ended: {msg!r}"
            data += msg.data
            text = ESCAPES.sub(b"", data).decode(errors="replace")
            if all(w in text for w in words):
                return text

    try:
        return await asyncio.wait_for(read(), APP_TIMEOUT)
    except TimeoutError:
        pytest.fail(f"the app never showed {words}; it sent {len(data)} bytes")


async def test_a_tab_runs_the_app_and_closing_it_stops_the_app(web: Web) -> None:
    web.start("--port", "0", tty=True)
    async with aiohttp.ClientSession() as http:
        async with http.get(web.url("/")) as page:
            body = await page.text()
        assert page.status == 200
        assert "textual.js" in body  # textual-serve's terminal page
        assert f'data-session-websocket-url="ws://127.0.0.1:{web.port}/ws"' in body
        async with http.ws_connect(web.url("/ws", "width=100&height=30")) as ws:
            # The task list's header and the view tabs: this is our app, drawn for the tab.
            await screen_text(ws, "NAME", "Output", "Questions")
            assert len(web.apps()) == 1
        wait_until(lambda: not web.apps(), "the tab's app exits when the tab closes")
    assert web.proc is not None and web.proc.poll() is None, "the server outlives its tabs"


async def test_two_tabs_are_two_viewers_of_one_daemon(web: Web, tmp_path: Path) -> None:
    """A task submitted from a shell shows in both tabs, live; closing them leaves it running."""
    web.start("--port", "0", tty=True)
    gate = tmp_path / "go"
    task = tmp_path / "t.yaml"
    task.write_text(
        "name: shared-build\nagent:\n  type: shell\n  instructions: "
        f"'until [ -e {gate} ]; do sleep 0.05; done'\n"
    )
    async with aiohttp.ClientSession() as http:
        async with (
            http.ws_connect(web.url("/ws")) as one,
            http.ws_connect(web.url("/ws")) as two,
        ):
            await screen_text(one, "NAME")
            await screen_text(two, "NAME")
            assert len(web.apps()) == 2
            run = subprocess.Popen(
                [*TUI, "run", str(task), "--db", str(web.db)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            await screen_text(one, "shared-build", "running")
            await screen_text(two, "shared-build", "running")
        wait_until(lambda: not web.apps(), "both tabs' apps exit")
        gate.touch()  # the run outlived both tabs; the `tui run` following it sees it finish
        out, err = run.communicate(timeout=60)
        assert run.returncode == 0, err
        assert "running → done" in " ".join(out.split())


async def test_stopping_the_server_stops_the_tab_apps(web: Web) -> None:
    web.start("--port", "0", tty=True)
    async with aiohttp.ClientSession() as http, http.ws_connect(web.url("/ws")) as ws:
        await screen_text(ws, "NAME")
        assert len(web.apps()) == 1
        assert web.stop() == 0
        assert web.apps() == []
    assert "Traceback" not in web.output()


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0"])
async def test_every_host_needs_the_token(web: Web, host: str) -> None:
    """Loopback included: any local user can reach 127.0.0.1."""
    web.start("--host", host, "--port", "0", tty=True)
    assert web.token, web.output()  # generated and printed in the URL, to the terminal only
    async with aiohttp.ClientSession() as http:
        for query in ("", "?token=wrong"):
            async with http.get(f"{web.base}/{query}") as res:
                assert res.status == 401
                assert "token" in await res.text()
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await http.ws_connect(f"{web.base}/ws")
        assert refused.value.status == 401
        async with http.get(f"{web.base}/?token={web.token}") as res:
            assert res.status == 200
            assert "textual.js" in await res.text()
            assert res.cookies[f"tui_web_token_{web.port}"]["httponly"]
    assert web.apps() == []


async def test_token_from_the_environment_is_used_and_kept_from_apps(web: Web) -> None:
    web.start("--host", "0.0.0.0", "--port", "0", env={"TUI_WEB_TOKEN": "s3cret-token"})
    assert "s3cret-token" not in web.output()  # the output is a file here: never written to it
    # As a browser does: the page sets a cookie (the jar must accept IP hosts), and the
    # page's own websocket carries it with the page's origin.
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        async with http.get(f"{web.base}/?token=s3cret-token") as res:
            assert res.status == 200
        async with http.ws_connect(f"{web.base}/ws", headers={"Origin": web.base}) as ws:
            await screen_text(ws, "NAME")
            [app] = web.apps()
            environ = Path(f"/proc/{app}/environ").read_bytes()
            assert b"TUI_WEB_TOKEN" not in environ  # nor in the tasks it runs


async def test_foreign_pages_and_host_names_are_refused(web: Web) -> None:
    web.start("--port", "0", tty=True)
    async with aiohttp.ClientSession() as http:
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await http.ws_connect(web.url("/ws"), headers={"Origin": "http://evil.example"})
        assert refused.value.status == 403
        # DNS rebinding: a foreign name resolving to 127.0.0.1 (even with the token).
        async with http.get(web.url("/"), headers={"Host": "evil.example"}) as res:
            assert res.status == 403
    assert web.apps() == []


def test_port_in_use_and_bad_host_are_clear_errors(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for args, message in (
            (["--port", str(port), "--token", "t"], f"port {port} is in use"),
            (["--host", "no-such-host.invalid", "--token", "t"], "--host no-such-host.invalid"),
            (["--host", "192.0.2.1", "--token", "t"], "not an address of this machine"),
            (["--port", "70000"], "not a port number"),
            # A generated token would have to go to captured output: refused instead.
            (["--host", "0.0.0.0", "--port", "0"], "set $TUI_WEB_TOKEN"),
            (["--port", "0"], "set $TUI_WEB_TOKEN"),
        ):
            res = subprocess.run(
                [*TUI, "web", "--db", str(tmp_path / "t.db"), *args],
                capture_output=True,
                text=True,
                timeout=60,
                stdin=subprocess.DEVNULL,
                env={k: v for k, v in os.environ.items() if k != "TUI_WEB_TOKEN"},
            )
            assert res.returncode != 0, res
            assert message in res.stderr, res.stderr
            assert "Traceback" not in res.stderr + res.stdout


OTHER_USER = f"tui-test-{os.getpid()}"  # one per test run: concurrent runs keep their own
# Run as the other user by a system Python (ours may live where only root can read): stdlib
# only. Prints {"status": HTTP status, "screen": text of the app's first frames}.
PEER_CLIENT = r"""
import base64, json, os, re, socket, sys, time
port, path = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port), timeout=60)
key = base64.b64encode(os.urandom(16)).decode()
ws = path.startswith("/ws")
head = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
if ws:
    head += f"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
    head += "Sec-WebSocket-Version: 13\r\n"
s.sendall((head + "Connection: close\r\n\r\n" if not ws else head + "\r\n").encode())
buf = b""
while b"\r\n\r\n" not in buf:
    chunk = s.recv(4096)
    if not chunk:
        break
    buf += chunk
status = int(buf.split(b" ", 2)[1])
buf = buf.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in buf else b""
screen = b""
def need(n):
    global buf
    while len(buf) < n:
        chunk = s.recv(65536)
        if not chunk:
            raise EOFError
        buf += chunk
    out, buf = buf[:n], buf[n:]
    return out
deadline = time.monotonic() + 60
while status == 101 and b"NAME" not in re.sub(rb"\x1b\[[0-9;?]*[ -/]*[@-~]", b"", screen):
    if time.monotonic() > deadline:
        break
    b0, b1 = need(2)
    n = b1 & 0x7F
    if n == 126:
        n = int.from_bytes(need(2), "big")
    elif n == 127:
        n = int.from_bytes(need(8), "big")
    payload = need(n)
    if b0 & 0x0F == 2:
        screen += payload
print(json.dumps({"status": status, "screen": screen.decode(errors="replace")}))
"""


@pytest.fixture(scope="session")
def other_user() -> Iterator[str]:
    """A second local account for this run, removed after it: nothing stays on the machine."""
    if os.geteuid() != 0:
        pytest.skip("needs root to create a second local user (useradd) and act as it (runuser)")
    if not (
        shutil.which("useradd") and shutil.which("runuser") and Path("/usr/bin/python3").exists()
    ):
        pytest.skip("needs useradd, runuser and /usr/bin/python3 for the second local user")
    subprocess.run(
        ["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", OTHER_USER],
        check=True,
        capture_output=True,
    )
    try:
        yield OTHER_USER
    finally:
        subprocess.run(["userdel", OTHER_USER], check=True, capture_output=True)


def as_other_user(user: str, port: int, path: str) -> dict[str, object]:
    res = subprocess.run(
        ["runuser", "-u", user, "--", "/usr/bin/python3", "-c", PEER_CLIENT, str(port), path],
        capture_output=True,
        text=True,
        timeout=120,
        cwd="/",
    )
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_another_local_user_needs_the_token_on_loopback(web: Web, other_user: str) -> None:
    """Another account on this machine reaches 127.0.0.1 like anyone: without the token it
    gets 401 and no app runs as us; with the token (as from the printed URL) it works."""
    web.start("--port", "0", tty=True)
    for path in ("/", "/ws", "/?token=wrong", "/ws?token=wrong"):
        assert as_other_user(other_user, web.port, path)["status"] == 401, path
    assert web.apps() == []
    assert as_other_user(other_user, web.port, f"/?token={web.token}")["status"] == 200
    reply = as_other_user(other_user, web.port, f"/ws?token={web.token}")
    assert reply["status"] == 101
    assert "NAME" in str(reply["screen"])  # our app's task list, drawn for that tab


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def test_bad_page_messages_close_their_tab_with_the_reason(web: Web) -> None:
    """Messages textual-serve's page never sends end that tab with code 1003 and the reason
    (its own loop raised on `[]` or `["stdin", 5]`, a traceback in the server's output)."""
    web.start("--port", "0", tty=True)
    cases = {
        "hello": "not a JSON message",
        "[]": 'a message is ["type", data]',
        '{"type": "stdin"}': 'a message is ["type", data]',
        '["stdin", 5]': "stdin: text expected, got 5",
        '["resize", {"width": "wide", "height": 3}]': 'resize: {"width": N, "height": N}',
        "[" * 100_000: "not a JSON message",
    }
    async with aiohttp.ClientSession() as http:
        for bad, reason in cases.items():
            async with http.ws_connect(web.url("/ws")) as ws:
                await ws.send_str(bad)
                async with asyncio.timeout(APP_TIMEOUT):
                    while (msg := await ws.receive()).type == aiohttp.WSMsgType.BINARY:
                        pass  # the app's screen, drawn before the message was read
                assert msg.type == aiohttp.WSMsgType.CLOSE, msg
                assert ws.close_code == 1003 and reason in (msg.extra or ""), (bad[:40], msg)
        # A request line aiohttp cannot parse: a 400 and one line, not a traceback.
        async with http.get(f"{web.base}/{'a' * 20000}") as res:
            assert res.status == 400
        async with http.get(web.url("/", "fontsize=-5")) as res:
            assert 'data-font-size="16"' in await res.text()  # not a negative font
        async with http.ws_connect(web.url("/ws")) as ws:  # and a good tab still works
            await screen_text(ws, "NAME")
            await ws.send_str('["ping", "still there?"]')
            async with asyncio.timeout(APP_TIMEOUT):
                while (msg := await ws.receive()).type == aiohttp.WSMsgType.BINARY:
                    pass
            assert msg.json() == ["pong", "still there?"]
    wait_until(lambda: not web.apps(), "every tab's app exits")
    output = web.output()
    assert "Traceback" not in output, output
    assert output.count("tui web: closed a tab:") == len(cases), output
    assert "LineTooLong" in output


async def test_a_huge_terminal_size_from_the_page_is_capped(web: Web) -> None:
    """A page asking for 100000 × 100000 cells (in the URL or a resize) gets at most
    1000 × 500: the app drawing the asked size grew by about 100 MB a second."""
    web.start("--port", "0", tty=True)
    huge = web.url("/ws", "width=100000&height=100000")
    async with aiohttp.ClientSession() as http, http.ws_connect(huge) as ws:
        await screen_text(ws, "NAME")
        [app] = web.apps()
        await ws.send_str('["resize", {"width": 100000, "height": 100000}]')
        peak = rss_mb(app)
        loop = asyncio.get_running_loop()
        end = loop.time() + 8.0  # the app at work on the new size, its memory watched
        while loop.time() < end and peak < 400:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.2):
                    await ws.receive()
            peak = max(peak, rss_mb(app))
        assert peak < 400, f"the tab's app grew to {peak:.0f} MB"


async def test_tabs_beyond_max_tabs_are_closed_with_the_reason(web: Web) -> None:
    """Every tab runs an app process (~80 MB): one past --max-tabs gets no app, and a close
    that says why; once a tab closes, a new one opens."""
    web.start("--port", "0", "--max-tabs", "1", tty=True)
    async with aiohttp.ClientSession() as http:
        async with http.ws_connect(web.url("/ws")) as first:
            await screen_text(first, "NAME")
            async with http.ws_connect(web.url("/ws")) as extra:
                async with asyncio.timeout(APP_TIMEOUT):
                    msg = await extra.receive()
                assert msg.type == aiohttp.WSMsgType.CLOSE, msg
                assert extra.close_code == 1013
                assert "1 tab is open (--max-tabs 1): close one" in (msg.extra or "")
            assert len(web.apps()) == 1
        wait_until(lambda: not web.apps(), "the first tab's app exits")
        async with http.ws_connect(web.url("/ws")) as again:
            await screen_text(again, "NAME")
    assert "tui web: refused a tab:" in web.output()
    assert "Traceback" not in web.output()


def test_max_tabs_must_be_a_positive_number(tmp_path: Path) -> None:
    done = subprocess.run(
        [*TUI, "web", "--db", str(tmp_path / "x.db"), "--max-tabs", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "'0' is not a number of tabs (1 or more)" in done.stderr
    assert "Traceback" not in done.stderr
