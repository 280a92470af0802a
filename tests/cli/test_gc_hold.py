"""`tui run` holds the garbage collector from its first import until its tasks are loaded, then
freezes what it built: a collection mid-launch walked every task loaded so far. Pinned as a
count (load-independent); the time it saves is bench_launch.py's."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

from tests.cli.cli_support import Tui, shell_task, write_tasks
from tui.gc_tuning import YOUNG, hold_gc, settle_gc

# Counts the collections `tui ARGS...` makes from its start to its tasks loaded, and after.
PROBE = """
import gc, json, sys
seen = {"launch": 0, "after": 0, "loaded": False}
def on_gc(phase, info):
    if phase == "start":
        seen["after" if seen["loaded"] else "launch"] += 1
import tui.config.task_files as tf
import tui.gc_tuning  # what main imports to hold the collector: compiled first if stale
load = tf.load_files
def loaded(*a, **k):
    r = load(*a, **k)
    seen["loaded"] = True
    return r
tf.load_files = loaded
from tui.cli.main import main
gc.callbacks.append(on_gc)
code = main(sys.argv[1:])
print(json.dumps({"code": code, "enabled": gc.isenabled(), "threshold": gc.get_threshold(),
                  **seen}), file=sys.stderr)
"""


def test_run_collects_nothing_while_it_loads_and_gives_the_collector_back(
    tui: Tui, tmp_path: Path
) -> None:
    f = write_tasks(tmp_path / "t.yaml", [shell_task(f"t{i}", "true") for i in range(400)])
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, "run", str(f), "--db", str(tui.db)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tui.dir,
        stdin=subprocess.DEVNULL,
    )
    report = json.loads(proc.stderr.strip().splitlines()[-1])
    assert report["code"] == 0, proc.stderr
    assert report["loaded"] and report["launch"] == 0
    assert report["enabled"] and report["threshold"] == list(gc.get_threshold())
    assert tui.state_of("t399") == "COMPLETED"


def test_hold_then_settle_freezes_what_was_built_and_restore_undoes_both() -> None:
    before = gc.get_threshold()
    restore = hold_gc()
    try:
        assert not gc.isenabled()
        kept = [[i] for i in range(1000)]  # what a launch builds and keeps
        settle_gc()
        assert gc.isenabled() and gc.get_threshold()[0] == YOUNG
        assert gc.get_freeze_count() >= len(kept)
        settle_gc()  # a second settle changes nothing
        assert gc.get_threshold()[0] == YOUNG
    finally:
        restore()
    assert gc.isenabled() and gc.get_threshold() == before and gc.get_freeze_count() == 0
    settle_gc()  # not held: a command that never held (`tui task`) keeps the defaults
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_a_caller_that_had_the_collector_off_gets_it_back_off() -> None:
    gc.disable()
    try:
        restore = hold_gc()
        settle_gc()
        restore()
        assert not gc.isenabled()
    finally:
        gc.enable()
