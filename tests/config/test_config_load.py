"""Reading, checking and merging the global and the project config.toml."""

from __future__ import annotations

import pytest

from tests.config.conftest import Dirs
from tui.config.load import ConfigError, load_settings
from tui.config.merged import load_config
from tui.model.loader import load_task_text


def errors_of(dirs: Dirs) -> list[str]:
    with pytest.raises(ConfigError) as e:
        load_config(dirs.project)
    return [str(i) for i in e.value.issues]


def test_no_files_is_an_empty_config(dirs: Dirs) -> None:
    config = load_config(dirs.project)
    assert config.tasks == {} and config.files == []
    assert config.settings.command_timeout == 30


def test_settings_merge_key_by_key_local_wins(dirs: Dirs) -> None:
    dirs.write_global(
        '[settings]\nshell = "zsh"\nconcurrency = 2\ncommand_timeout = "1m"\n'
        '[settings.keys]\ncancel_task = "K"\nretry_task = "R"\n'
    )
    dirs.write_local(
        '[settings]\nconcurrency = 7\ndatabase = "state/tui.db"\n'
        '[settings.keys]\nretry_task = "ctrl+r"\n'
    )
    settings, issues = load_settings(dirs.project)
    assert issues == []
    assert settings.shell == "zsh"  # only the global file sets it
    assert settings.concurrency == 7
    assert settings.command_timeout == 60
    assert settings.keys == {"cancel_task": "K", "retry_task": "ctrl+r"}
    # A relative database path is the project's.
    assert settings.database == str(dirs.project / "state" / "tui.db")


def test_summarizer_table_merges_key_by_key_and_reaches_task_files(dirs: Dirs) -> None:
    dirs.write_global('[summarizer]\nagent = "claude"\nmodel = "haiku"\nprompt = "Be brief."\n')
    dirs.write_local('[summarizer]\nmodel = "sonnet"\n')
    settings, issues = load_settings(dirs.project)
    assert issues == []
    s = settings.summarizer
    assert s is not None and (s.agent, s.model, s.prompt) == ("claude", "sonnet", "Be brief.")
    text = (
        "summarizer: {model: mini}\ntasks:\n  - {name: a, agent: {type: shell, instructions: x}}\n"
    )
    mine = "tasks:\n  - {name: a, agent: {type: shell, instructions: x}}\n"
    config = settings.workflow_defaults()
    assert load_task_text(mine, "t.yaml", defaults=config).tasks[0].summarizer == s
    # The file's own summarizer wins over config.toml's.
    own = load_task_text(text, "t.yaml", defaults=config).tasks[0].summarizer
    assert own is not None and own.model == "mini"


def test_local_task_replaces_global_one_whole(dirs: Dirs) -> None:
    dirs.write_global(
        '[tasks.review]\nprompt = "global review"\npriority = "high"\nalias = "r"\n'
        '[tasks.fix]\nprompt = "fix it"\n'
    )
    dirs.write_local('[tasks.review]\nprompt = "local review"\n[tasks.docs]\nprompt = "d"\n')
    config = load_config(dirs.project)
    assert list(config.tasks) == ["review", "fix", "docs"]
    review = config.tasks["review"]
    assert review.model.prompt == "local review"
    assert review.origin is not None and review.origin.scope == "local"
    assert review.model.defaults == {}  # no field merge: the global priority is gone
    assert review.model.alias == ""
    assert config.task("r") is None


