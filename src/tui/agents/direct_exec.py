"""Whether a shell task's script can be started without the shell, and how.

GNU make does this for every recipe line (job.c, ``construct_command_argv_internal``): a line
holding none of its ``sh_chars`` whose first word is none of its ``sh_cmds`` (the builtins and
keywords) is split on blanks and exec'd directly, saving a shell start per line. The shell agent
does the same, stricter, and only where the result is exactly what ``bash -c SCRIPT`` would
give. For such a script bash itself does not fork: it looks the command up on PATH and execs it
in its own process ("one-shot" exec), so the process, its group, output and exit code are the
same; what bash adds is reproduced in :func:`direct_env`, and anything this module cannot
reproduce exactly goes to the shell:

* every character is in :data:`PLAIN` (ASCII letters, digits and ``_-./,:+%@=``): no quotes,
  ``$``, backslash, redirection, pipes, globs, ``~``, braces, ``;``/``&``, comments, newlines;
* the first word is no bash builtin or keyword, holds no ``=`` (an assignment) and does not
  start with ``%`` (a job: ``%1`` is ``fg %1``);
* the shell is bash (``bash``, or ``sh`` when it is bash): dash, which ``sh`` is on Debian,
  forks for the last command and turns a child's death by signal into ``128+n``;
* the environment holds nothing that changes what bash runs or that bash rewrites for its
  children (``BASH_ENV``, exported functions, ``SHELLOPTS``, ``IFS``, ... :data:`BASH_MANAGED`)
  and a ``SHLVL`` bash would keep as it is;
* the command is found on PATH (in an absolute directory) as an executable file: "command not
  found", "Permission denied" and the like are bash's own to say, with its exit codes.

One exception, as make keeps its own list: a lone ``true`` or ``false`` (no arguments) is a bash
builtin whose coreutils program does exactly the same (no output, exit 0 or 1, reads neither
environment nor input), so it runs ``/usr/bin/true`` / ``/usr/bin/false``. ``echo``, ``test``
and the rest are not: their programs take other options than the builtins.

If the exec itself then fails (a script without ``#!``, which bash would run itself; a missing
interpreter), nothing ran: the caller starts the shell instead.
"""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tui.procs.run_env import RunEnv, layers

# Characters with no meaning to the shell in any position of a word (make's sh_chars, inverted).
PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./,:+%@=")
BLANKS = " \t"
_PLAIN_OR_BLANK = PLAIN | frozenset(BLANKS)


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


# bash 5.2: `compgen -b` and `compgen -k` (tests compare them with the local bash).
BASH_BUILTINS = _names(
    ". : [ alias bg bind break builtin caller cd command compgen complete compopt continue "
    "declare dirs disown echo enable eval exec exit export false fc fg getopts hash help "
    "history jobs kill let local logout mapfile popd printf pushd pwd read readarray readonly "
    "return set shift shopt source suspend test times trap true type typeset ulimit umask "
    "unalias unset wait"
)
BASH_KEYWORDS = _names(
    "if then else elif fi case esac for select while until do done in function time { } ! "
    "[[ ]] coproc"
)

# Inherited variables bash rewrites or drops before it execs a command, or that make it run
# something first or differently (tests check every variable bash sets itself against this).
BASH_MANAGED = _names(
    "BASH BASHOPTS BASHPID BASH_ARGV0 BASH_COMMAND BASH_ENV BASH_EXECUTION_STRING "
    "BASH_SUBSHELL BASH_VERSINFO BASH_VERSION BASH_XTRACEFD COMP_WORDBREAKS EPOCHREALTIME "
    "EPOCHSECONDS HISTCMD IFS LINENO OPTERR OPTIND POSIXLY_CORRECT PPID PS0 PS1 PS2 PS3 PS4 "
    "RANDOM SHELLOPTS SRANDOM"
)
EXPORTED_FUNCTION = "BASH_FUNC_"
SHLVL_MAX = 998  # bash warns and resets from 999 on (it counts itself in, then out)

# The lone builtins whose programs behave exactly alike (see the module's docstring).
SAME_AS_PROGRAM = {
    "true": ("/usr/bin/true", "/bin/true"),
    "false": ("/usr/bin/false", "/bin/false"),
}


def plain_words(script: str) -> list[str] | None:
    """The words of ``script`` when it is one simple command a shell would run without any
    expansion and its first word is no builtin, keyword or assignment; else None. Pure."""
    # Set operations and split in C (a test per character was ~2 us for a short script).
    if not _PLAIN_OR_BLANK.issuperset(script):
        return None
    words = script.split()  # on blanks: no other whitespace got past the check above
    if not words:
        return None
    first = words[0]
    if "=" in first or first.startswith("%"):  # an assignment; `%1` means `fg %1` to bash
        return None
    if first in BASH_BUILTINS or first in BASH_KEYWORDS:
        if len(words) == 1 and first in SAME_AS_PROGRAM:
            return words
        return None
    return words


