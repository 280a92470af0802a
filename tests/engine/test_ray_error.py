"""How a Ray failure reads in `tui doctor` and a task's output: one line."""

from __future__ import annotations

from tui.engine.ray_driver import ray_error

# What Ray Client raised in a run of tests/cli/test_ray_executor.py (a client server that
# could not start): the server's traceback as the message.
SERVER_FAILURE = """Initialization failure from server:
Traceback (most recent call last):
  File "/x/ray/util/client/server/proxier.py", line 772, in Datapath
    raise RuntimeError(
RuntimeError: Starting Ray client server failed. See ray_client_server_23000.err for detailed logs.
"""


def test_a_server_traceback_becomes_what_failed() -> None:
    said = ray_error(ConnectionError(SERVER_FAILURE))
    assert said == (
        "Initialization failure from server: RuntimeError: Starting Ray client server failed."
        " See ray_client_server_23000.err for detailed logs."
    )


def test_plain_messages_stay_as_they_are_on_one_line() -> None:
    assert ray_error(ConnectionError("Connection refused")) == "Connection refused"
    assert ray_error(ConnectionError("a\nb")) == "a b"
    assert ray_error(TimeoutError()) == "TimeoutError"
