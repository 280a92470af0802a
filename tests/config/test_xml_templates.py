"""XML atomic templates imported into the template model, and template variables."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.config.conftest import Dirs
from tui.config.load import ConfigError, load_config
from tui.config.templates import TaskRequest, TemplateError, build_task

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
    ("xml", "expected"),
    [
        ("<task type='atomic' name='x'><instructions>a", "invalid XML"),
        ("<task type='composite' name='x'/>", "not an atomic template"),
        ("<task type='atomic' name='x'><description>d</description></task>", "<instructions>"),
        (
            "<task type='atomic' name='x'><instructions>{{nme}}</instructions>"
            "<inputs><input name='name'/></inputs></task>",
            "unknown variable {{nme}}",
        ),
        (
            "<task type='atomic' name='x'><instructions>i</instructions>"
            "<inputs><input name='n' type='int'/></inputs></task>",
            "type must be one of string, number, boolean",
        ),
        (
            "<task type='atomic' name='x' colour='red'><instructions>i</instructions></task>",
            "unknown attribute 'colour'",
        ),
        (
            "<task type='atomic' name='x'><instructions>i</instructions><steps/></task>",
            "unknown element <steps>",
        ),
        ("<task type='atomic' name='X'><instructions>i</instructions></task>", "invalid name"),
    ],
)
def test_xml_problems_name_the_file(dirs: Dirs, xml: str, expected: str) -> None:
    path = write_xml(dirs.project / ".tui", "x.xml", xml)
    found = errors_of(dirs)
    assert any(expected in e for e in found), found
    assert all(e.startswith(str(path)) for e in found), found


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