@functools.lru_cache(maxsize=16)
def is_bash(shell: str, path: str) -> bool:
    """Whether ``shell`` (a name looked up on ``path``, or a path) is bash. Remembered: a
    shell is not replaced while the engine runs, and this costs a few stat calls a task."""
    if os.path.basename(shell) not in ("bash", "sh"):
        return False
    found = shell if os.sep in shell else shutil.which(shell, path=path)
    return found is not None and os.path.basename(os.path.realpath(found)) == "bash"


@dataclass(frozen=True)
class Direct:
    """How to start the command: ``executable`` with ``argv`` (argv[0] as written) in ``env``."""

    executable: str
    argv: list[str]
    env: dict[str, str]


def plan(script: str, shell: str, env: Mapping[str, str], cwd: str) -> Direct | None:
    """How to start ``script`` without ``shell`` so that nothing a user sees differs from
    ``shell -c script``; None when the shell must run it."""
    words = plain_words(script)
    if words is None:
        return None
    path = env.get("PATH")
    if not path or not is_bash(shell, path) or not _plain_env(env):
        return None
    if words[0] in SAME_AS_PROGRAM:
        # Reads no environment: handed over as it is (~10 us a task less), not copied (a
        # run's env is its own dict, which nothing changes once the run has started).
        exe = _program(words[0])
        if exe is None:
            return None
        return Direct(exe, words, env if isinstance(env, dict) else dict(env))
    exe = find_command(words[0], path, cwd)
    if exe is None:
        return None
    try:
        return Direct(exe, words, direct_env(env, cwd, exe))
    except OSError:  # the directory is gone (getcwd fails): let the shell meet that
        return None


def _plain_env(env: Mapping[str, str]) -> bool:
    layered = layers(env)
    if layered is None:
        if not _plain_names(env):
            return False
    elif not (_plain_base(layered[0]) and _plain_names(layered[1])):
        return False
    shlvl = env.get("SHLVL")
    return shlvl is None or (shlvl.isascii() and shlvl.isdigit() and int(shlvl) <= SHLVL_MAX)


def _plain_names(names: Iterable[str]) -> bool:
    # Set and string operations in C: a Python test per variable was ~45 calls a task.
    return BASH_MANAGED.isdisjoint(names) and (
        f"\0{EXPORTED_FUNCTION}" not in "\0" + "\0".join(names)
    )


_base_checked: tuple[Mapping[str, str], bool] | None = None


def _plain_base(base: Mapping[str, str]) -> bool:
    """``_plain_names`` of the environment every run shares, checked once per base (a new
    one is made only when the engine's own environment changes): ~5 µs a run."""
    global _base_checked
    if _base_checked is None or _base_checked[0] is not base:
        _base_checked = (base, _plain_names(base))
    return _base_checked[1]


def find_command(word: str, path: str, cwd: str) -> str | None:
    """Where bash would find ``word``: itself when it names a file (it holds a slash), else the
    first executable regular file in a PATH directory. None when bash would not run it or
    would name it otherwise (a relative PATH entry)."""
    if "/" in word:
        full = os.path.join(cwd, word)
        return word if _executable(full) else None
    for d in path.split(":"):
        if not d.startswith("/"):
            # bash would name the command relative to its directory: leave it to bash.
            if _executable(os.path.join(cwd, d or ".", word)):
                return None
            continue
        full = os.path.join(d, word)
        if _executable(full):
            return full
    return None


@functools.lru_cache(maxsize=4)
def _program(name: str) -> str | None:
    return next((p for p in SAME_AS_PROGRAM[name] if _executable(p)), None)


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def direct_env(env: Mapping[str, str], cwd: str, exe: str) -> dict[str, str]:
    """``env`` as bash passes it to a command it execs: ``PWD`` the directory (the inherited
    one if it names the same directory), ``SHLVL`` as inherited (0 when unset: bash counts
    itself in and out), ``OLDPWD`` only if it names a directory, ``_`` the command's path."""
    pwd = env.get("PWD", "")
    if not (pwd.startswith("/") and _same_dir(pwd, cwd)):
        pwd = os.path.realpath(cwd)
    changes = {"PWD": pwd, "SHLVL": str(int(env.get("SHLVL") or 0)), "_": exe}
    oldpwd = env.get("OLDPWD")
    if isinstance(env, RunEnv) and (oldpwd is None or os.path.isdir(os.path.join(cwd, oldpwd))):
        return env.over(changes)  # its layers kept (tui.procs.run_env)
    out = dict(env)
    out.update(changes)
    if oldpwd is not None and not os.path.isdir(os.path.join(cwd, oldpwd)):
        del out["OLDPWD"]
    return out


def _same_dir(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
