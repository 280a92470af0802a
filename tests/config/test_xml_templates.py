"""XML atomic templates imported into the template model, and template variables."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.config.conftest import Dirs
from tui.config.load import ConfigError
from tui.config.merged import load_config
from tui.config.template_types import TemplateSource
from tui.config.templates import (
    PROMPT_ENV,
    ConfigTemplates,
    TaskRequest,
    TemplateError,
    build_task,
    find,
)

SUMMARISE = """<?xml version="1.0"?>
<task type="atomic" name="summarise" alias="sum" agent="echo">
  <description>Summarise a file</description>
  <inputs>
    <input name="path" required="true">the file to read</input>
    <input name="words" type="number" default="100"/>
    <input name="bullets" type="boolean" default="false"/>
  </inputs>
  <instructions>
    Summarise {{path}} in {{ words }} words (bullets: {{bullets}}).
    Also: {instructions}
  </instructions>
  <output_format type="json" schema="object"/>
  <context_management><context>house</context></context_management>
</task>
"""
AGENT = '[agents.echo]\ntype = "shell"\nscript = "printf %s \\"$TUI_PROMPT\\""\n'
HOUSE = '[contexts.house]\nprompt = "House rules."\n'


def write_xml(folder: Path, name: str, text: str) -> Path:
    (folder / "templates").mkdir(parents=True, exist_ok=True)
    path = folder / "templates" / name
    path.write_text(text, encoding="utf-8")
    return path


def errors_of(dirs: Dirs) -> list[str]:
    with pytest.raises(ConfigError) as e:
        load_config(dirs.project)
    return [str(i) for i in e.value.issues]


async def test_an_atomic_template_becomes_a_runnable_template(dirs: Dirs) -> None:
    dirs.write_global(AGENT + HOUSE)
    write_xml(dirs.global_dir, "summarise.xml", SUMMARISE)
    config = load_config(dirs.project)
    t = config.task("sum")
    assert t is not None and t.name == "summarise" and t.origin is not None
    assert t.model.description == "Summarise a file"
    assert [v.name for v in t.model.variables] == ["path", "words", "bullets"]
    request = TaskRequest("keep it short", vars={"path": "a.md; $(rm -rf /)"})
    task = await build_task(config, "summarise", request)
    assert task.agent.env["TUI_PROMPT"] == (
        "House rules.\n\nSummarise a.md; $(rm -rf /) in 100 words (bullets: false).\n"
        "Also: keep it short"
    )
    assert task.output_format is not None and task.output_format.schema_ == "object"
    task = await build_task(
        config, "summarise", TaskRequest(vars={"path": "b", "words": "50", "bullets": "true"})
    )
    assert "in 50 words (bullets: true)" in task.agent.env["TUI_PROMPT"]


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({}, "--var path: variable 'path' is required"),
        ({"path": "x", "words": "many"}, "--var words: must be a number"),
        ({"path": "x", "colour": "red"}, "--var colour: unknown variable 'colour'"),
    ],
)
async def test_bad_variables_are_refused_before_anything_runs(
    dirs: Dirs, given: dict[str, str], message: str
) -> None:
    dirs.write_global(AGENT + HOUSE)
    write_xml(dirs.global_dir, "summarise.xml", SUMMARISE)
    with pytest.raises(TemplateError, match=message):
        await build_task(load_config(dirs.project), "summarise", TaskRequest(vars=given))


async def test_toml_templates_take_variables_too(dirs: Dirs) -> None:
    dirs.write_local(
        '[tasks.t]\nprompt = "{{lang}} code, literal {{x: 1}} for {instructions}"\n'
        'variables = [{name = "lang", default = "go"}]\n'
    )
    task = await build_task(load_config(dirs.project), "t", TaskRequest())
    assert task.agent.instructions == "go code, literal {x: 1} for None"


def test_with_variables_declared_every_double_brace_name_must_be_one(dirs: Dirs) -> None:
    dirs.write_local('[tasks.t]\nprompt = "{{lang}} {{lnag}}"\nvariables = [{name = "lang"}]\n')
    assert any(
        "unknown variable {{lnag}}. Fix: did you mean {{lang}}?" in e for e in errors_of(dirs)
    )


@pytest.mark.parametrize(
    ("xml", "expected", "kept"),
    [
        ("<task type='atomic' name='x'><instructions>a", "invalid XML", False),
        ("<task type='composite' name='x'/>", "no atomic template", False),
        ("<task type='atomic' name='x'><inputs/></task>", "no <instructions> and no", False),
        (
            "<task type='atomic' name='x'><instructions>{{nme}}</instructions>"
            "<inputs><input name='name'/></inputs></task>",
            "unknown variable {{nme}}",
            False,
        ),
        (
            "<task type='atomic' name='x'><instructions>i</instructions>"
            "<inputs><input name='n' type='list'/></inputs></task>",
            "type must be one of string, number, boolean",
            False,
        ),
        (
            "<task type='atomic' name='x' colour='red'><instructions>i</instructions></task>",
            "unknown attribute 'colour'",
            True,
        ),
        (
            "<task type='atomic' name='x'><instructions>i</instructions><steps/></task>",
            "unknown element <steps>",
            True,
        ),
        (
            "<task type='atomic' name='X'><instructions>i</instructions></task>",
            "invalid name",
            False,
        ),
    ],
)
def test_xml_problems_are_warnings_naming_the_file(
    dirs: Dirs, xml: str, expected: str, kept: bool
) -> None:
    dirs.write_local('[tasks.other]\nprompt = "still here"\n')
    path = write_xml(dirs.project / ".tui", "x.xml", xml)
    config = load_config(dirs.project)  # never an error for the whole config
    found = [str(w) for w in config.warnings]
    assert any(expected in w for w in found), found
    assert all(w.startswith(str(path)) for w in found), found
    assert ("x" in config.tasks) == kept
    assert "other" in config.tasks


def test_project_xml_replaces_a_global_template(dirs: Dirs) -> None:
    dirs.write_global('[tasks.summarise]\nprompt = "global"\n')
    dirs.write_local(AGENT + HOUSE)
    write_xml(dirs.project / ".tui", "s.xml", SUMMARISE)
    t = load_config(dirs.project).tasks["summarise"]
    assert (
        t.origin is not None and t.origin.scope == "local" and "{{path}}" in (t.model.prompt or "")
    )


def test_one_scope_may_not_define_a_name_twice(dirs: Dirs) -> None:
    dirs.write_global(AGENT + HOUSE + '[tasks.summarise]\nprompt = "toml"\n')
    write_xml(dirs.global_dir, "s.xml", SUMMARISE)
    assert any("'summarise' defined twice" in e for e in errors_of(dirs))


# Constructs of the Task System's documented templates, written afresh: no <instructions>
# (the description is the prompt), an underscore name, <parameters> with type="integer",
# subtype, <model>, <system>, <file_paths>, <returns>, the context settings, <input from=>,
# and several <task> elements in one file.
TASK_SYSTEM = """<?xml version="1.0"?>
<task type="atomic" subtype="matching" name="rank_files">
  <description>Rank files for '{{query}}' (at most {{limit}})</description>
  <parameters>
    <parameter name="query" type="string" required="true">what to look for</parameter>
    <parameter name="limit" type="integer" default="20">how many</parameter>
  </parameters>
  <returns type="array" items="string">file paths</returns>
  <model preferred="opus" fallback="haiku"/>
  <system>Answer with paths only.</system>
  <context_management>
    <inherit_context>none</inherit_context>
    <fresh_context>disabled</fresh_context>
  </context_management>
  <file_paths>
    <path>./src/main.py</path>
    <path>./README.md</path>
  </file_paths>
  <output_format type="json" schema="string[]"/>
