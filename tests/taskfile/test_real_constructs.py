"""Taskfiles as their authors write them (labels, wildcards, prompts, required variables,
summaries, includes), listed and run with the real go-task binary."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.agents.cli_support import output, settled
from tests.conftest import question
from tests.taskfile.conftest import write_real_constructs, write_taskfile
from tui.engine.scheduler import Engine
from tui.model.states import State
from tui.model.task import Task
from tui.store.db import Store
from tui.taskfile.listing import TaskfileError, find_task, find_taskfile, list_tasks
from tui.taskfile.running import NO, YES, run_argv


@pytest.fixture
def real(tmp_path: Path) -> Path:
    write_real_constructs(tmp_path)
    return tmp_path


@pytest.fixture
async def engine(store: Store) -> AsyncIterator[Engine]:
    async with Engine(store, kill_grace=1.0) as e:
        yield e


def test_listed_by_real_name_with_label_pattern_summary_and_details(real: Path) -> None:
    tasks = {t.name: t for t in list_tasks(real)}
    assert sorted(tasks) == [
        "build",
        "deploy",
        "docker:compose:*:*",
        "greet",
        "long",
        "notes",
        "release:*",
    ]  # `secret` is internal; `notes` is described by its summary
    assert tasks["build"].label == "build-plan9" and tasks["build"].aliases == ("b",)
    assert tasks["release:*"].wildcard and tasks["docker:compose:*:*"].wildcard
    assert tasks["notes"].desc.startswith("Print the release notes.")
    assert tasks["deploy"].prompts == ("Deploy to production now?",)
    assert tasks["greet"].requires == ("WHO",)
    assert tasks["docker:compose:*:*"].file.endswith("docker.yml")


def test_a_wildcard_pattern_matches_as_go_task_matches(real: Path) -> None:
    path = find_taskfile(real)
    assert path is not None
    assert find_task(path, "release:1.2.3").name == "release:*"
    assert find_task(path, "b").name == "build"  # an alias, as go-task runs it
    assert find_task(path, "docker:compose:up:web").name == "docker:compose:*:*"
    with pytest.raises(TaskfileError, match="has no task 'docker:compose:up'"):
        find_task(path, "docker:compose:up")  # two stars need two parts


def test_unknown_internal_and_label_names_are_explained(real: Path) -> None:
    path = find_taskfile(real)
    assert path is not None
    with pytest.raises(TaskfileError) as info:
        find_task(path, "gret")
    assert "did you mean 'greet'?" in str(info.value)
    assert "deploy" not in str(info.value)  # not every name
    with pytest.raises(TaskfileError, match="'secret' is internal"):
        find_task(path, "secret")
    with pytest.raises(TaskfileError, match="'build-plan9' is the label of task 'build'"):
        find_task(path, "build-plan9")


@pytest.mark.parametrize(
    "names,found",
    [
        (["taskfile.yml"], "taskfile.yml"),
        (["Taskfile.dist.yaml"], "Taskfile.dist.yaml"),
        (["taskfile.dist.yml", "Taskfile.yaml"], "Taskfile.yaml"),
        (["Taskfile.dist.yml", "Taskfile.yml"], "Taskfile.yml"),
    ],
)
def test_discovery_follows_go_tasks_names_and_order(tmp_path: Path, names, found) -> None:
    (tmp_path / ".agent").mkdir()
    for name in names:
        (tmp_path / ".agent" / name).write_text(
            f"version: '3'\ntasks:\n  t:\n    desc: from {name}\n    cmds: [echo]\n"
        )
    path = find_taskfile(tmp_path)
    assert path is not None and path.name == found
    assert list_tasks(tmp_path)[0].desc == f"from {found}"


def test_go_task_error_lines_stay_lines(tmp_path: Path) -> None:
    write_taskfile(
        tmp_path, "version: '3'\nincludes:\n  gone: ./missing.yml\ntasks:\n  a: {desc: a}\n"
    )
    with pytest.raises(TaskfileError) as info:
        list_tasks(tmp_path)
    lines = str(info.value).splitlines()
    assert lines[0].endswith("cannot be loaded:")
    assert "missing.yml" in lines[1]


def test_variables_are_go_task_variables_apart_from_cli_args(tmp_path: Path) -> None:
    argv = run_argv("task", tmp_path / "T.yml", "greet", ["a b"], {"WHO": "x y"})
    assert argv[-4:] == ["greet", "WHO=x y", "--", "a b"]
    assert "--yes" not in argv
    assert "--yes" in run_argv("task", tmp_path / "T.yml", "deploy", [], confirmed=True)
    with pytest.raises(TaskfileError, match="'1X'"):
        run_argv("task", tmp_path / "T.yml", "greet", [], {"1X": "v"})


def taskfile_task(project: Path, name: str, **agent: Any) -> Task:
    spec = {"type": "taskfile", "task": name, "project_dir": str(project), **agent}
    return Task.model_validate({"name": f"tf-{name}", "agent": spec})


async def run(engine: Engine, task: Task) -> Any:
    [task_id] = await engine.submit([task])
    await settled(engine, task_id)
    return await engine.get(task_id)


async def test_labelled_and_wildcard_tasks_run_by_real_and_matched_name(
    engine: Engine, store: Store, real: Path
) -> None:
    rec = await run(engine, taskfile_task(real, "build"))
    assert rec.state == State.COMPLETED, rec.reason
    assert await output(store, rec.id) == ["built for plan9"]
    rec = await run(engine, taskfile_task(real, "b"))
    assert await output(store, rec.id) == ["built for plan9"]
    rec = await run(engine, taskfile_task(real, "release:1.2.3"))
    assert rec.state == State.COMPLETED, rec.reason
    assert await output(store, rec.id) == ["releasing 1.2.3"]
    rec = await run(engine, taskfile_task(real, "docker:compose:up:web"))
    assert await output(store, rec.id) == ["compose up web"]


async def test_required_vars_reach_go_task_and_a_missing_one_is_named(
    engine: Engine, store: Store, real: Path
) -> None:
    task = taskfile_task(real, "greet", vars={"WHO": "Ada Lovelace"}, args=["x"])
    rec = await run(engine, task)
    assert rec.state == State.COMPLETED, rec.reason
    assert await output(store, rec.id) == ["hello Ada Lovelace args=x"]
    rec = await run(engine, taskfile_task(real, "greet"))
    assert rec.state == State.FAILED
    error = (await store.runs(rec.id))[-1].error
    assert "needs variable(s) WHO" in error and "--var WHO=VALUE" in error


@pytest.mark.parametrize("said,runs", [(YES, True), (NO, False)])
async def test_a_prompt_is_a_question_and_only_yes_runs_it(
    engine: Engine, store: Store, real: Path, said: str, runs: bool
) -> None:
    task = taskfile_task(real, "deploy")
    [task_id] = await engine.submit([task])
    q = await question(engine, task_id)
    item = q.payload["questions"][0]
    assert "Deploy to production now?" in item["question"]
    assert [o["label"] for o in item["options"]] == [YES, NO]
    assert not (real / ".agent" / "deployed").exists()  # nothing ran before the answer
    await engine.answer(q.id, {"answers": {item["question"]: said}})
    rec = await settled(engine, task_id)
    assert (real / ".agent" / "deployed").exists() == runs
    if runs:
        assert rec.state == State.COMPLETED, rec.reason
    else:
        assert rec.state == State.FAILED
        assert "was not answered yes" in (await store.runs(task_id))[-1].error


TEMPLATED_PROMPT = """\
version: '3'
vars:
  REGION: eu-1
  HOST: {sh: hostname}
