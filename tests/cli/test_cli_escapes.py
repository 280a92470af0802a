"""A task file's text reaches the terminal as text: escape sequences in a name (a retitled
window, a cleared screen, colours) are shown escaped by `tui run` and `tui ls`."""

from __future__ import annotations

from cli_support import Tui, shell_task, write_tasks

HOSTILE = "evil\x1b]0;pwned\x07\x1b[2J\x9b31m"


def test_control_characters_in_a_name_are_shown_escaped(tui: Tui) -> None:
    f = write_tasks(tui.dir / "t.yaml", [shell_task(HOSTILE, "true")])
    run = tui("run", str(f))
    assert run.returncode == 0, str(run)
    ls = tui("ls")
    for out in (run.stdout, ls.stdout):
        assert not any(c in out for c in "\x1b\x07\x9b"), repr(out)
        assert "evil\\x1b]0;pwned\\x07\\x1b[2J" in out, repr(out)
    assert [t["name"] for t in tui.ls()] == [HOSTILE]  # stored as written; --json escapes it
