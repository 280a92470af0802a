"""`tui run FILE` twice while the first copy still runs: refused without a terminal (with the
flag that forces it), and the ambiguous name reported with the ids to use."""

from __future__ import annotations

from tests.cli.cli_support import Tui, shell_task, wait_until, write_tasks


def test_running_a_file_again_is_refused_then_forced(tui: Tui) -> None:
    release = tui.dir / "release"
    f = write_tasks(
        tui.dir / "build.yaml",
        [shell_task("build", f"while [ ! -e '{release}' ]; do sleep 0.02; done")],
    )
    first = tui.popen("run", str(f), "--manual-approve")
    wait_until(lambda: tui.state_of("build") == "PENDING", "the first copy", proc=first)

    again = tui("run", str(f))  # stdin is not a terminal: refuse, say how to force
    assert again.returncode == 1, str(again)
    assert "already in the database, unfinished: build (" in again.stderr
    assert "--force" in again.stderr
    assert len(tui.ls()) == 1  # nothing submitted

    opened = tui("open", str(f))  # asks before it looks for an engine to attach to
    assert opened.returncode == 1 and "--force" in opened.stderr, str(opened)

    forced = tui.popen("run", str(f), "--force", "--manual-approve")
    wait_until(lambda: len(tui.ls()) == 2, "the second copy", proc=forced)
    ids = [t["id"] for t in tui.ls()]
    assert tui("approve", ids[0]).returncode == 0
    assert tui("approve", ids[1]).returncode == 0
    release.touch()
    _, err = forced.communicate(timeout=60)
    assert "'build' now names several tasks: use an id" in err
    assert all(i[:8] in err for i in ids)
    first.communicate(timeout=60)
    ambiguous = tui("logs", "build")
    assert ambiguous.returncode != 0 and ids[0][:8] in ambiguous.stderr
