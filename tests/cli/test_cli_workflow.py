"""Workflows through the real `tui` command: the sample workflow end to end, results in
`tui ls --json`, and a kill -9 of the engine in the middle of a workflow."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from tests.cli.cli_support import Tui, marker_processes, wait_until

SAMPLE = Path(__file__).resolve().parents[2] / "sample_tasks" / "workflow.yaml"


def test_the_sample_workflow_runs_end_to_end(
    tui: Tui, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hook_log = tmp_path / "hooks.jsonl"
    monkeypatch.setenv("TUI_HOOK_LOG", str(hook_log))
    res = tui("run", str(SAMPLE), timeout=120)
    # Skipped tasks are a pipeline that finished: exit 0.
    assert res.returncode == 0, str(res)
    assert "12 tasks: 10 done, 2 skipped" in res.stderr
    tasks = tui.by_name()
    assert {n: t["state"] for n, t in tasks.items()} == {
        "analyze": "COMPLETED",
        "celebrate": "COMPLETED",
        "console": "SKIPPED",
        "flaky-lint": "SKIPPED",
        "report": "COMPLETED",
        "digest": "COMPLETED",
        "per-file": "COMPLETED",
        "per-file[0]": "COMPLETED",
        "per-file[1]": "COMPLETED",
        "compact:per-file": "COMPLETED",
        "brief": "COMPLETED",
        "settle": "COMPLETED",
        "classify:triage": "COMPLETED",
        "triage": "COMPLETED",
    }
    assert tasks["flaky-lint"]["attempts"] == 2
    assert tasks["per-file"]["result"] == ["checked src/app.py", "checked docs/notes.md"]
    assert tasks["settle"]["result"] == "3" and tasks["settle"]["attempts"] == 3
    # Results, as `tui ls --json` shows them: parsed JSON, else the last stdout lines.
    assert tasks["analyze"]["result"] == {
        "sentiment": "positive",
        "files": ["src/app.py", "docs/notes.md"],
    }
    assert tasks["celebrate"]["result"] == (
        'positive change touching ["src/app.py", "docs/notes.md"]'
    )
    assert tasks["report"]["result"] == (
        "celebrate: COMPLETED\nconsole: SKIPPED\nflaky-lint: SKIPPED\n"
        "['celebrate', 'console', 'flaky-lint']"
    )
    # transfer: summary (aggressive): one line per branch, kept with it with its sizes.
    assert tasks["digest"]["result"] == "celebrate completed: success\nflaky-lint skipped"
    celebrate = tasks["celebrate"]["summary"]
    assert celebrate["summary"] == "celebrate completed: success"
    assert celebrate["size_before"] == len(tasks["celebrate"]["result"])
    # Compaction: per-file's result (47 characters as JSON) is over the threshold of 40.
    assert tasks["brief"]["result"] == "2 files checked"
    compacted = tasks["per-file"]["summary"]
    assert compacted["strategy"] == "compacted" and compacted["size_before"] == 47
    # The classifier chose shell for the task that left its agent out.
    assert tasks["triage"]["agent"] == "shell" and tasks["classify:triage"]["agent"] == "shell"
    assert tasks["triage"]["result"] == "triaged by a shell task"
    assert tasks["console"]["result"] is None  # never ran
    # The hooks got every completed and skipped task as JSON on stdin, one line each.
    seen = [json.loads(line) for line in hook_log.read_text().splitlines()]
    assert sorted((t["name"], t["hook"]) for t in seen) == [
        ("analyze", "on_complete"),
        ("brief", "on_complete"),
        ("celebrate", "on_complete"),
        ("console", "on_skip"),
        ("digest", "on_complete"),
        ("flaky-lint", "on_skip"),
        ("per-file", "on_complete"),
        ("per-file[0]", "on_complete"),
        ("per-file[1]", "on_complete"),
        ("report", "on_complete"),
        ("settle", "on_complete"),
        ("triage", "on_complete"),
    ]
    # `tui ls` shows the skipped state in the task list's word.
    listing = tui("ls")
    assert " skipped " in listing.stdout


WORKFLOW = """\
tasks:
  - name: first
    output_format: {{type: json, schema: object}}
    agent:
      type: shell
      instructions: |
        echo ran >> {runs}/first
        echo '{{"go": true}}'
  - name: side
    depends_on: [first]
    when: not needs.first.result.go
    agent: {{type: shell, instructions: "echo ran >> {runs}/side"}}
  - name: hold
    depends_on: [first]
    agent:
      type: shell
      instructions: |
        # {marker}
        echo ran >> {runs}/hold
        echo holding
        if [ "$TUI_ATTEMPT" -eq 1 ]; then  # held until the engine is dead (then adopted)
          while [ ! -e {runs}/gate ]; do sleep 0.01; done
        fi
  - name: after
    depends_on: [first, hold]
    when: needs.first.result.go and needs.hold.state == 'COMPLETED'
    agent:
      type: shell
      instructions: |
        echo ran >> {runs}/after
        echo "go={{{{needs.first.result.go}}}}"
