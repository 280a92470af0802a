"""A role's, context's or template's text: its prompt with placeholders filled in, or (with no
prompt) its file's contents and its command's output.

As `start` does (its DR-008 and DR-009): a relative ``file`` is taken from the working
directory (the project) whether the table is in the global or the local config; a missing
file is a warning and its contents are empty; ``{command_output}`` (and ``{command}``) are
empty when no command is set, ``{file}``/``{file_contents}`` when no file is.
"""

from __future__ import annotations

import datetime
from pathlib import Path

from tui.config import placeholders
from tui.config.commands import CommandResult, run_command
from tui.config.load import Origin
from tui.config.schema import DEFAULT_SHELL, Settings, Source
from tui.model.issues import TaskFileError

NO_INSTRUCTIONS = "None"  # what {instructions} says when the user typed nothing
MESSAGE_LINES = 8  # last lines of a failing command's output kept in its error
STDOUT_LINES = 2  # of those, kept for stdout when stderr has something to say


def source_path(src: Source, cwd: Path) -> Path:
    """``file`` with ~ expanded; a relative one is the working directory's (the project's)."""
    path = Path(src.file).expanduser()
    return path if path.is_absolute() else (cwd / path).absolute()


async def render(
    src: Source,
    origin: Origin,
    section: str,
    name: str,
    *,
    instructions: str,
    settings: Settings,
    cwd: Path,
    append_instructions: bool = False,
    variables: dict[str, str] | None = None,
    model: str = "",
    warnings: list[str] | None = None,
) -> str:
    """The text of ``src``, the [section.name] table of ``origin``.
    ``append_instructions``: a template without a prompt ends with the user's text.
    Problems that do not stop it (a missing file) are added to ``warnings``."""

    def fail(field: str, message: str, fix: str) -> TaskFileError:
        return TaskFileError([origin.issue(section, name, field, message, fix)])

    def contents() -> str:
        if not src.file:
            return ""
        path = source_path(src, cwd)
        try:
            return path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            if warnings is not None:
                where = f"{origin.path}: [{section}.{name}]"
                warnings.append(f"{where} file {path} not found; its contents are left out")
            return ""
        except OSError as e:
            reason = e.strerror or type(e).__name__
            raise fail("file", f"cannot read {path}: {reason}", "fix the path") from None

    async def output() -> str:
        if not src.command:
            return ""
        shell = src.shell or settings.shell or DEFAULT_SHELL
        shell_args = src.shell_args if src.shell_args is not None else settings.shell_args
        if src.shell_args is None and src.shell:
            shell_args = None  # a table's own interpreter takes its own flags
        timeout = src.command_timeout if src.command_timeout is not None else None
        timeout = settings.command_timeout if timeout is None else timeout
        try:
            result = await run_command(
                src.command, shell=shell, timeout=timeout, cwd=str(cwd), shell_args=shell_args
            )
        except ValueError as e:
            raise fail("shell", str(e), "set shell_args next to shell") from None
        except OSError as e:
            err = fail("shell", f"cannot start {shell!r}: {e.strerror}", "set an installed shell")
            raise err from None
        if result.exit_code is None:
            raise fail(
                "command",
                f"command still running after {timeout:g}s; it was stopped",
                "make it faster, or raise command_timeout",
            )
        if result.exit_code != 0:
            raise fail(
                "command",
                f"command exited with {result.exit_code}{_said(result)}",
                f"make the command succeed with {shell} in {cwd}",
            )
        return result.output.removesuffix("\n")

    if src.prompt is None:
        parts = [contents(), await output()]
        if append_instructions:
            parts.append(instructions)
        return "\n\n".join(p for p in parts if p)
    need = placeholders.used(src.prompt)
    values: dict[str, str] = {
        "instructions": instructions or NO_INSTRUCTIONS,
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": src.command,
        "model": model,
        "file": str(source_path(src, cwd)) if src.file else "",
        "file_contents": contents() if "file_contents" in need else "",
        "command_output": await output() if "command_output" in need else "",
    }
    return placeholders.substitute(src.prompt, values, variables)


def _said(result: CommandResult) -> str:
    """What a failing command said, one line per line: stderr's last non-blank lines first
    (why it failed is usually there), then stdout's last ones; MESSAGE_LINES in all."""
    err, out = _lines(result.stderr), _lines(result.stdout)
    keep_out = min(len(out), STDOUT_LINES if err else MESSAGE_LINES)
    err = err[-(MESSAGE_LINES - keep_out) :]
    out = out[len(out) - keep_out :]
    if not err:
        return (":\n" + "\n".join(f"  {ln}" for ln in out)) if out else " (no output)"
    text = ":\n  stderr:\n" + "\n".join(f"    {ln}" for ln in err)
    if out:
        text += "\n  stdout (last lines):\n" + "\n".join(f"    {ln}" for ln in out)
    return text


def _lines(text: str) -> list[str]:
    return [ln.rstrip() for ln in text.splitlines() if ln.strip()]
