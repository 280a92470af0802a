"""Compaction of long upstream results (issue 12): `summarizer.compaction` adds a
`compact:NAME` task per upstream result a task takes whole; its trigger decides at run time
whether the summariser runs (else the compaction task is SKIPPED and the result travels
whole), the dependent gets the compacted form, and the sizes before and after are kept with
the upstream task. Real SQLite files, real shell subprocesses (a shell summariser)."""

from __future__ import annotations

import json
from typing import Any

from tui.engine.scheduler import Engine
from tui.model.loader import load_task_text
from tui.model.states import State
from tui.model.task import Task
from tui.store.db import Store
from tui.store.records import TaskRecord

# A shell summariser: it reads the upstream result from its context file and answers with
# the summary object, naming how many bytes it read (so each answer is its own).
STAND_IN = (
    'n=$(wc -c < "$TUI_CONTEXT_FILE"); '
    'printf \'{"summary": "read %s bytes", "key_outputs": ["out"], '
    '"decisions": ["chose"], "errors": ["none really"]}\\n\' "$n"'
)
BIG = "python3 -c 'print(\"x\" * 3000)'"  # a 3000-character result


def pipeline(compaction: str, preserve: str = "") -> str:
    return f"""
summarizer: {{agent: shell, prompt: {json.dumps(STAND_IN)}, compaction: {compaction}}}
tasks:
  - name: big
    agent: {{type: shell, instructions: {json.dumps(BIG)}}}
  - name: small
    agent: {{type: shell, instructions: "echo small"}}
  - name: report
    depends_on: [big, small]
    context: {{transfer: full{preserve}}}
    agent: {{type: shell, instructions: 'cat "$TUI_CONTEXT_FILE"'}}
  - name: other
    depends_on: [big]
    agent: {{type: shell, instructions: 'echo "${{TUI_CONTEXT_FILE:-none}}"'}}
"""


def load(text: str) -> list[Task]:
    return load_task_text(text, "wf.yaml").tasks


async def run_all(store: Store, text: str) -> dict[str, TaskRecord]:
    tasks = load(text)
    async with Engine(store) as e:
        await e.submit(tasks)
        await e.wait_settled([t.id for t in tasks])
    return {r.name: r for r in await store.list_tasks()}


async def printed(store: Store, rec: TaskRecord) -> Any:
    lines = [ln.text for ln in await store.read_output(rec.id) if ln.stream == 1]
    return json.loads("".join(lines))


def test_the_loader_adds_one_compaction_task_per_upstream_a_task_takes_whole() -> None:
    tasks = load(pipeline("{threshold: 2000}"))
    by = {t.name: t for t in tasks}
    assert [t.name for t in tasks].count("compact:big") == 1
    assert "compact:small" in by and "summarize:big" not in by
    c = by["compact:big"]
    assert c.compacts == by["big"].id and c.depends_on == [by["big"].id]
    assert c.tags == ["compaction"] and c.agent.type == "shell"
    assert c.id in by["report"].depends_on
    # A task without `context:` takes no result, so nothing of it is compacted.
    assert by["other"].depends_on == [by["big"].id]


async def test_a_result_over_the_threshold_is_compacted_and_a_short_one_travels_whole(
    store: Store,
) -> None:
    recs = await run_all(store, pipeline("{threshold: 2000}"))
    assert recs["report"].state == State.COMPLETED
    assert recs["compact:big"].state == State.COMPLETED
    small = recs["compact:small"]
    assert small.state == State.SKIPPED
    assert small.reason == (
        "skipped: small's result is 5 characters, at most the threshold of 2000"
    )
    got = await printed(store, recs["report"])
    answer = recs["compact:big"].parsed_result
    assert answer["summary"].startswith("read ")
    sizes = {"size_before": 3000, "size_after": len(json.dumps(answer))}
    assert got == {
        "big": {
            "id": recs["big"].id,
            "state": "COMPLETED",
            "result": answer,
            "compacted": {**sizes, "by": recs["compact:big"].id},
        },
        "small": {"id": recs["small"].id, "state": "COMPLETED", "result": "small"},
    }
    assert "xxxx" not in json.dumps(got)  # the long result itself did not travel
    kept = recs["big"].to_json()["summary"]
    by = recs["compact:big"].id
    assert kept == {"strategy": "compacted", "summary": answer, "by": by, **sizes}
    assert recs["small"].to_json()["summary"] is None


