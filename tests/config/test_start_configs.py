"""`start` configs as their authors write them: a file per section, `description` everywhere,
agents with a `bin` and a command template, `start`-only keys, interpreters as `shell`, and
one error (never a cascade) for one bad table. Fixtures are our own, written after the
constructs of `start`'s example configs."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from tests.agents.cli_support import output, settled
from tests.config.conftest import Dirs
from tui.config.agent_command import check_command
from tui.config.load import ConfigError
from tui.config.merged import load_config
from tui.config.templates import (
    ConfigTemplates,
    TaskRequest,
    all_templates,
    build_task,
)
from tui.engine.scheduler import Engine
from tui.model.issues import TaskFileError
from tui.model.states import State
from tui.store.db import Store

SETTINGS = """\
[settings]
default_agent = "fake"
default_role = "reviewer"
log_level = "verbose"
asset_download = true
asset_repo = "someone/assets"
asset_path = "~/.config/start/assets"
shell = "bash"
command_timeout = 30
"""
AGENTS = """\
[agents.claude]
bin = "claude"
description = "Claude Code"
url = "https://example.invalid/claude"
models_url = "https://example.invalid/models"
command = "{bin} --model {model} --append-system-prompt '{role}' '{prompt}'"
default_model = "sonnet"

  [agents.claude.models]
  sonnet = "claude-sonnet-4-5"

[agents.fake]
bin = "BIN"
description = "A CLI of our own"
command = "FAKE_ROLE_FILE='{role_file}' {bin} --model {model} --system '{role}' '{prompt}'"
default_model = "small"

  [agents.fake.models]
  small = "fake-small-1"
"""
ROLES = """\
[roles.reviewer]
description = "Careful reviewer"
prompt = "You review code; you're careful."
"""
CONTEXTS = """\
[contexts.agents-md]
description = "Project instructions, when the project has them"
required = true
file = "AGENTS.md"
prompt = "{file_contents}"
"""
TASKS = """\
[tasks.zeta]
description = "Last by name"
prompt = "Model {model}: {instructions}"

