"""A viewer's request that is cancelled stays cancelled, even when its reply lands at the same
moment. The app's refresh timer asks the daemon ten times a second; when the app quits, Textual
cancels that timer and waits for it. A cancel lost there (Python 3.11's ``asyncio.wait_for``
drops one whose awaitable finished in the same loop turn) left the timer running for ever and
the app on screen after `q` (the demo test's hang)."""

from __future__ import annotations

import asyncio

from tui.daemon.remote import RemoteEngine


async def _cancel_as_the_reply_lands(viewer: RemoteEngine, turns: int) -> tuple[bool, bool]:
    """Send a query; ``turns`` loop turns after its reply arrives (-1: before), cancel it.
    Returns (the cancel was accepted, the request ended cancelled)."""
    request = asyncio.create_task(viewer.list_tasks())
    for _ in range(1000):  # until the request is on the wire (a few loop turns)
        if viewer._pending:
            break
        await asyncio.sleep(0)
    (reply,) = viewer._pending.values()
    accepted: list[bool] = []

    def cancel_later(left: int) -> None:
        if left:
            asyncio.get_running_loop().call_soon(cancel_later, left - 1)
        else:
            accepted.append(request.cancel())

    if turns < 0:
        cancel_later(0)
    else:
        reply.add_done_callback(lambda _: cancel_later(turns))
    try:
        await request
    except asyncio.CancelledError:
        return accepted == [True], True
    return accepted == [True], False


async def test_a_cancelled_request_is_never_answered_instead(viewer: RemoteEngine) -> None:
    accepted, cancelled = await _cancel_as_the_reply_lands(viewer, -1)
    assert accepted and cancelled, "a request cancelled before its reply"
    for turns in range(6):  # every loop turn between the reply and the request resuming
        accepted, cancelled = await _cancel_as_the_reply_lands(viewer, turns)
        assert cancelled or not accepted, f"a cancel {turns} turn(s) after the reply was lost"
    # The connection is still good for the next request.
    assert await viewer.list_tasks() == []
