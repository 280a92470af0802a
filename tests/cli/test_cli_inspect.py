"""`tui ls` filters and `tui logs`: what a user sees about stored tasks."""

from __future__ import annotations

import json

import pytest

from tests.cli.cli_support import Tui, shell_task, write_tasks


@pytest.fixture
def stored(tui: Tui) -> Tui:
    """A database with two completed tasks, one failed and one cancelled."""
    f = write_tasks(
        tui.dir / "mixed.yaml",
        [
            shell_task(
                "talker",
                "echo out-1; echo err-1 >&2; echo out-2; echo err-2 >&2",
                id="alpha-1",
                tags=["noisy", "build"],
            ),
            shell_task("quiet", "true", id="alpha-2", tags=["build"]),
            shell_task("broken", "echo boom >&2; exit 1", id="beta-1"),
            shell_task("after", "echo never", id="gamma-1", depends_on=["beta-1"]),
        ],
    )
    res = tui("run", str(f))
    assert res.returncode == 1, str(res)
    return tui


def test_ls_table_shows_every_task(stored: Tui) -> None:
    res = stored("ls")
    assert res.returncode == 0, str(res)
    rows = res.stdout.splitlines()
    assert rows[0].split()[:3] == ["ID", "NAME", "STATE"]
    # The task list's words, in the STATE column: what the app shows, not the stored names.
    at = rows[0].index("STATE")
    shown = {r.split()[1]: r[at:].split()[0] for r in rows[1:]}
    assert shown == {"talker": "done", "quiet": "done", "broken": "failed", "after": "cancelled"}


def test_ls_state_filter(stored: Tui) -> None:
    assert [t["name"] for t in stored.ls("--state", "COMPLETED")] == ["talker", "quiet"]
    assert [t["name"] for t in stored.ls("--state", "failed")] == ["broken"]
    assert [t["name"] for t in stored.ls("--state", "RUNNING")] == []
    table = stored("ls", "--state", "cancelled")
    assert "after" in table.stdout and "talker" not in table.stdout


@pytest.mark.parametrize("word", ["done", "Done", "DONE", "COMPLETED", "completed"])
def test_ls_state_takes_the_lists_word_or_the_stored_name(stored: Tui, word: str) -> None:
    assert [t["name"] for t in stored.ls("--state", word)] == ["talker", "quiet"]


def test_ls_state_of_two_words_in_any_spelling(tui: Tui) -> None:
    f = write_tasks(tui.dir / "t.yaml", [shell_task("slow", "sleep 30", timeout="100ms")])
    assert tui("run", str(f)).returncode == 1
    for word in ("timed out", "timed-out", "Timed_Out", "TIMED_OUT"):
        assert [t["name"] for t in tui.ls("--state", word)] == ["slow"], word
        table = tui("ls", "--state", word)
        assert " slow " in table.stdout and " timed out " in table.stdout, word
    assert tui.ls("--state", "needs-you") == tui.ls("--state", "needs you") == []


def test_ls_failed_means_every_failure_as_the_app_counts_them(tui: Tui) -> None:
    f = write_tasks(
        tui.dir / "t.yaml",
        [
            shell_task("slow", "sleep 30", timeout="100ms"),
            shell_task("broken", "exit 3"),
            shell_task("fine", "true"),
        ],
    )
    assert tui("run", str(f)).returncode == 1
    assert sorted(t["name"] for t in tui.ls("--state", "failed")) == ["broken", "slow"]
    assert sorted(t["name"] for t in tui.ls("--state", "finished")) == ["broken", "fine", "slow"]
    assert [t["name"] for t in tui.ls("--state", "timed-out")] == ["slow"]


def test_ls_unknown_state_is_a_one_line_error_listing_the_words(stored: Tui) -> None:
    res = stored("ls", "--state", "bogus")
    assert res.returncode == 2 and res.stdout == ""
    assert len(res.stderr.splitlines()) == 1, res.stderr  # no traceback, no usage dump
    assert "--state" in res.stderr and "'bogus'" in res.stderr
    for word in ("pending", "needs-you", "done", "timed-out", "over-budget", "skipped"):
        assert word in res.stderr, res.stderr


def test_ls_help_lists_the_lists_words(tui: Tui) -> None:
    res = tui("ls", "--help", db=False)
    assert res.returncode == 0
    text = " ".join(res.stdout.split())
    assert "needs-you, blocked, done, failed, timed-out, cancelled, over-budget" in text


def test_ls_tag_filter(stored: Tui) -> None:
    assert [t["name"] for t in stored.ls("--tag", "build")] == ["talker", "quiet"]
    assert [t["name"] for t in stored.ls("--tag", "noisy")] == ["talker"]
    assert stored.ls("--tag", "nothing-has-this") == []
    both = stored.ls("--tag", "build", "--state", "COMPLETED")
    assert [t["name"] for t in both] == ["talker", "quiet"]


def test_ls_json_fields(stored: Tui) -> None:
    res = stored("ls", "--json")
    tasks = json.loads(res.stdout)
    assert [t["id"] for t in tasks] == ["alpha-1", "alpha-2", "beta-1", "gamma-1"]
    after = tasks[3]
    assert after["depends_on"] == ["beta-1"]
    assert after["state"] == "CANCELLED" and "broken" in after["reason"]
    assert tasks[2]["attempts"] == 1 and tasks[2]["cost_usd"] == 0


def test_logs_prints_both_streams_in_order(stored: Tui) -> None:
    res = stored("logs", "talker")
    assert res.returncode == 0, str(res)
    lines = res.stdout.splitlines()
    assert sorted(lines) == ["err-1", "err-2", "out-1", "out-2"]
    # Order is kept within each stream.
    assert lines.index("out-1") < lines.index("out-2")
    assert lines.index("err-1") < lines.index("err-2")


def test_logs_stream_filter(stored: Tui) -> None:
    assert stored("logs", "talker", "--stream", "stderr").stdout == "err-1\nerr-2\n"
    assert stored("logs", "talker", "--stream", "stdout").stdout == "out-1\nout-2\n"
    # A failed task's stderr carries its own output; stdout is empty.
    assert "boom" in stored("logs", "broken", "--stream", "stderr").stdout
    assert stored("logs", "broken", "--stream", "stdout").stdout == ""


@pytest.mark.parametrize("ref", ["talker", "alpha-1", "alpha-1"[:7], "alph" + "a-1"])
def test_task_given_by_name_id_or_unique_prefix(stored: Tui, ref: str) -> None:
    res = stored("logs", ref, "--stream", "stdout")
    assert res.returncode == 0, str(res)
    assert res.stdout == "out-1\nout-2\n"


def test_unique_prefix(stored: Tui) -> None:
    assert stored("logs", "gam").returncode == 0
    assert "boom" in stored("logs", "bet", "--stream", "stderr").stdout


def test_ambiguous_prefix_is_a_clear_error(stored: Tui) -> None:
    res = stored("logs", "alpha")
    assert res.returncode != 0
    assert res.stdout == ""
    assert "matches 2 tasks" in res.stderr
    assert "alpha-1" in res.stderr and "alpha-2" in res.stderr


def test_logs_follow_ends_when_task_is_final(stored: Tui) -> None:
    res = stored("logs", "--follow", "talker", "--stream", "stdout", timeout=30)
    assert res.returncode == 0
    assert res.stdout == "out-1\nout-2\n"