[tasks.alpha]
alias = "a"
description = "First by name"
prompt = "Output: [{command_output}]"
"""


def write_start_dir(folder: Path, bin_path: str = "fake-cli") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in [
        ("config.toml", SETTINGS),
        ("agents.toml", AGENTS.replace("BIN", bin_path)),
        ("roles.toml", ROLES),
        ("contexts.toml", CONTEXTS),
        ("tasks.toml", TASKS),
    ]:
        (folder / name).write_text(text, encoding="utf-8")


def test_a_start_config_directory_loads_with_one_not_used_warning_per_file(dirs: Dirs) -> None:
    write_start_dir(dirs.global_dir)
    config = load_config(dirs.project)
    assert sorted(config.tasks) == ["alpha", "zeta"]
    assert config.agents["claude"].model.type == "claude"  # from bin: tui's own protocol
    assert config.agents["fake"].model.type == "command"  # any other CLI: its template
    assert config.agents["fake"].model.description == "A CLI of our own"
    assert config.roles["reviewer"].model.description == "Careful reviewer"
    assert config.contexts["agents-md"].model.description.startswith("Project instructions")
    unused = [str(w) for w in config.warnings if "not used by tui" in str(w)]
    assert len(unused) == 2, unused
    assert "settings.log_level, settings.asset_download, settings.asset_repo" in unused[0]
    assert "agents.claude.url, agents.claude.models_url, agents.claude.command" in unused[1]
    assert all("error" not in w for w in unused)


def test_templates_are_listed_alphabetically_with_their_description(dirs: Dirs) -> None:
    write_start_dir(dirs.global_dir)
    listed = all_templates([ConfigTemplates(load_config(dirs.project))])
    assert [(t.name, t.description) for t in listed] == [
        ("alpha", "First by name"),
        ("zeta", "Last by name"),
    ]


async def test_model_placeholder_and_empty_command_output(dirs: Dirs) -> None:
    write_start_dir(dirs.global_dir)
    config = load_config(dirs.project)
    # {command_output} without a command is empty (a warning at load, never an error).
    assert any("{command_output} is used but no command" in str(w) for w in config.warnings)
    warnings: list[str] = []
    task = await build_task(config, "zeta", TaskRequest("go", agent="claude"), warnings)
    assert task.agent.model == "claude-sonnet-4-5"
    assert task.agent.instructions.endswith("Model claude-sonnet-4-5: go")
    # The required context's AGENTS.md is missing: a warning, and the prompt goes on.
    assert any("AGENTS.md not found" in w for w in warnings)
    task = await build_task(config, "alpha", TaskRequest(agent="claude"), [])
    assert task.agent.instructions.endswith("Output: []")


async def test_a_relative_file_is_the_projects_for_global_and_local_alike(dirs: Dirs) -> None:
    (dirs.project / "AGENTS.md").write_text("Use tabs.", encoding="utf-8")
    (dirs.global_dir).mkdir()
    (dirs.global_dir / "AGENTS.md").write_text("WRONG: the config dir's", encoding="utf-8")
    write_start_dir(dirs.global_dir)
    task = await build_task(load_config(dirs.project), "zeta", TaskRequest(agent="claude"))
    assert "Use tabs." in task.agent.instructions and "WRONG" not in task.agent.instructions


def test_one_bad_role_is_one_error_not_a_cascade(dirs: Dirs) -> None:
    dirs.write_global(
        '[roles.reviewer]\nprompt = "p"\ncolour = "blue"\n\n'
        '[tasks.a]\nrole = "reviewer"\nprompt = "x"\n[tasks.b]\nrole = "reviewer"\nprompt = "y"\n'
        '[settings]\ndefault_role = "reviewer"\n'
    )
    with pytest.raises(ConfigError) as info:
        load_config(dirs.project)
    errors = [str(i) for i in info.value.issues]
    assert len(errors) == 1, errors
    assert "roles.reviewer.colour: unknown key 'colour'" in errors[0]


@pytest.mark.parametrize(
    "shell,command,expected",
    [
        ("python3", "print(6 * 7)", "42"),
        ("node", "console.log(6 * 7)", "42"),
        ("perl", "print 6 * 7", "42"),
        ("sh", "echo $((6 * 7))", "42"),
    ],
)
async def test_an_interpreter_as_shell_runs_the_command_as_its_script(
    dirs: Dirs, shell: str, command: str, expected: str
) -> None:
    toml = f'[tasks.t]\nshell = "{shell}"\ncommand = \'{command}\'\nprompt = "{{command_output}}"\n'
    dirs.write_local(toml)
    task = await build_task(load_config(dirs.project), "t", TaskRequest())
    assert task.agent.instructions == expected


async def test_shell_args_for_other_interpreters_and_a_clear_error_without(dirs: Dirs) -> None:
    tool = dirs.project / "runner"
    tool.write_text('#!/bin/sh\n[ "$1" = "--run" ] && echo "ran: $2"\n', encoding="utf-8")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    toml = f'[tasks.t]\nshell = "{tool}"\ncommand = "x y"\nprompt = "{{command_output}}"\n'
    dirs.write_local(toml + 'shell_args = ["--run"]\n')
    assert (await build_task(load_config(dirs.project), "t", TaskRequest())).agent.instructions == (
        "ran: x y"
    )
    dirs.write_local(toml)
    with pytest.raises(TaskFileError) as info:
        await build_task(load_config(dirs.project), "t", TaskRequest())
    assert "tasks.t.shell" in str(info.value) and "shell_args" in str(info.value)


async def test_a_failing_command_shows_stderr_first_then_the_end_of_stdout(dirs: Dirs) -> None:
    # The reason a command failed is on stderr, but a chatty stdout written after it would
    # push it out of a plain "last lines" tail.
    script = (
        "for i in 1 2 3 4 5 6 7 8 9; do echo err$i >&2; done; "
        "for i in $(seq 1 20); do echo out$i; done; exit 5"
    )
    dirs.write_local(f'[tasks.t]\ncommand = "{script}"\nprompt = "{{command_output}}"\n')
    with pytest.raises(TaskFileError) as info:
        await build_task(load_config(dirs.project), "t", TaskRequest())
    text = str(info.value)
    errs = "".join(f"    err{i}\n" for i in range(4, 10))
    expected = (
        f"command exited with 5:\n  stderr:\n{errs}  stdout (last lines):\n    out19\n    out20"
    )
    assert expected in text
    assert "err3" not in text and "out18" not in text


async def test_a_failing_command_with_only_stdout_keeps_its_last_lines(dirs: Dirs) -> None:
    script = "for i in $(seq 1 12); do echo out$i; echo; done; exit 2"
    dirs.write_local(f'[tasks.t]\ncommand = "{script}"\nprompt = "{{command_output}}"\n')
    with pytest.raises(TaskFileError) as info:
        await build_task(load_config(dirs.project), "t", TaskRequest())
    tail = "\n".join(f"  out{i}" for i in range(5, 13))
    assert f"command exited with 2:\n{tail}" in str(info.value)
    assert "out4\n" not in str(info.value)


@pytest.mark.parametrize(
    "command,problem",
    [
        ("{bin} {prompt} | tee log", "never through a shell"),
        ("{bin} --model {modle} {prompt}", "did you mean {model}?"),
        ("{bin} --model {model}", "never passes {prompt}"),
        ("{bin} '{prompt}", "balance its quotes"),
    ],
)
def test_command_templates_are_checked_at_load(command: str, problem: str) -> None:
    assert any(problem in " ".join(p) for p in check_command(command))


@pytest.fixture
async def engine(store: Store):
    async with Engine(store, kill_grace=1.0) as e:
        yield e


async def test_a_command_agent_runs_its_cli_with_each_value_one_argument(
    dirs: Dirs, engine: Engine, store: Store
) -> None:
    cli = dirs.project / "fake-cli"
    cli.write_text(
        "#!/bin/sh\n"
        'for a in "$@"; do printf "<%s>\\n" "$a"; done\n'
        'printf "role file: %s\\n" "$(cat "$FAKE_ROLE_FILE")"\n'
        'printf "%s\\n" "$FAKE_ROLE_FILE" > "$(dirname "$0")/role-file-path"\n',
        encoding="utf-8",
    )
    cli.chmod(cli.stat().st_mode | stat.S_IXUSR)
    write_start_dir(dirs.global_dir, str(cli))
    hostile = 'it\'s $(touch pwned) `id` "q"'
    task = await build_task(load_config(dirs.project), "zeta", TaskRequest(hostile))
    [task_id] = await engine.submit([task])
    rec = await settled(engine, task_id)
    assert rec.state == State.COMPLETED, rec.reason
    lines = await output(store, task_id)
    assert lines[:4] == [
        "<--model>",
        "<fake-small-1>",
        "<--system>",
        "<You review code; you're careful.>",
    ]
    assert lines[4] == f"<Model fake-small-1: {hostile}>"  # the role is apart from the prompt
    assert lines[5] == "role file: You review code; you're careful."
    assert not (dirs.project / "pwned").exists()
    role_file = Path((dirs.project / "role-file-path").read_text().strip())
    assert not role_file.exists()  # the script removed it when the CLI was done
