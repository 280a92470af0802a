"""{{variables}} in YAML tasks: declared, given under vars:, checked at load."""

from __future__ import annotations

import pytest

from tui.model.issues import TaskFileError
from tui.model.loader import load_task_text


def load(text: str) -> list:
    return load_task_text(text, "t.yaml").tasks


def errors(text: str) -> list[str]:
    with pytest.raises(TaskFileError) as e:
        load_task_text(text, "t.yaml")
    return [str(i) for i in e.value.issues]


BATCH = """
variables:
  - {name: lang, default: python}
  - {name: strict, type: boolean, default: false}
vars: {lang: go}
tasks:
  - name: a
    agent:
      instructions: "Review the {{lang}} code (strict={{ strict }})."
      system_prompt_append: "You know {{lang}}."
  - name: b
    variables:
      - {name: lang, required: true}
      - {name: limit, type: number, default: 3}
    vars: {lang: "rust $(x) `y`"}
    agent: {instructions: "{{lang}} in {{limit}} points; literal {{not a var}}"}
"""


def test_file_vars_fill_every_task_and_task_vars_shadow_them() -> None:
    a, b = load(BATCH)
    assert a.agent.instructions == "Review the go code (strict=false)."
    assert a.agent.system_prompt_append == "You know go."
    assert b.agent.instructions == "rust $(x) `y` in 3 points; literal {{not a var}}"


def test_no_variables_leaves_braces_alone() -> None:
    (t,) = load("name: t\nagent: {type: shell, instructions: 'echo {{x}}'}\n")
    assert t.agent.instructions == "echo {{x}}"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "name: t\nvariables: [{name: lang}]\nagent: {instructions: '{{lnag}}'}\n",
            "agent.instructions: unknown variable {{lnag}}",
        ),
        (
            "name: t\nvariables: [{name: lang}]\nvars: {lnag: go}\nagent: {instructions: x}\n",
            "vars.lnag: unknown variable 'lnag'. Fix: did you mean `lang`?",
        ),
        (
            "name: t\nvariables: [{name: lang, required: true}]\nagent: {instructions: x}\n",
            "vars.lang: variable 'lang' is required",
        ),
        (
            "name: t\nvariables: [{name: n, type: number}]\nvars: {n: many}\n"
            "agent: {instructions: x}\n",
            "vars.n: n must be a number; got 'many'",
        ),
        (
            "name: t\nvariables: [{name: n, type: float}]\nagent: {instructions: x}\n",
            "type must be one of string, number, boolean",
        ),
        (
            "variables: [{name: 'bad name'}]\ntasks:\n  - {name: t, agent: {instructions: x}}\n",
            "variables[0].name",
        ),
    ],
)
def test_variable_problems_are_load_errors(text: str, expected: str) -> None:
    found = errors(text)
    assert any(expected in e for e in found), found
    assert all(e.startswith("t.yaml:") for e in found)
