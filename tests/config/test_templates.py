"""Templates become Tasks: selection, contexts, and every placeholder (empty ones too)."""

from __future__ import annotations

import datetime
import os
import random
from pathlib import Path

import pytest

from tests.config.conftest import Dirs
from tui.config.merged import load_config
from tui.config.templates import (
    PROMPT_ENV,
    ConfigTemplates,
    TaskRequest,
    TemplateError,
    build_task,
    find,
)
from tui.model.issues import TaskFileError
from tui.model.task import Task

HOSTILE = "$(touch pwned) `touch pwned2` \"dq\" 'sq' \\ ; rm -rf / #\nsecond line {file} {{x}}"


async def make(
    dirs: Dirs,
    toml: str,
    name: str = "t",
    *,
    instructions: str = "",
    role: str = "",
    agent: str = "",
    model: str = "",
) -> Task:
    dirs.write_local(toml)
    request = TaskRequest(instructions=instructions, role=role, agent=agent, model=model)
    return await build_task(load_config(dirs.project), name, request)


async def prompt_of(dirs: Dirs, toml: str, **request: str) -> str:
    return (await make(dirs, toml, **request)).agent.instructions


async def test_instructions_placeholder_and_its_empty_case(dirs: Dirs) -> None:
    toml = '[tasks.t]\nprompt = "Do: {instructions}."\n'
    assert await prompt_of(dirs, toml, instructions="fix the bug") == "Do: fix the bug."
    assert await prompt_of(dirs, toml) == "Do: None."


async def test_file_and_file_contents(dirs: Dirs, monkeypatch: pytest.MonkeyPatch) -> None:
    home = dirs.project.parent / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    (home / "notes.md").write_text("line 1\nline 2\n", encoding="utf-8")
    toml = '[tasks.t]\nfile = "~/notes.md"\nprompt = "<{file}>\\n{file_contents}"\n'
    assert await prompt_of(dirs, toml) == f"<{home / 'notes.md'}>\nline 1\nline 2\n"
    (home / "notes.md").write_text("", encoding="utf-8")
    assert await prompt_of(dirs, toml) == f"<{home / 'notes.md'}>\n"


async def test_relative_file_is_the_projects(dirs: Dirs) -> None:
    (dirs.project / "STYLE.md").write_text("be brief", encoding="utf-8")
    toml = '[tasks.t]\nfile = "STYLE.md"\nprompt = "{file}: {file_contents}"\n'
    assert await prompt_of(dirs, toml) == f"{dirs.project / 'STYLE.md'}: be brief"


async def test_missing_file_is_a_warning_and_its_contents_are_empty(dirs: Dirs) -> None:
    # start's DR-008: a missing file is a warning, left out of the prompt.
    dirs.write_local('[tasks.t]\nfile = "gone.md"\nprompt = "[{file_contents}] {file}"\n')
    warnings: list[str] = []
    task = await build_task(load_config(dirs.project), "t", TaskRequest(), warnings)
    assert task.agent.instructions == f"[] {dirs.project / 'gone.md'}"
    [warning] = warnings
    assert "tasks.t" in warning and str(dirs.project / "gone.md") in warning
    assert "not found" in warning


async def test_an_unreadable_file_is_still_an_error(dirs: Dirs) -> None:
    (dirs.project / "dir.md").mkdir()
    with pytest.raises(TaskFileError) as e:
        await prompt_of(dirs, '[tasks.t]\nfile = "dir.md"\nprompt = "{file_contents}"\n')
    assert "tasks.t.file" in str(e.value) and "Fix:" in str(e.value)


async def test_command_and_command_output(dirs: Dirs) -> None:
    toml = (
        "[tasks.t]\ncommand = \"echo out; echo err >&2; printf 'last'\"\n"
        'prompt = "$ {command}\\n{command_output}"\n'
    )
    expected = "$ echo out; echo err >&2; printf 'last'\nout\nerr\nlast"
    assert await prompt_of(dirs, toml) == expected


async def test_empty_command_output(dirs: Dirs) -> None:
    assert (
        await prompt_of(dirs, '[tasks.t]\ncommand = "true"\nprompt = "[{command_output}]"\n')
        == "[]"
    )


