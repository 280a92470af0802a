"""`transfer: summary` through the real `tui` command: `tui run` a file, then `tui ls --json`
shows each summarised upstream task's summary and its size before and after."""

from __future__ import annotations

from cli_support import Tui, write_tasks


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
