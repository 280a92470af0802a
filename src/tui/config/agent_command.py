"""A `start` agent's ``command`` template as a custom agent CLI.

    command = "AGENT_SYSTEM_MD='{role_file}' {bin} --model {model} '{prompt}'"

The template is split into words once, as a shell would split it (quotes group, and leading
``NAME=value`` words set environment variables); each word is one argument of the CLI. The
placeholders ``{bin}``, ``{model}``, ``{role}``, ``{role_file}``, ``{prompt}`` and ``{date}``
are filled inside those words. The task runs a small generated script whose words refer to
environment variables (``"${TUI_PROMPT}"``), so the prompt and role never pass through a
shell's parser: quotes, ``$()`` and newlines in them arrive as typed. Pipes, redirections and
``$(...)`` in the template itself are refused: it is an argv, not a shell command.
"""

from __future__ import annotations

import re
import shlex

from tui.model.suggest import did_you_mean

# placeholder -> the environment variable the generated script reads it from
PLACEHOLDER_ENV = {
    "bin": "TUI_AGENT_BIN",
    "model": "TUI_MODEL",
    "role": "TUI_ROLE",
    "role_file": "TUI_ROLE_FILE",
    "prompt": "TUI_PROMPT",
    "date": "TUI_DATE",
}
_TOKEN = re.compile(r"\{([A-Za-z_]*)\}")
_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.DOTALL)
_SHELL_ONLY = ("|", "&", ";", "<", ">", "$(", "`")


def check_command(template: str) -> list[tuple[str, str]]:
    """(message, fix) for each problem of an agent's command template."""
    try:
        words = shlex.split(template)
    except ValueError as e:
        return [(f"cannot split the command into words: {e}", "balance its quotes")]
    if not words:
        return [("the command is empty", 'write e.g. command = "{bin} --model {model} {prompt}"')]
    problems = []
    for word in words:
        if any(op in word for op in _SHELL_ONLY) and not _TOKEN.fullmatch(word):
            problems.append(
                (
                    f"{word!r}: tui runs the command as a list of arguments, never through "
                    "a shell (no pipes, redirections, `;` or $(...))",
                    "put the pipeline in a script and name the script in bin",
                )
            )
        for m in _TOKEN.finditer(word):
            if m.group(1) not in PLACEHOLDER_ENV:
                guess = did_you_mean(m.group(1), list(PLACEHOLDER_ENV))
                hint = f"did you mean {{{guess[0]}}}? " if guess else ""
                known = ", ".join("{" + p + "}" for p in PLACEHOLDER_ENV)
                problems.append((f"unknown placeholder {m.group(0)}", f"{hint}known: {known}"))
    if not any("{prompt}" in w for w in words):
        problems.append(
            ("the command never passes {prompt}", "add '{prompt}' where the CLI takes it")
        )
    return problems


def uses(template: str, placeholder: str) -> bool:
    return "{" + placeholder + "}" in template


def command_script(template: str) -> str:
    """The POSIX shell script that runs ``template`` (already checked) with its placeholders
    read from the environment (:data:`PLACEHOLDER_ENV`)."""
    words = shlex.split(template)
    env: list[str] = []
    while words and (m := _ASSIGN.match(words[0])) and len(words) > 1:
        env.append(f"export {m.group(1)}={_quoted(m.group(2))}")
        words.pop(0)
    run = " ".join(_quoted(w) for w in words)
    if not uses(template, "role_file"):
        return "\n".join([*env, f"exec {run}"])
    # The role in a file of its own for the CLI to read, removed when the CLI is done.
    return "\n".join(
        [
            'TUI_ROLE_FILE=$(mktemp "${TMPDIR:-/tmp}/tui-role.XXXXXX") || exit 1',
            "trap 'rm -f \"$TUI_ROLE_FILE\"' EXIT",
            "trap 'exit 143' TERM",
            'printf "%s" "$TUI_ROLE" > "$TUI_ROLE_FILE"',
            *env,
            run,
        ]
    )


def _quoted(word: str) -> str:
    """``word`` as one double-quoted shell word: literal text escaped, placeholders as
    ``${VAR}`` references (expanded, never re-parsed)."""
    out = []
    last = 0
    for m in _TOKEN.finditer(word):
        out.append(_escape(word[last : m.start()]))
        out.append("${" + PLACEHOLDER_ENV[m.group(1)] + "}")
        last = m.end()
    out.append(_escape(word[last:]))
    return '"' + "".join(out) + '"'


def _escape(text: str) -> str:
    return re.sub(r'([\\"$`])', r"\\\1", text)