async def test_command_runs_in_the_project_with_the_configured_shell(dirs: Dirs) -> None:
    toml = (
        '[settings]\nshell = "sh"\n[tasks.t]\ncommand = \'echo "$(cat /proc/$$/comm) $PWD"\'\n'
        'prompt = "{command_output}"\n'
    )
    assert await prompt_of(dirs, toml) == f"sh {dirs.project}"


async def test_failing_command_stops_with_its_exit_code_and_output(dirs: Dirs) -> None:
    with pytest.raises(TaskFileError) as e:
        await prompt_of(
            dirs, '[tasks.t]\ncommand = "echo nope >&2; exit 3"\nprompt = "{command_output}"\n'
        )
    text = str(e.value)
    assert "tasks.t.command: command exited with 3:\n  stderr:\n    nope" in text


def live_with(arg: str) -> list[str]:
    """Live (non-zombie) processes whose argv holds ``arg``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if arg.encode() in argv and stat[stat.rfind(")") + 2] not in "ZX":
            found.append(pid)
    return found


async def test_command_timeout_is_honoured_and_the_group_is_stopped(dirs: Dirs) -> None:
    unique = f"{30 + random.random():.6f}"  # a sleep only this test starts
    toml = (
        f'[tasks.t]\ncommand = "sleep {unique} & sleep {unique}"\n'
        'command_timeout = "300ms"\nprompt = "{command_output}"\n'
    )
    with pytest.raises(TaskFileError) as e:
        await prompt_of(dirs, toml)
    assert "still running after 0.3s" in str(e.value)
    assert "raise command_timeout" in str(e.value)
    assert live_with(unique) == []  # the background sleep went with its group


async def test_date_is_iso_8601(dirs: Dirs) -> None:
    text = await prompt_of(dirs, '[tasks.t]\nprompt = "{date}"\n')
    assert datetime.datetime.fromisoformat(text).tzinfo is not None


async def test_doubled_braces_are_literal(dirs: Dirs) -> None:
    toml = '[tasks.t]\nprompt = "{{instructions}} is {instructions} }}{{"\n'
    assert await prompt_of(dirs, toml, instructions="x") == "{instructions} is x }{"


async def test_no_prompt_means_file_then_command_then_instructions(dirs: Dirs) -> None:
    (dirs.project / "a.txt").write_text("from file", encoding="utf-8")
    toml = '[tasks.t]\nfile = "a.txt"\ncommand = "echo from command"\n'
    text = await prompt_of(dirs, toml, instructions="from user")
    assert text == "from file\n\nfrom command\n\nfrom user"


async def test_hostile_values_arrive_intact_and_nothing_runs(dirs: Dirs) -> None:
    (dirs.project / "h.txt").write_text(HOSTILE, encoding="utf-8")
    toml = (
        '[tasks.t]\nfile = "h.txt"\ncommand = "cat h.txt"\n'
        'prompt = "I={instructions}|F={file_contents}|C={command_output}"\n'
    )
    text = await prompt_of(dirs, toml, instructions=HOSTILE)
    assert text == f"I={HOSTILE}|F={HOSTILE}|C={HOSTILE}"
    assert not (dirs.project / "pwned").exists() and not (dirs.project / "pwned2").exists()


ROLES = (
    '[roles.first]\nprompt = "ROLE first"\n[roles.second]\nprompt = "ROLE second"\n'
    '[roles.third]\nprompt = "ROLE third"\n'
)


@pytest.mark.parametrize(
    ("settings", "task_role", "flag", "expected"),
    [
        ("", "", "", "first"),
        ('default_role = "second"', "", "", "second"),
        ('default_role = "second"', "third", "", "third"),
        ('default_role = "second"', "third", "first", "first"),
    ],
)
async def test_role_precedence(
    dirs: Dirs, settings: str, task_role: str, flag: str, expected: str
) -> None:
    role = f'role = "{task_role}"\n' if task_role else ""
    toml = f'[settings]\n{settings}\n{ROLES}[tasks.t]\nprompt = "P"\n{role}'
    assert await prompt_of(dirs, toml, role=flag) == f"ROLE {expected}\n\nP"


AGENTS = (
    '[agents.a1]\ntype = "claude"\n[agents.a2]\ntype = "gemini"\n'
    '[agents.a3]\ntype = "codex"\ndefault_model = "fast"\nmodels = { fast = "gpt-5-mini" }\n'
)


@pytest.mark.parametrize(
    ("settings", "task_agent", "flag", "expected"),
    [
        ("", "", "", "claude"),
        ('default_agent = "a2"', "", "", "gemini"),
        ('default_agent = "a2"', "a3", "", "codex"),
        ('default_agent = "a2"', "a3", "a1", "claude"),
        ("", "", "gemini", "gemini"),  # a built-in agent by its name
    ],
)
async def test_agent_precedence(
    dirs: Dirs, settings: str, task_agent: str, flag: str, expected: str
) -> None:
    agent = f'agent = "{task_agent}"\n' if task_agent else ""
    toml = f'[settings]\n{settings}\n{AGENTS}[tasks.t]\nprompt = "P"\n{agent}'
    assert (await make(dirs, toml, agent=flag)).agent.type == expected


async def test_model_short_names_and_defaults(dirs: Dirs) -> None:
    toml = f'{AGENTS}[tasks.t]\nprompt = "P"\nagent = "a3"\n'
    assert (await make(dirs, toml)).agent.model == "gpt-5-mini"
    assert (await make(dirs, toml, model="o3")).agent.model == "o3"


async def test_unknown_flag_names_are_refused_with_a_suggestion(dirs: Dirs) -> None:
    with pytest.raises(TemplateError, match="did you mean 'second'"):
        await make(dirs, f'{ROLES}[tasks.t]\nprompt = "P"\n', role="secnd")
    config = load_config(dirs.project)
    with pytest.raises(TemplateError, match="did you mean 't'"):
        find([ConfigTemplates(config)], "tt")


async def test_required_contexts_come_first_in_order(dirs: Dirs) -> None:
    toml = (
        '[contexts.b]\nprompt = "CTX b"\nrequired = true\n'
        '[contexts.opt]\nprompt = "CTX opt"\n'
        '[contexts.a]\nprompt = "CTX a for {instructions}"\nrequired = true\n'
        '[tasks.t]\nprompt = "P"\n[tasks.u]\nprompt = "U"\ncontexts = ["opt"]\n'
    )
    assert await prompt_of(dirs, toml, instructions="x") == "CTX b\n\nCTX a for x\n\nP"
    task = await make(dirs, toml, name="u")
    assert task.agent.instructions == "CTX b\n\nCTX a for None\n\nCTX opt\n\nU"


async def test_shell_agent_gets_the_prompt_in_its_env_not_its_script(dirs: Dirs) -> None:
    toml = (
        '[agents.echo]\ntype = "shell"\nscript = \'printf "%s" "$TUI_PROMPT"\'\n'
        '[tasks.t]\nprompt = "say {instructions}"\nagent = "echo"\n'
    )
    task = await make(dirs, toml, instructions=HOSTILE)
    assert task.agent.type == "shell"
    assert task.agent.instructions == 'printf "%s" "$TUI_PROMPT"'
    assert task.agent.env[PROMPT_ENV] == f"say {HOSTILE}"


async def test_agent_bin_args_env_and_task_defaults(dirs: Dirs) -> None:
    toml = (
        '[agents.c]\ntype = "claude"\nbin = "/opt/claude"\nargs = ["--verbose"]\n'
        'env = { FOO = "1" }\n'
        '[tasks.t]\nprompt = "P"\ndescription = "d"\npriority = "high"\ntimeout = "10m"\n'
        'retry = { max_attempts = 3 }\npermission_mode = "acceptEdits"\ntags = ["x"]\n'
        'project_dir = "sub"\n'
    )
    task = await make(dirs, toml)
    assert task.name == "t" and task.description == "d"
    assert task.priority == "high" and task.timeout == 600 and task.retry.max_attempts == 3
    assert task.tags == ["x"] and task.agent.permission_mode == "acceptEdits"
    assert task.agent.additional_args == ["--verbose"]
    assert task.agent.env == {"FOO": "1", "TUI_CLAUDE_BIN": "/opt/claude"}
    assert Path(task.agent.project_dir) == dirs.project / "sub"


async def test_project_dir_defaults_to_the_project(dirs: Dirs) -> None:
    task = await make(dirs, '[tasks.t]\nprompt = "P"\n')
    assert Path(task.agent.project_dir) == dirs.project
