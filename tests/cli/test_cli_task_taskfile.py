"""`tui task` with the project's Taskfile: listed beside the config's templates, run with the
real go-task and arguments after `--`, failing with the task's own exit code."""

from __future__ import annotations

import json

from tests.cli.cli_support import Tui
from tests.taskfile.conftest import write_real_constructs, write_taskfile


def test_taskfile_tasks_are_templates(tui: Tui) -> None:
    write_taskfile(tui.dir)
    res = tui("task", "--list", "--json")
    assert res.returncode == 0, str(res)
    listed = {t["name"]: t for t in json.loads(res.stdout)}
    assert listed["echo-args"]["source"] == "taskfile"
    assert listed["echo-args"]["description"] == "Print each argument on its own line"
    assert "helper" not in listed and "undescribed" not in listed  # internal, undescribed

    hostile = ["it's", "$(touch pwned)", "two words", "`id`"]
    run = tui("task", "echo-args", "--db", str(tui.db), "--", *hostile, db=False)
    assert run.returncode == 0, str(run)
    [task] = tui.ls()
    assert task["name"] == "echo-args" and task["state"] == "COMPLETED"
    # go-task quotes CLI_ARGS for its shell: each value arrives whole, nothing is executed.
    assert [ln.text for ln in tui.output("stream = 1")] == [f"<{a}>" for a in hostile]
    assert not (tui.dir / "pwned").exists()


def test_a_failing_taskfile_task_fails_with_its_exit_code(tui: Tui) -> None:
    write_taskfile(tui.dir)
    res = tui("task", "fail")
    assert res.returncode == 1, str(res)
    [task] = tui.ls()
    assert task["state"] == "FAILED" and "7" in task["reason"]


def test_a_broken_taskfile_is_a_warning_and_the_rest_stays_listed(tui: Tui) -> None:
    path = write_taskfile(tui.dir, "version: '3'\ntasks: [not, a, mapping\n")
    (tui.dir / ".tui").mkdir()
    (tui.dir / ".tui" / "config.toml").write_text(
        '[tasks.notes]\ndescription = "Notes"\nprompt = "Notes: {instructions}"\n'
    )
    res = tui("task", "--list")
    assert res.returncode == 0, str(res)
    assert res.stdout.split() == ["notes", "local", "Notes"]
    assert "warning:" in res.stderr and str(path) in res.stderr
    assert "cannot be loaded:\n" in res.stderr  # go-task's lines kept as lines
    doctor = tui("doctor")
    assert doctor.returncode == 1 and "taskfile" in doctor.stdout and str(path) in doctor.stdout


def test_labels_wildcards_and_variables_from_the_command_line(tui: Tui) -> None:
    write_real_constructs(tui.dir)
    listed = tui("task", "--list")
    assert listed.returncode == 0, str(listed)
    rows = {ln.split()[0]: ln for ln in listed.stdout.splitlines()}
    assert "[build-plan9] Build for one OS" in rows["build"]
    assert rows["long"].endswith("First line of a long description")  # one line each
    assert "release:*" in rows and "Print the release notes." in rows["notes"]

    assert tui("task", "release:2.0.1").returncode == 0
    db = ("--db", str(tui.db))
    greet = tui("task", "greet", "--var", "WHO=Grace Hopper", *db, "--", "a b", db=False)
    assert greet.returncode == 0, str(greet)
    missing = tui("task", "greet")
    assert missing.returncode == 1
    states = sorted((t["name"], t["state"]) for t in tui.ls())
    assert states == [("greet", "COMPLETED"), ("greet", "FAILED"), ("release:2.0.1", "COMPLETED")]
    [failed] = [t for t in tui.ls() if t["state"] == "FAILED"]
    assert "needs variable(s) WHO" in failed["reason"]
    texts = [ln.text for ln in tui.output("stream = 1")]
    assert "releasing 2.0.1" in texts and "hello Grace Hopper args=a b" in texts

    pattern = tui("task", "release:*")
    assert pattern.returncode == 2 and "run it by a name it matches" in pattern.stderr

    unknown = tui("task", "gret")
    assert unknown.returncode == 2 and "did you mean 'greet'?" in unknown.stderr


def test_typed_text_is_split_into_arguments_like_a_shell_would_never_run(tui: Tui) -> None:
    write_taskfile(tui.dir)
    res = tui("task", "echo-args", "x 'y z' $(id)")
    assert res.returncode == 0, str(res)
    assert [ln.text for ln in tui.output("stream = 1")] == ["<x>", "<y z>", "<$(id)>"]
    bad = tui("task", "echo-args", "unbalanced 'quote")
    assert bad.returncode == 2 and "echo-args: arguments" in bad.stderr, str(bad)
