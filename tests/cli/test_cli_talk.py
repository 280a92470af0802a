"""`tui send` and `tui continue` through the real `tui` command: what they refuse, and why."""

from __future__ import annotations

from tests.cli.cli_support import Tui, shell_task, write_tasks


def test_send_and_continue_name_what_a_task_takes(tui: Tui) -> None:
    f = write_tasks(tui.dir / "t.yaml", [shell_task("plain", "echo hi")])
    assert tui("run", str(f)).returncode == 0
    sent = tui("send", "plain", "hello")
    assert sent.returncode == 1 and "only claude tasks take messages" in sent.stderr, str(sent)
    cont = tui("continue", "plain", "more please")
    assert cont.returncode == 1, str(cont)
    assert "only claude, codex and gemini sessions can be continued" in cont.stderr
