"""A person answering from another shell while `tui run` works: `tui questions`, `tui answer`,
`tui accept` / `tui reject`, each delivered exactly once."""

from __future__ import annotations

import json
import shlex
import subprocess

from tests.cli.cli_support import TUI, Lines, Tui, shell_task, wait_until, write_tasks

ASK = 'echo "got $(tui ask "Which database?" --option SQLite --option PostgreSQL)"'


def open_questions(tui: Tui) -> list[dict]:
    res = tui("questions", "--json")
    assert res.returncode == 0, str(res)
    return json.loads(res.stdout)


def test_answer_from_another_shell(tui: Tui) -> None:
    f = write_tasks(tui.dir / "ask.yaml", shell_task("pick", ASK))
    run = tui.popen("run", str(f))
    # `tui questions` never creates the database: ask once `tui run` has made it.
    wait_until(lambda: tui.db.exists() and len(open_questions(tui)) == 1, "the question", proc=run)
    [q] = open_questions(tui)
    assert q["task_name"] == "pick" and q["kind"] == "question"
    assert [o["label"] for o in q["payload"]["questions"][0]["options"]] == ["SQLite", "PostgreSQL"]
    text = tui("questions")
    assert "1. SQLite" in text.stdout and "2. PostgreSQL" in text.stdout
    assert tui.state_of("pick") == "READY"

    typo = tui("answer", q["id"][:8], "9")  # not an option: an error, not the answer "9"
    assert typo.returncode == 1, str(typo)
    assert "1. SQLite, 2. PostgreSQL" in typo.stderr and "--text" in typo.stderr
    assert tui("answer", q["id"][:8], "Postgres").returncode == 1
    res = tui("answer", q["id"][:8], "2")
    assert res.returncode == 0, str(res)
    again = tui("answer", q["id"][:8], "1")
    assert again.returncode == 1 and "already answered" in again.stderr

    run.communicate(timeout=60)
    assert run.returncode == 0
    assert [ln.text for ln in tui.output()] == ["got PostgreSQL"]
    assert open_questions(tui) == []


def test_free_text_answer_with_text(tui: Tui) -> None:
    f = write_tasks(tui.dir / "ask.yaml", shell_task("pick", ASK))
    run = tui.popen("run", str(f))
    wait_until(lambda: tui.db.exists() and len(open_questions(tui)) == 1, "the question", proc=run)
    [q] = open_questions(tui)
    res = tui("answer", q["id"][:8], "--text", "DuckDB, embedded")
    assert res.returncode == 0, str(res)
    run.communicate(timeout=60)
    assert [ln.text for ln in tui.output()] == ["got DuckDB, embedded"]


def test_review_reject_then_accept_from_another_shell(tui: Tui) -> None:
    script = 'echo "draft ${TUI_REJECTION_COMMENT:-one}"'
    f = write_tasks(tui.dir / "review.yaml", shell_task("essay", script, review=True))
    run = tui.popen("run", str(f))
    wait_until(lambda: tui.state_of("essay") == "READY", "the review", proc=run)
    [q] = open_questions(tui)
    assert q["kind"] == "review" and q["payload"]["result"] == "draft one"

    assert tui("reject", "essay", "--comment", "make it two").returncode == 0
    wait_until(
        lambda: [x["payload"].get("result") for x in open_questions(tui)] == ["draft make it two"],
        "the second draft",
        proc=run,
    )
    assert tui("accept", "essay").returncode == 0
    run.communicate(timeout=60)
    assert run.returncode == 0
    assert tui.state_of("essay") == "COMPLETED"


def test_the_printed_accept_command_is_one_line_that_works_when_pasted(tui: Tui) -> None:
    """A name (and a database path) with a newline, a quote and an escape: `tui run` prints
    each hint on one line, and that line, given to a shell as it is, accepts the task."""
    name = "two\nlines 'q' \x1b[2J"
    tui.db = tui.dir / "a\nb.db"
    f = write_tasks(tui.dir / "review.yaml", shell_task(name, "echo draft", review=True))
    run = tui.popen("run", str(f))
    out = Lines(run.stdout)
    hint = out.until(r"^    accept: (.+?)   reject: (.+)$")
    assert "\x1b" not in hint.string and "\\x1b" in hint.string
    accept, reject = hint.group(1), hint.group(2)
    assert reject.endswith(" --comment TEXT")
    pasted = subprocess.run(
        ["bash", "-c", accept.replace("tui ", shlex.join(TUI) + " ", 1)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tui.dir,
    )
    assert pasted.returncode == 0, pasted.stderr
    assert run.wait(timeout=60) == 0
    assert tui.state_of(name) == "COMPLETED"