</task>
<task type="atomic" subtype="summary_writer">
  <description>Write a summary</description>
  <inputs><input name="notes" from="previous_step"/></inputs>
</task>
"""


async def test_task_system_templates_load_as_the_task_system_reads_them(dirs: Dirs) -> None:
    dirs.write_global(AGENT)
    path = write_xml(dirs.global_dir, "task-system.xml", TASK_SYSTEM)
    config = load_config(dirs.project)
    assert sorted(config.tasks) == ["rank_files", "summary_writer"]
    warnings = " | ".join(str(w) for w in config.warnings)
    [rank] = [str(w) for w in config.warnings if "'rank_files'" in str(w)]  # one warning
    for said in (
        "not used by tui: ",
        "<returns> (",
        "model fallback 'haiku'",
        "inherit_context, fresh_context (every run starts fresh)",
    ):
        assert said in rank
    assert "input notes from=..." in warnings
    assert all(str(w).startswith(str(path)) for w in config.warnings)

    sources: list[TemplateSource] = [ConfigTemplates(config)]
    source, template = find(sources, "rank-files")  # the kebab-case form finds it too
    assert template.name == "rank_files"
    task = await source.make_task(template.name, TaskRequest(vars={"query": "auth"}))
    assert task.agent.env[PROMPT_ENV] == "Rank files for 'auth' (at most 20)"
    assert task.agent.model == "opus"
    assert task.agent.system_prompt_append == "Answer with paths only."
    assert task.agent.context_files == ["./src/main.py", "./README.md"]
    assert task.output_format is not None and task.output_format.schema_ == "string[]"
    with pytest.raises(TemplateError, match="limit"):
        await source.make_task(template.name, TaskRequest(vars={"query": "q", "limit": "x"}))
