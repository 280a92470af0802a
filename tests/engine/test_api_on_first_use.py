"""tui.engine.api is imported with the engine but executed on first use
(tui.engine._OnFirstUse), once, even when threads race to it (the app is imported on a thread
while the main thread talks to the daemon)."""

from __future__ import annotations

import subprocess
import sys

RACE = """
import sys, threading
import tui.engine.scheduler  # imports api, does not execute it
from tui.engine import api
assert type(sys.modules["tui.engine.api"]).__name__ == "_OnFirstUse", type(api)
names = ["Subscribe", "StatusReply", "Submit", "Shutdown", "parse_request", "MESSAGES"] * 3
start = threading.Barrier(len(names))
got, failed = [], []

def use(name):
    start.wait()
    try:
        got.append(getattr(api, name))
    except Exception as e:
        failed.append(repr(e))

threads = [threading.Thread(target=use, args=(n,)) for n in names]
for t in threads:
    t.start()
for t in threads:
    t.join()
assert not failed, failed
assert type(api) is type(sys), type(api)
from tui.engine.api import Submit
assert Submit is api.Submit and len(got) == len(names)
try:
    api.NoSuchName
except AttributeError as e:
    assert "NoSuchName" in str(e)
else:
    raise AssertionError("no AttributeError")
print("ok")
"""


def test_threads_racing_to_the_api_all_get_it_whole() -> None:
    for _ in range(5):  # a fresh interpreter each time: the first use is the race
        proc = subprocess.run(
            [sys.executable, "-c", RACE], capture_output=True, text=True, timeout=120
        )
        assert proc.stdout.strip() == "ok", proc.stderr