async def test_on_completion_compacts_every_result(store: Store) -> None:
    recs = await run_all(store, pipeline("{trigger: on_completion}"))
    assert recs["compact:big"].state == State.COMPLETED
    assert recs["compact:small"].state == State.COMPLETED
    got = await printed(store, recs["report"])
    assert got["small"]["result"] == recs["compact:small"].parsed_result
    assert got["small"]["compacted"]["size_before"] == len("small")


async def test_every_n_compacts_each_nth_result_to_complete(store: Store) -> None:
    # A chain completes in a known order: s1, s2, s3, s4; every 2 compacts s2 and s4.
    steps = "\n".join(
        f"""  - name: s{i}
    {f"depends_on: [s{i - 1}]" if i > 1 else ""}
    agent: {{type: shell, instructions: "echo step {i}"}}"""
        for i in range(1, 5)
    )
    every = "{trigger: every, every: 2}"
    text = f"""
summarizer: {{agent: shell, prompt: {json.dumps(STAND_IN)}, compaction: {every}}}
tasks:
{steps}
  - name: report
    depends_on: [s1, s2, s3, s4]
    context: {{preserve: [outputs]}}
    agent: {{type: shell, instructions: 'cat "$TUI_CONTEXT_FILE"'}}
"""
    recs = await run_all(store, text)
    states = {n: recs[f"compact:{n}"].state for n in ("s1", "s2", "s3", "s4")}
    assert states == {
        "s1": State.SKIPPED,
        "s2": State.COMPLETED,
        "s3": State.SKIPPED,
        "s4": State.COMPLETED,
    }
    assert "completion 3 is not a multiple of every: 2" in recs["compact:s3"].reason
    got = await printed(store, recs["report"])
    assert got["s1"]["result"] == "step 1" and got["s3"]["result"] == "step 3"
    # preserve: [outputs] keeps the summary and its key outputs, not decisions or errors.
    answer = recs["compact:s2"].parsed_result
    assert got["s2"]["result"] == {"summary": answer["summary"], "key_outputs": ["out"]}
    assert got["s4"]["compacted"]["size_before"] == len("step 4")


async def test_a_failed_compaction_stops_the_dependent_not_the_upstream(store: Store) -> None:
    text = pipeline("{trigger: on_completion}").replace(json.dumps(STAND_IN), '"echo not json"')
    recs = await run_all(store, text)
    assert recs["big"].state == State.COMPLETED
    assert recs["compact:big"].state == State.FAILED
    assert recs["report"].state == State.CANCELLED
    assert recs["other"].state == State.COMPLETED


# -- preserve: which parts of a summary reach the dependent -----------------------------------


def summary_pipeline(preserve: str) -> str:
    return f"""
summarizer: {{strategy: moderate, agent: shell, prompt: {json.dumps(STAND_IN)}}}
tasks:
  - name: build
    agent: {{type: shell, instructions: "seq 1 50"}}
  - name: report
    depends_on: [build]
    context: {{transfer: summary{preserve}}}
    agent: {{type: shell, instructions: 'cat "$TUI_CONTEXT_FILE"'}}
"""


async def test_preserve_chooses_the_parts_of_a_summary_that_reach_the_dependent(
    store: Store,
) -> None:
    recs = await run_all(store, summary_pipeline(", preserve: [decisions]"))
    got = (await printed(store, recs["report"]))["build"]["summary"]
    whole = recs["summarize:build"].parsed_result
    assert got == {"summary": whole["summary"], "decisions": ["chose"]}
    # What is kept with the upstream task is the whole answer.
    assert recs["build"].to_json()["summary"]["summary"] == whole


async def test_without_preserve_a_summary_arrives_whole(store: Store) -> None:
    recs = await run_all(store, summary_pipeline(""))
    got = (await printed(store, recs["report"]))["build"]["summary"]
    assert got == recs["summarize:build"].parsed_result
    assert set(got) == {"summary", "key_outputs", "decisions", "errors"}
