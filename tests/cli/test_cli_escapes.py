"""A task file's text reaches the terminal as text: escape sequences in a name (a retitled
window, a cleared screen, colours) are shown escaped by `tui run` and `tui ls`."""

from __future__ import annotations

from tests.cli.cli_support import Tui, shell_task, write_tasks

HOSTILE = "evil\x1b]0;pwned\x07\x1b[2J\x9b31m"


def test_control_characters_in_a_name_are_shown_escaped(tui: Tui) -> None:
    f = write_tasks(tui.dir / "t.yaml", [shell_task(HOSTILE, "true")])
    run = tui("run", str(f))
    assert run.returncode == 0, str(run)
    ls = tui("ls")
    for out in (run.stdout, ls.stdout):
        assert not any(c in out for c in "\x1b\x07\x9b"), repr(out)
        assert "evil\\x1b]0;pwned\\x07\\x1b" in out, repr(out)  # `ls` cuts it at 24
    assert "evil\\x1b]0;pwned\\x07\\x1b[2J" in run.stdout, repr(run.stdout)
    assert [t["name"] for t in tui.ls()] == [HOSTILE]  # stored as written; --json escapes it


def test_a_newline_or_tab_in_a_name_keeps_each_task_on_one_line(tui: Tui) -> None:
    broken = "two\nlines\tand a tab"
    f = write_tasks(tui.dir / "t.yaml", [shell_task(broken, "exit 3"), shell_task("b", "true")])
    run = tui("run", str(f))
    assert run.returncode == 1, str(run)
    ls = tui("ls")
    for out in (run.stdout, ls.stdout):
        assert "two\\nlines\\tand a tab" in out, repr(out)
        assert "\t" not in out, repr(out)
        assert not any(line.startswith("lines") for line in out.splitlines()), repr(out)
    # Every `tui ls` row has its columns where the header puts them.
    header, *rows = ls.stdout.splitlines()
    assert len(rows) == 2, repr(ls.stdout)
    for row in rows:
        assert row[header.index("STATE") :].split()[0] in ("done", "failed"), repr(row)
    # `tui run`: one line per transition, the state columns lined up.
    arrows = {line.index("→") for line in run.stdout.splitlines()}
    assert len(arrows) == 1, repr(run.stdout)
    assert broken in [t["name"] for t in tui.ls()]  # stored as written; --json keeps it raw
