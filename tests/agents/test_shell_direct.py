"""The decision to start a shell task's script without the shell (tui.agents.direct_exec):
a table of commands, the lists checked against the bash on this machine, and the environment
bash hands a command it execs reproduced variable for variable."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tui.agents.direct_exec import (
    BASH_BUILTINS,
    BASH_KEYWORDS,
    BASH_MANAGED,
    direct_env,
    find_command,
    is_bash,
    plain_words,
    plan,
)

BASH = shutil.which("bash")
needs_bash = pytest.mark.skipif(BASH is None, reason="bash is not installed")

PLAIN = [
    ("ls", ["ls"]),
    ("ls -la /tmp", ["ls", "-la", "/tmp"]),
    ("  pytest   -q\ttests/x.py  ", ["pytest", "-q", "tests/x.py"]),
    ("/bin/true", ["/bin/true"]),
    ("./run.sh --mode=fast a,b c:d e+f 50% user@host", None),  # filled below
    ("make -j4 all", ["make", "-j4", "all"]),
    ("git log --oneline -5", ["git", "log", "--oneline", "-5"]),
    ("true", ["true"]),  # lone: /usr/bin/true is the same
    ("false", ["false"]),
]
PLAIN[4] = (PLAIN[4][0], PLAIN[4][0].split())

SHELL_NEEDED = [
    "",
    "   ",
    "echo hi",  # builtin: /usr/bin/echo takes other options
    "true --help",  # the builtin ignores it, /usr/bin/true prints its help
    "false 1",
    "cd /tmp",
    "exit 3",
    "test -f x",
    "[ -f x ]",
    "printf x",
    "read x",
    "export A",
    ". ./env.sh",
    "source env.sh",
    ": nothing",
    "exec ls",
    "command ls",
    "kill 1",
    "if",
    "time ls",
    "coproc ls",
    "function f",
    "while",
    "X=1 ls",
    "A=b",
    "%1",  # bash: `fg %1`
    "ls 'a b'",
    'ls "a"',
    "ls $HOME",
    "ls ${HOME}",
    "ls `pwd`",
    "ls \\a",
    "ls > out",
    "ls < in",
    "ls 2>&1",
    "ls | wc",
    "ls *",
    "ls a?",
    "ls [ab]",
    "ls ~",
    "ls ~/x",
    "ls a{b,c}",
    "ls; ls",
    "ls && ls",
    "ls || ls",
    "ls &",
    "ls\nls",
    "ls # comment",
    "ls (x)",
    "!ls",
    "ls !x",
    "ls ^x",
    "ls\r",
    "ls é",  # not ASCII: left to the shell's own idea of a word
    "ls\u00a0x",  # a no-break space is no blank to bash
]


@pytest.mark.parametrize(("script", "words"), PLAIN)
def test_plain_commands_are_split_into_their_words(script: str, words: list[str]) -> None:
    assert plain_words(script) == words


@pytest.mark.parametrize("script", SHELL_NEEDED)
def test_commands_with_shell_syntax_or_builtins_need_the_shell(script: str) -> None:
    assert plain_words(script) is None


@needs_bash
def test_builtin_and_keyword_lists_cover_this_bash() -> None:
    assert BASH is not None  # needs_bash

    def compgen(flag: str) -> set[str]:
        out = subprocess.run([BASH, "-c", f"compgen {flag}"], capture_output=True, text=True)
        return set(out.stdout.split())

    assert compgen("-b") <= BASH_BUILTINS
    assert compgen("-k") <= BASH_KEYWORDS


def _bash_env(env: dict[str, str], cwd: Path, command: str = "/usr/bin/env") -> dict[str, str]:
    out = subprocess.run(
        [BASH or "bash", "-c", command, "tui:t"],
        env=env,
        cwd=cwd,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


@needs_bash
def test_every_variable_bash_sets_itself_is_managed_or_passed_on_unchanged(
    tmp_path: Path,
) -> None:
    names = subprocess.run(
        [BASH or "bash", "-c", "compgen -v"], env={}, capture_output=True, text=True
    ).stdout.split()
    handled = {"PWD", "SHLVL", "OLDPWD", "_", "PATH"}  # direct_env reproduces these
    for name in names:
        if name in BASH_MANAGED or name in handled:
            continue
        env = {"PATH": "/usr/bin:/bin", name: "zz"}
        assert _bash_env(env, tmp_path).get(name) == "zz", name


@needs_bash
@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"SHLVL": "3"},
        {"SHLVL": "07"},
        {"OLDPWD": "/nonexistent"},
        {"OLDPWD": "/usr"},
        {"OLDPWD": "sub"},
        {"PWD": "/nonexistent"},
        {"PWD": "LINK"},
        {"PWD": "LINK/"},
        {"A-B": "1", "x y": "2", "EMPTY": ""},
    ],
)
def test_the_environment_is_the_one_bash_would_hand_over(
    tmp_path: Path, extra: dict[str, str]
) -> None:
    real = tmp_path / "real"
    (real / "sub").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(real)
    env = {"PATH": "/usr/bin:/bin", "HOME": "/root"}
    env.update({k: v.replace("LINK", str(link)) for k, v in extra.items()})
    for cwd in (real, link):
        exe = find_command("env", env["PATH"], str(cwd))
        assert exe is not None
        want = _bash_env(env, cwd, "env")
        assert direct_env(env, str(cwd), exe) == want


def test_only_bash_is_skipped(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    path = str(bin_dir)
    assert not is_bash("zsh", path)
    assert not is_bash("fish", "/usr/bin:/bin")
    if BASH is not None:
        (bin_dir / "sh").symlink_to(BASH)
        assert is_bash("sh", path)  # sh that is bash
        assert is_bash(BASH, path)
        named = tmp_path / "bash-always"
        named.symlink_to(BASH)
        assert not is_bash(str(named), path)  # another name: always the shell
    dash = shutil.which("dash")
    if dash is not None:
        other = tmp_path / "other"
        other.mkdir()
        (other / "sh").symlink_to(dash)
        assert not is_bash("sh", str(other))  # dash forks for the command and maps signals


def test_a_plan_needs_bash_a_found_command_and_a_plain_environment(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin"}
    cwd = str(tmp_path)
    got = plan("ls -l", "bash", env, cwd)
    assert got is not None and got.argv == ["ls", "-l"]
    assert os.path.basename(got.executable) == "ls" and got.env["_"] == got.executable
    assert plan("ls -l", "zsh", env, cwd) is None
    assert plan("no-such-command-xyz", "bash", env, cwd) is None  # bash says "not found"
    assert plan("ls", "bash", {}, cwd) is None  # no PATH: bash's default path differs
    for key in ("BASH_ENV", "SHELLOPTS", "IFS", "BASH_FUNC_ls%%"):
        assert plan("ls", "bash", {**env, key: "x"}, cwd) is None, key
    assert plan("ls", "bash", {**env, "MY_BASH_FUNC_ls%%": "x", "SHLVL": "3"}, cwd) is not None
    assert plan("ls", "bash", {**env, "SHLVL": "999"}, cwd) is None  # bash warns
    assert plan("ls", "bash", {**env, "SHLVL": "x"}, cwd) is None
    true = plan("true", "bash", env, cwd)
    assert true is not None and true.executable in ("/usr/bin/true", "/bin/true")


def test_commands_are_found_as_bash_finds_them(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "tool").write_text("#!/bin/sh\n")  # not executable: bash looks further
    (b / "tool").write_text("#!/bin/sh\n")
    (b / "tool").chmod(0o755)
    (a / "dir").mkdir()
    path = f"{a}:{b}"
    assert find_command("tool", path, str(tmp_path)) == str(b / "tool")
    assert find_command("dir", path, str(tmp_path)) is None
    assert find_command("./b/tool", path, str(tmp_path)) == "./b/tool"
    assert find_command("./a/tool", path, str(tmp_path)) is None
    # Found through a relative PATH entry: bash would name it so; left to bash.
    assert find_command("tool", f"b:{a}", str(tmp_path)) is None


def test_a_directory_that_is_gone_is_left_to_the_shell(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    here = os.getcwd()
    os.chdir(gone)
    try:
        gone.rmdir()
        assert plan("ls", "bash", {"PATH": "/usr/bin:/bin"}, ".") is None
    finally:
        os.chdir(here)