"""


def test_kill_9_in_the_middle_of_a_workflow_reruns_nothing_that_finished(
    tui: Tui, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    marker = tui.marker()
    f = tmp_path / "wf.yaml"
    f.write_text(WORKFLOW.format(runs=runs, marker=marker))
    run = tui.popen("run", str(f))

    def holding() -> bool:
        return tui.state_of("hold") == "RUNNING" and any(
            ln.text == "holding" for ln in tui.output()
        )

    wait_until(holding, "hold RUNNING with its line stored", proc=run)
    assert tui.state_of("first") == "COMPLETED" and tui.state_of("side") == "SKIPPED"
    os.kill(run.pid, signal.SIGKILL)
    run.communicate(timeout=30)
    (runs / "gate").touch()

    res = tui("run", timeout=120)
    assert res.returncode == 0, str(res)
    tasks = tui.by_name()
    assert {n: t["state"] for n, t in tasks.items()} == {
        "first": "COMPLETED",
        "side": "SKIPPED",
        "hold": "COMPLETED",
        "after": "COMPLETED",
    }
    # What had finished before the crash did not run again, and its result was kept.
    assert (runs / "first").read_text() == "ran\n"
    assert not (runs / "side").exists()
    assert tasks["first"]["result"] == {"go": True}
    # The task running at the kill was adopted by the next engine, not run again.
    assert (runs / "hold").read_text() == "ran\n"
    assert (runs / "after").read_text() == "ran\n"
    assert tasks["after"]["result"] == "go=true"
    moves = [(n, frm, to) for _, n, frm, to, _ in tui.transitions()]
    assert moves.count(("side", "PENDING", "SKIPPED")) == 1
    assert moves.count(("first", "RUNNING", "COMPLETED")) == 1
    assert moves.count(("hold", "QUEUED", "RUNNING")) == 1
    assert marker_processes(marker) == []


def test_config_defaults_apply_below_the_files_own(tui: Tui, tmp_path: Path) -> None:
    config = tmp_path / "user-config"
    config.mkdir()
    log = tmp_path / "skipped.jsonl"
    (config / "config.toml").write_text(
        '[settings]\non_error = "skip"\n\n[settings.hooks]\n'
        f'on_skip = ["sh", "-c", "cat >> {log}"]\n'
    )
    f = tmp_path / "d.yaml"
    f.write_text(
        "tasks:\n"
        "  - {name: lenient, agent: {type: shell, instructions: 'exit 1'}}\n"
        "  - {name: strict, on_error: fail, agent: {type: shell, instructions: 'exit 1'}}\n"
    )
    res = tui("run", str(f), timeout=120)
    assert res.returncode == 1, str(res)
    states = {n: t["state"] for n, t in tui.by_name().items()}
    assert states == {"lenient": "SKIPPED", "strict": "FAILED"}
    assert [json.loads(x)["name"] for x in log.read_text().splitlines()] == ["lenient"]


def _running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def test_a_hook_hanging_when_the_engine_is_killed_still_ends_at_its_timeout(
    tui: Tui, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    hook = ["bash", "-c", f"sleep 600 & echo $$ $! > {pids}.tmp; mv {pids}.tmp {pids}; wait"]
    f = tmp_path / "h.yaml"
    marker = tui.marker()
    f.write_text(
        "name: t\n"
        f"hooks: {{on_start: {json.dumps(hook)}, timeout: 2s}}\n"
        "agent:\n  type: shell\n  instructions: |\n"
        f"    # {marker}\n"  # held until the engine is dead (then the next one adopts it)
        f'    if [ "$TUI_ATTEMPT" -eq 1 ]; then while [ ! -e {tmp_path}/gate ]; do sleep 0.01;'
        " done; fi\n"
    )
    run = tui.popen("run", str(f))
    wait_until(pids.exists, "the hook started", proc=run)
    os.kill(run.pid, signal.SIGKILL)
    run.communicate(timeout=30)
    hook_pids = [int(p) for p in pids.read_text().split()]
    # Nobody is left to time it out but the hook's own bound.
    wait_until(lambda: not any(_running(p) for p in hook_pids), "the hook's group ended", 30)
    # The next run adopts the task's held first attempt and finishes it.
    (tmp_path / "gate").touch()
    res = tui("run", timeout=120)
    assert res.returncode == 0, str(res)
    assert marker_processes(marker) == []


def test_tui_run_prints_a_failing_hook_and_the_task_stays_completed(
    tui: Tui, tmp_path: Path
) -> None:
    f = tmp_path / "f.yaml"
    hook = ["sh", "-c", "echo cannot reach the chat server >&2; exit 7"]
    f.write_text(
        f"name: t\nhooks: {{on_complete: {json.dumps(hook)}}}\n"
        "agent: {type: shell, instructions: 'echo done'}\n"
    )
    res = tui("run", str(f), timeout=120)
    assert res.returncode == 0, str(res)
    failed = "hook on_complete failed: exit code 7: cannot reach the chat server"
    assert f"{'t':<24} {failed}" in res.stdout
    assert tui.state_of("t") == "COMPLETED"
