"""`transfer: summary` through the real `tui` command: `tui run` a file, then `tui ls --json`
shows each summarised upstream task's summary and its size before and after."""

from __future__ import annotations

import pytest

from tests.cli.cli_support import Result, Tui, write_tasks


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


def _refused(res: Result, *words: str) -> None:
    assert res.returncode != 0, str(res)
    for w in words:
        assert w in res.stderr, str(res)


@pytest.mark.parametrize("role", ["summarizer", "classifier"])
def test_a_shell_summarizer_or_classifier_without_a_prompt_is_refused_at_load(
    tui: Tui, role: str
) -> None:
    """A shell summariser or classifier runs its prompt as a bash script: without one it
    would run the built-in prose prompt as bash. `tui validate` and `tui run` refuse it,
    naming the file, the section and the fix; nothing is run."""
    task = {"name": "a", "agent": {"type": "shell", "instructions": "echo a"}}
    f = write_tasks(tui.dir / "wf.yaml", {role: {"agent": "shell"}, "tasks": [task]})
    for cmd in ("validate", "run"):
        _refused(
            tui(cmd, str(f), db=cmd == "run"),
            str(f),
            f"{role}.prompt",
            f"a shell {role} needs prompt",
        )
    assert not tui.db.exists()
    # config.toml's table: the file named is the one that made it shell without a prompt.
    plain = write_tasks(tui.dir / "plain.yaml", task)
    config = tui.dir / ".tui" / "config.toml"
    config.parent.mkdir()
    config.write_text(f'[{role}]\nagent = "shell"\n')
    for cmd in ("validate", "run"):
        _refused(
            tui(cmd, str(plain), db=cmd == "run"), str(config), f"{role}.prompt", "needs prompt"
        )
    assert not tui.db.exists()
    # With a prompt, it loads.
    config.write_text(f"[{role}]\nagent = \"shell\"\nprompt = 'echo hi'\n")
    assert tui("validate", str(plain), db=False).returncode == 0