def test_alias_clash_first_wins_with_a_warning_naming_both(dirs: Dirs) -> None:
    dirs.write_global('[tasks.review]\nprompt = "a"\nalias = "rv"\n')
    dirs.write_local('[tasks.revise]\nprompt = "b"\nalias = "rv"\n')
    config = load_config(dirs.project)
    assert config.task("rv") is config.tasks["review"]
    (warning,) = config.warnings
    text = str(warning)
    assert "'review'" in text and "tasks.revise.alias" in text and ".tui/config.toml" in text


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        ('[tasks.Review]\nprompt = "x"\n', "tasks.Review: invalid name 'Review'"),
        ('[tasks.a--b]\nprompt = "x"\n', "invalid name 'a--b'"),
        ('[tasks.ok]\nprompt = "x"\nalias = "Bad_Alias"\n', "tasks.ok.alias: invalid alias"),
        ("[tasks.empty]\n", "give at least one of file, command or prompt"),
        ('[tasks.x]\nprompt = "{instruction}"\n', "did you mean {instructions}?"),
        ('[tasks.x]\nprompt = "a { b"\n', "lone '{'"),
        ('[tasks.x]\nprompt = "p"\npriority = "urgent"\n', "tasks.x.priority: priority must be"),
        ('[tasks.x]\nprompt = "p"\ntimeout = "soon"\n', "tasks.x.timeout"),
        ('[tasks.x]\nprompt = "p"\nrol = "r"\n', "did you mean `role`?"),
        ('[tasks.x]\nprompt = "p"\nrole = "nope"\n', "tasks.x.role: unknown role 'nope'"),
        ('[tasks.x]\nprompt = "p"\nagent = "claud"\n', "did you mean 'claude'?"),
        ('[agents.a]\ntype = "shel"\n', "did you mean 'shell'?"),
        ('[agents.a]\ntype = "shell"\n', "a shell agent needs script"),
        (
            '[agents.a]\ntype = "shell"\nscript = "x"\ndefault_model = "m"\n',
            "a shell agent takes no model; models are for claude, gemini, codex agents",
        ),
        (
            '[agents.a]\ntype = "taskfile"\n',
            "type must be one of claude, shell, gemini, codex, command",
        ),
        ("[settings]\nconcurrency = 0\n", "settings.concurrency"),
        ('[settings]\ndefault_role = "ghost"\n', "settings.default_role: unknown role 'ghost'"),
        ('[settings]\nnotifications = "loud"\n', "notifications must be one of"),
        ("[setings]\n", "did you mean [settings]?"),
        ('[summarizer]\nstrategy = "terse"\n', "summarizer.strategy must be one of aggressive"),
        ('[summarizer]\nmodle = "haiku"\n', "did you mean `model`?"),
        (
            '[summarizer]\ncompaction = {trigger = "always"}\n',
            "summarizer.compaction.trigger: compaction.trigger must be one of on_threshold",
        ),
        (
            "[summarizer]\ncompaction = {threshold = -1}\n",
            "summarizer.compaction.threshold: summarizer.compaction.threshold must be >= 1; "
            "got -1. "
            "Fix: use a number of characters >= 1",
        ),
        # The fix of the table's own field, not of a task's field of the same name.
        (
            '[summarizer]\nagent = "robot"\n',
            "Fix: use claude, gemini, codex, or shell (a script reading $TUI_CONTEXT_FILE)",
        ),
        (
            '[classifier]\nagent = "nobody"\n',
            "Fix: use claude, gemini, codex, or shell (a script reading $TUI_CONTEXT_FILE)",
        ),
        (
            "[summarizer]\ncompaction = {every = 3}\n",
            "compaction.every applies only with trigger: every. Fix: write {threshold: N}",
        ),
        ('[settings]\nsummarizer = {strategy = "aggressive"}\n', "a [summarizer] table"),
        ('[tasks.x\nprompt = "p"\n', "invalid TOML"),
    ],
)
def test_errors_name_file_field_and_fix(dirs: Dirs, toml: str, expected: str) -> None:
    path = dirs.write_local(toml)
    errors = errors_of(dirs)
    assert any(expected in e for e in errors), errors
    assert all(e.startswith(str(path)) for e in errors), errors
    assert all("Fix:" in e for e in errors), errors


def test_every_error_of_both_files_at_once(dirs: Dirs) -> None:
    dirs.write_global('[tasks.a]\nprompt = "{nope}"\n')
    dirs.write_local('[tasks.b]\nprompt = "{worse}"\n')
    errors = errors_of(dirs)
    assert len(errors) == 2
    assert "tasks.a.prompt" in errors[0] and "tasks.b.prompt" in errors[1]


def test_doubled_braces_are_not_placeholders(dirs: Dirs) -> None:
    dirs.write_local('[tasks.x]\nprompt = "json like {{\\"a\\": 1}} for {instructions}"\n')
    assert "x" in load_config(dirs.project).tasks


def test_error_line_points_at_the_table(dirs: Dirs) -> None:
    path = dirs.write_local('[settings]\nshell = "sh"\n\n[tasks.x]\nprompt = "{bad}"\n')
    (error,) = errors_of(dirs)
    assert error.startswith(f"{path}:4: tasks.x.prompt")


def test_notifications_env_beats_config_beats_guess(
    dirs: Dirs, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tui.app.notify import default_osc_mode

    dirs.write_global('[settings]\nnotifications = "off"\n')
    configured = load_settings(dirs.project)[0].notifications
    assert default_osc_mode(configured) == "off"
    monkeypatch.setenv("TUI_NOTIFY", "osc777")
    assert default_osc_mode(configured) == "osc777"
    monkeypatch.delenv("TUI_NOTIFY")
    assert default_osc_mode("auto") in ("osc9", "osc777")


def test_agent_task_args_in_a_project_file_is_a_warning_naming_file_and_key(dirs: Dirs) -> None:
    # Ignored there (a checked-out project must not grant its own agents arguments): said so.
    dirs.write_global('[settings]\nagent_task_args = ["lint"]\n')
    local = dirs.write_local('[settings]\nshell = "bash"\nagent_task_args = ["deploy"]\n')
    config = load_config(dirs.project)
    (warning,) = config.warnings
    text = str(warning)
    assert str(local) in text and "settings.agent_task_args" in text
    assert str(dirs.global_dir / "config.toml") in text
    dirs.write_local('[settings]\nshell = "bash"\n')
    assert load_config(dirs.project).warnings == []