tasks:
  ship:
    desc: Ship it
    vars: {STAGE: blue}
    prompt: >-
      Ship {{.ENV}} {{.STAGE}} in {{ .REGION }} as {{.TASK}}
      ({{.CLI_ARGS}}) {{.NOPE}}on {{.HOST}}?
    cmds: ['echo shipped']
"""


async def test_a_prompt_shows_its_variables_filled_in_as_go_task_would(
    engine: Engine, tmp_path: Path
) -> None:
    # The question a person answers reads as go-task's own prompt would: task vars over the
    # command line's over the file's; a var declared nowhere is empty; a `sh:` one stays.
    write_taskfile(tmp_path, TEMPLATED_PROMPT)
    task = taskfile_task(
        tmp_path, "ship", vars={"ENV": "prod", "STAGE": "green", "REGION": "us-2"}, args=["a b"]
    )
    [task_id] = await engine.submit([task])
    q = await question(engine, task_id)
    text = q.payload["questions"][0]["question"]
    assert text == "Taskfile task ship: Ship prod blue in us-2 as ship ('a b') on {{.HOST}}?"
    await engine.answer(q.id, {"answers": {text: YES}})
    await settled(engine, task_id)
    rec = await engine.get(task_id)
    assert rec is not None and rec.state == State.COMPLETED, rec
