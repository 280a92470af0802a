"""`transfer: summary` through the real `tui` command: `tui run` a file, then `tui ls --json`
shows each summarised upstream task's summary and its size before and after."""

from __future__ import annotations

from tests.cli.cli_support import Tui, write_tasks


def test_tui_ls_json_shows_the_summary_and_its_sizes(tui: Tui) -> None:
    f = write_tasks(
        tui.dir / "wf.yaml",
        {
            "summarizer": {"strategy": "aggressive"},
            "tasks": [
                {"name": "build", "agent": {"type": "shell", "instructions": "seq 100 120"}},
                {
                    "name": "report",
                    "depends_on": ["build"],
                    "context": {"transfer": "summary"},
                    "agent": {"type": "shell", "instructions": 'cat "$TUI_CONTEXT_FILE"'},
                },
            ],
        },
    )
    res = tui("run", str(f), timeout=90)
    assert res.returncode == 0, str(res)
    tasks = tui.by_name()
    assert tasks["report"]["state"] == "COMPLETED"
    summary = tasks["build"]["summary"]
    assert summary["summary"] == "build completed: success"
    assert summary["size_before"] == len(tasks["build"]["result"]) > summary["size_after"]
    assert summary["size_after"] == len("build completed: success")
    printed = "".join(ln.text for ln in tui.output("task_id = ?", (tasks["report"]["id"],)))
    assert "build completed: success" in printed and "result" not in printed


def test_a_long_result_is_compacted_by_the_config_summarizer(tui: Tui) -> None:
    """config.toml's `[summarizer] compaction` reaches a file `tui run` loads: the long
    result is compacted by a real subprocess, the short one is not, and `tui ls --json`
    shows the compacted form's sizes with the upstream task."""
    answer = '{"summary": "3000 x", "key_outputs": [], "decisions": [], "errors": []}'
    (tui.dir / "answer.json").write_text(answer + "\n")
    (tui.dir / ".tui").mkdir()
    (tui.dir / ".tui" / "config.toml").write_text(
        "[summarizer]\n"
        'agent = "shell"\n'
        f"prompt = 'cat \"{tui.dir / 'answer.json'}\"'\n"
        "compaction = {threshold = 1000}\n"
    )
    f = write_tasks(
        tui.dir / "wf.yaml",
        {
            "tasks": [
                {
                    "name": "big",
                    "agent": {"type": "shell", "instructions": "printf 'x%.0s' $(seq 3000)"},
                },
                {"name": "small", "agent": {"type": "shell", "instructions": "echo hi"}},
                {
                    "name": "report",
                    "depends_on": ["big", "small"],
                    "context": {"transfer": "full"},
                    "agent": {"type": "shell", "instructions": 'cat "$TUI_CONTEXT_FILE"'},
                },
            ],
        },
    )
    res = tui("run", str(f), timeout=90)
    assert res.returncode == 0, str(res)
    tasks = tui.by_name()
    assert tasks["compact:big"]["state"] == "COMPLETED"
    assert tasks["compact:small"]["state"] == "SKIPPED"
    kept = tasks["big"]["summary"]
    assert kept["strategy"] == "compacted" and kept["summary"]["summary"] == "3000 x"
    assert kept["size_before"] == 3000 and kept["size_after"] == len(answer)
    printed = "".join(ln.text for ln in tui.output("task_id = ?", (tasks["report"]["id"],)))
    assert '"summary": "3000 x"' in printed and "xxx" not in printed
    assert '"small": {' in printed and '"result": "hi"' in printed
