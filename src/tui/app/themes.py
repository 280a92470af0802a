"""Colour themes: TOML files turned into Textual ``Theme`` objects.

A theme is one ``*.toml`` file (see ``themes/tui-dark.toml`` for the documented format). Themes
come from two places, loaded in this order so a user file can replace a built-in theme of the
same name:

1. the built-in themes shipped with tui (:data:`BUILTIN_THEME_DIR`);
2. the user's own directory (:func:`user_theme_dir`, ``$TUI_CONFIG_DIR/themes`` if set).

Loading never takes the app down: :func:`discover_themes` collects every problem as a
readable message in :attr:`ThemeLoad.errors` and carries on with the files that did load.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from textual.color import Color, ColorParseError
from textual.theme import Theme

from tui.config.paths import user_config_dir
from tui.config.toml_source import TomlProblem, read_toml

__all__ = [
    "BUILTIN_THEME_DIR",
    "COLOR_KEYS",
    "DEFAULT_THEME",
    "FALLBACK_THEME",
    "LOW_COLOR_THEME",
    "REQUIRED_COLOR_KEYS",
    "ThemeError",
    "ThemeLoad",
    "builtin_theme_dir",
    "discover_themes",
    "load_theme_file",
    "pick_theme",
    "user_theme_dir",
]

DEFAULT_THEME = "tui-dark"
# Picked when the user chose no theme and the terminal has only the 16 standard colours.
LOW_COLOR_THEME = "high-contrast"
RICH_COLORS = ("truecolor", "256")  # colour systems the default theme is made for
# Always registered by Textual itself, so it is safe even if no theme file could be found.
FALLBACK_THEME = "textual-dark"

# The [colors] keys a theme file may set: exactly the colour fields of textual.theme.Theme.
COLOR_KEYS: tuple[str, ...] = (
    "primary",
    "secondary",
    "accent",
    "foreground",
    "background",
    "surface",
    "panel",
    "boost",
    "warning",
    "error",
    "success",
)
# Textual cannot build a theme without ``primary``; every other colour has a derived default.
REQUIRED_COLOR_KEYS: tuple[str, ...] = ("primary",)

# Top-level keys of a theme file and the type each must have.
_TOP_LEVEL: dict[str, type | tuple[type, ...]] = {
    "name": str,
    "dark": bool,
    "luminosity_spread": (int, float),
    "text_alpha": (int, float),
    "colors": dict,
    "variables": dict,
}

_PACKAGE_THEME_DIR = "builtin_themes"


class ThemeError(Exception):
    """A theme file could not be loaded. ``str(err)`` names the file and the problem."""

    def __init__(self, message: str, path: Path | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.path = path


@dataclass
class ThemeLoad:
    """Result of :func:`discover_themes`: the themes that loaded, and why others did not."""

    themes: list[Theme] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.themes]


# ----------------------------------------------------------------------------- locations


def builtin_theme_dir() -> Path:
    """Where the built-in themes live.

    In a source checkout / editable install that is the repo-root ``themes/`` directory (the
    one to edit). An installed wheel has no repo root, so there the themes are expected as
    package data in ``tui/app/builtin_themes/`` (for a wheel build that directory is a symlink
    to the repo-root ``themes/`` plus a ``package-data`` entry, so there is one copy of each
    file). The checkout wins when both exist; if neither does, the repo-root path is returned
    and discovery simply finds no built-in themes (Textual's own themes still work).
    """
    repo_root = Path(__file__).resolve().parents[3]
    repo_dir = repo_root / "themes"
    # pyproject.toml marks a source checkout; an installed package's parents[3] is just lib/.
    if (repo_root / "pyproject.toml").is_file() and repo_dir.is_dir():
        return repo_dir
    try:
        packaged = Path(str(resources.files("tui.app") / _PACKAGE_THEME_DIR))
    except (ModuleNotFoundError, TypeError):  # pragma: no cover - zip imports etc.
        packaged = None
    if packaged is not None and packaged.is_dir():
        return packaged
    return repo_dir


BUILTIN_THEME_DIR: Path = builtin_theme_dir()


def user_theme_dir() -> Path:
    """The user's theme directory: ``<user config dir>/themes``."""
    return user_config_dir() / "themes"


# ----------------------------------------------------------------------------- loading


def _did_you_mean(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _type_name(expected: type | tuple[type, ...]) -> str:
    names = {str: "a string", bool: "true or false", dict: "a table", int: "a number"}
    if isinstance(expected, tuple):
        expected = expected[0]
    return names.get(expected, expected.__name__)


def load_theme_file(path: str | os.PathLike[str]) -> Theme:
    """Load one theme file, raising :class:`ThemeError` with a precise message on any problem."""
    path = Path(path)

    def fail(problem: str) -> ThemeError:
        return ThemeError(f"{path}: {problem}", path)

    # Read as every config file is: bounded in size and nesting, each failure a message.
    try:
        _, data = read_toml(path)
    except FileNotFoundError as exc:
        raise fail(f"cannot read file: {exc.strerror or exc}") from None
    except TomlProblem as exc:
        # An invalid TOML message already carries "(at line L, column C)".
        raise fail(f"{exc.message} ({exc.fix})") from None

    for key, value in data.items():
        if key not in _TOP_LEVEL:
            if key in COLOR_KEYS:
                raise fail(f"{key!r} is a colour; put it inside the [colors] table")
            raise fail(f"unknown key {key!r}{_did_you_mean(key, _TOP_LEVEL)}")
        expected = _TOP_LEVEL[key]
        # bool is an int subclass: refuse `text_alpha = true`.
        if not isinstance(value, expected) or (isinstance(value, bool) and expected is not bool):
            raise fail(f"{key!r} must be {_type_name(expected)}, got {value!r}")

    name = data.get("name")
    if name is None:
        raise fail('missing "name" (add a line like: name = "my-theme")')
    name = name.strip()
    if not name:
        raise fail('"name" must not be empty')

    for key in ("luminosity_spread", "text_alpha"):
        if key in data and not 0 <= data[key] <= 1:
            raise fail(f"{key!r} must be between 0 and 1, got {data[key]!r}")

    colors: dict[str, Any] | None = data.get("colors")
    if colors is None:
        raise fail("missing [colors] table")
    parsed: dict[str, Any] = {}  # Theme keyword arguments (colors)
    for key, value in colors.items():
        if key not in COLOR_KEYS:
            raise fail(f"unknown colour [colors].{key}{_did_you_mean(key, COLOR_KEYS)}")
        if not isinstance(value, str):
            raise fail(f'[colors].{key} must be a string such as "#1e1e2e", got {value!r}')
        try:
            Color.parse(value)
        except ColorParseError as exc:
            hint = (
                f"did you mean {exc.suggested_color!r}?"
                if exc.suggested_color
                else 'use "#rrggbb", "#rrggbbaa", "rgb(r,g,b)", "hsl(h,s%,l%)" or a colour name'
            )
            raise fail(f"[colors].{key} = {value!r} is not a colour ({hint})") from None
        parsed[key] = value.strip()
    missing = [k for k in REQUIRED_COLOR_KEYS if k not in parsed]
    if missing:
        raise fail(f"[colors] is missing {', '.join(missing)}")

    variables: dict[str, Any] = data.get("variables", {})
    clean_vars: dict[str, str] = {}
    for key, value in variables.items():
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise fail(f"[variables].{key} must be a string, got {value!r}")
        clean_vars[key] = str(value)

    return Theme(
        name=name,
        dark=data.get("dark", True),
        luminosity_spread=float(data.get("luminosity_spread", 0.15)),
        text_alpha=float(data.get("text_alpha", 0.95)),
        variables=clean_vars,
        **parsed,
    )


def _theme_files(directory: Path, errors: list[str]) -> list[Path]:
    try:
        if not directory.is_dir():
            return []
        return sorted(p for p in directory.iterdir() if p.suffix == ".toml" and p.is_file())
    except OSError as exc:
        errors.append(f"{directory}: cannot list theme directory: {exc.strerror or exc}")
        return []


def discover_themes(*, builtin_dir: Path | None = None, user_dir: Path | None = None) -> ThemeLoad:
    """Load built-in then user themes. Never raises; broken files are reported in ``errors``.

    A user theme whose ``name`` matches a built-in one replaces it (keeping its position in
    the list). Two files in the *same* directory with the same name are reported as an error;
    the later file (by file name) wins.
    """
    errors: list[str] = []
    by_name: dict[str, Theme] = {}
    for directory in (
        builtin_dir if builtin_dir is not None else BUILTIN_THEME_DIR,
        user_dir if user_dir is not None else user_theme_dir(),
    ):
        seen_here: dict[str, Path] = {}
        for path in _theme_files(directory, errors):
            try:
                theme = load_theme_file(path)
            except ThemeError as exc:
                errors.append(str(exc))
                continue
            except Exception as exc:  # pragma: no cover - belt and braces: never crash the UI
                errors.append(f"{path}: unexpected error: {exc!r}")
                continue
            if theme.name in seen_here:
                errors.append(
                    f"{path}: theme name {theme.name!r} is also used by "
                    f"{seen_here[theme.name].name}; using {path.name}"
                )
            seen_here[theme.name] = path
            by_name[theme.name] = theme
    return ThemeLoad(themes=list(by_name.values()), errors=errors)


# ----------------------------------------------------------------------------- choosing


def pick_theme(
    requested: str | None,
    available: Collection[str],
    *,
    colors: str | None = "truecolor",
) -> str:
    """The theme to start with: ``requested`` (the user's choice) if it is available;
    otherwise ``high-contrast`` when the terminal shows only the 16 standard colours (or none),
    else the default.

    ``colors`` is Rich's reading of the terminal (``truecolor``, ``256``, ``standard``,
    ``windows`` or ``None``). Without ``COLORTERM`` (often not forwarded over SSH) and without
    a ``-256color`` TERM, the default theme's colours would be squeezed into 16 and lose
    their contrast; ``high-contrast`` is built from exactly those 16.
    """
    if requested and requested in available:
        return requested
    if colors not in RICH_COLORS and LOW_COLOR_THEME in available:
        return LOW_COLOR_THEME
    if DEFAULT_THEME in available:
        return DEFAULT_THEME
    return FALLBACK_THEME
