"""Theme files, theme discovery, theme choice and the remembered UI state."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.color import Color
from textual.widgets import Static

from tui.app import themes as themes_mod
from tui.app import ui_state
from tui.app.state_style import STATE_STYLES
from tui.app.themes import (
    BUILTIN_THEME_DIR,
    COLOR_KEYS,
    DEFAULT_THEME,
    FALLBACK_THEME,
    LOW_COLOR_THEME,
    ThemeError,
    discover_themes,
    load_theme_file,
    pick_theme,
    user_theme_dir,
)

SHIPPED = sorted(BUILTIN_THEME_DIR.glob("*.toml"))
# Colours every shipped theme must set itself (boost may be derived).
APP_COLORS = [k for k in COLOR_KEYS if k != "boost"]
# Theme colours the task list uses for state text (text-muted is derived from foreground).
STATE_COLORS = sorted({s.color for s in STATE_STYLES.values()} - {"text-muted"})

MINIMAL = """\
name = "{name}"
dark = true
[colors]
primary = "#112233"
background = "{background}"
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def contrast(a: str, b: str) -> float:
    """WCAG contrast ratio of two opaque colours."""

    def luminance(c: Color) -> float:
        def channel(v: int) -> float:
            s = v / 255
            return s / 12.92 if s <= 0.03928 else ((s + 0.055) / 1.055) ** 2.4

        return 0.2126 * channel(c.r) + 0.7152 * channel(c.g) + 0.0722 * channel(c.b)

    hi, lo = sorted((luminance(Color.parse(a)), luminance(Color.parse(b))), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


# ----------------------------------------------------------------------------- shipped themes


def test_at_least_three_themes_ship_including_default_and_light() -> None:
    names = [load_theme_file(p).name for p in SHIPPED]
    assert len(SHIPPED) >= 3
    assert len(names) == len(set(names)), "shipped theme names must be unique"
    assert DEFAULT_THEME in names
    assert "tui-light" in names


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_theme_loads_with_the_colours_the_app_needs(path: Path) -> None:
    theme = load_theme_file(path)
    for key in APP_COLORS:
        value = getattr(theme, key)
        assert value, f"{path.name} must set [colors].{key}"
        Color.parse(value)
    # Readable: body text and every state colour stand out from the background.
    foreground, background = theme.foreground, theme.background
    assert foreground is not None and background is not None  # both in APP_COLORS
    assert contrast(foreground, background) >= 7
    for key in STATE_COLORS:
        assert contrast(getattr(theme, key), background) >= 4.5, (path.name, key)
    assert theme.dark == (Color.parse(background).brightness < 0.5)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_theme_documents_the_format(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("#")
    for word in ("[colors]", "[variables]", "TUI_CONFIG_DIR", *COLOR_KEYS):
        assert word in text.split("\nname =")[0], f"{path.name} header should mention {word}"


def test_high_contrast_uses_only_the_16_standard_colours() -> None:
    from rich._palettes import STANDARD_PALETTE

    standard = {Color(*STANDARD_PALETTE[i]) for i in range(16)}
    theme = load_theme_file(BUILTIN_THEME_DIR / "high-contrast.toml")
    for key in APP_COLORS:
        assert Color.parse(getattr(theme, key)) in standard, key


# ----------------------------------------------------------------------------- load errors


def test_toml_syntax_error_names_file_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.toml", 'name = "x"\n[colors]\nprimary = = "#fff"\n')
    with pytest.raises(ThemeError) as err:
        load_theme_file(path)
    message = str(err.value)
    assert str(path) in message
    assert "invalid TOML" in message
    assert "line 3" in message and "column" in message
    assert err.value.path == path


def test_invalid_colour_names_the_key(tmp_path: Path) -> None:
    path = write(tmp_path / "t.toml", 'name = "t"\n[colors]\nprimary = "#123456"\nerror = "#12"\n')
    with pytest.raises(ThemeError, match=r"\[colors\]\.error = '#12' is not a colour"):
        load_theme_file(path)


def test_misspelt_colour_value_suggests_a_colour(tmp_path: Path) -> None:
    path = write(tmp_path / "t.toml", 'name = "t"\n[colors]\nprimary = "blu"\n')
    with pytest.raises(ThemeError, match="did you mean 'blue'"):
        load_theme_file(path)


def test_unknown_colour_key_suggests_the_right_one(tmp_path: Path) -> None:
    path = write(tmp_path / "t.toml", 'name = "t"\n[colors]\nprimery = "#123456"\n')
    with pytest.raises(ThemeError) as err:
        load_theme_file(path)
    assert str(path) in str(err.value)
    assert "unknown colour [colors].primery (did you mean 'primary'?)" in str(err.value)


def test_unknown_top_level_key_suggests_the_right_one(tmp_path: Path) -> None:
    path = write(tmp_path / "t.toml", 'name = "t"\ndrak = true\n[colors]\nprimary = "#123"\n')
    with pytest.raises(ThemeError, match="unknown key 'drak' \\(did you mean 'dark'\\?\\)"):
        load_theme_file(path)


def test_colour_outside_colors_table_is_explained(tmp_path: Path) -> None:
    path = write(tmp_path / "t.toml", 'name = "t"\nprimary = "#123"\n[colors]\n')
    with pytest.raises(ThemeError, match=r"'primary' is a colour; put it inside the \[colors\]"):
        load_theme_file(path)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('dark = true\n[colors]\nprimary = "#123"\n', 'missing "name"'),
        ('name = ""\n[colors]\nprimary = "#123"\n', "must not be empty"),
        ('name = "t"\n', r"missing \[colors\] table"),
        ('name = "t"\n[colors]\nbackground = "#000"\n', r"\[colors\] is missing primary"),
        ('name = "t"\ndark = "yes"\n[colors]\nprimary = "#123"\n', "'dark' must be true or"),
        ('name = "t"\ntext_alpha = 2\n[colors]\nprimary = "#123"\n', "between 0 and 1"),
        ('name = "t"\n[colors]\nprimary = 3\n', r"\[colors\]\.primary must be a string"),
        ('name = "t"\n[colors]\nprimary = "#123"\n[variables]\nx = [1]\n', r"\.x must be"),
    ],
)
def test_other_mistakes_are_named(tmp_path: Path, text: str, problem: str) -> None:
    path = write(tmp_path / "t.toml", text)
    with pytest.raises(ThemeError, match=problem) as err:
        load_theme_file(path)
    assert str(err.value).startswith(f"{path}: ")


def test_unreadable_or_non_utf8_file(tmp_path: Path) -> None:
    with pytest.raises(ThemeError, match="cannot read file"):
        load_theme_file(tmp_path / "missing.toml")
    path = tmp_path / "latin1.toml"
    path.write_bytes(b'name = "caf\xe9"\n')
    with pytest.raises(ThemeError, match="not UTF-8"):
        load_theme_file(path)


def test_variables_and_options_reach_the_theme(tmp_path: Path) -> None:
    path = write(
        tmp_path / "t.toml",
        'name = " t "\ndark = false\nluminosity_spread = 0.1\ntext_alpha = 1\n'
        '[colors]\nprimary = "#123456"\n'
        '[variables]\nfooter-key-foreground = "#ff0000"\nscrollbar-size = 2\n',
    )
    theme = load_theme_file(path)
    assert theme.name == "t"
    assert theme.dark is False
    assert theme.luminosity_spread == 0.1 and theme.text_alpha == 1.0
    assert theme.variables == {"footer-key-foreground": "#ff0000", "scrollbar-size": "2"}
    assert theme.secondary is None  # left for Textual to derive


# ----------------------------------------------------------------------------- discovery


def test_user_theme_dir_follows_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert user_theme_dir() == tmp_path / "config" / "themes"
    monkeypatch.delenv("TUI_CONFIG_DIR")
    assert user_theme_dir().name == "themes"
    assert user_theme_dir().parent.name == "tui"


def test_discover_finds_builtins_when_user_dir_is_missing() -> None:
    load = discover_themes()
    assert load.errors == []
    assert sorted(load.names) == sorted(load_theme_file(p).name for p in SHIPPED)


def test_user_theme_overrides_builtin_and_adds_new(tmp_path: Path) -> None:
    user = user_theme_dir()
    write(user / "mine.toml", MINIMAL.format(name=DEFAULT_THEME, background="#010203"))
    write(user / "extra.toml", MINIMAL.format(name="extra", background="#040506"))
    load = discover_themes()
    assert load.errors == []
    by_name = {t.name: t for t in load.themes}
    assert by_name[DEFAULT_THEME].background == "#010203"
    assert by_name["extra"].background == "#040506"
    assert load.names.count(DEFAULT_THEME) == 1
    # The overridden theme keeps its place among the built-ins; new ones come after.
    assert load.names.index(DEFAULT_THEME) < load.names.index("extra")


def test_discover_reports_broken_files_instead_of_raising(tmp_path: Path) -> None:
    user = user_theme_dir()
    bad_syntax = write(user / "a-broken.toml", "name = \n")
    bad_colour = write(user / "b-colour.toml", 'name = "b"\n[colors]\nprimary = "nope"\n')
    write(user / "c-good.toml", MINIMAL.format(name="good", background="#000000"))
    write(user / "notes.txt", "not a theme")
    load = discover_themes()
    assert "good" in load.names and DEFAULT_THEME in load.names
    assert len(load.errors) == 2
    assert str(bad_syntax) in load.errors[0] and "line 1" in load.errors[0]
    assert str(bad_colour) in load.errors[1] and "[colors].primary" in load.errors[1]


def test_duplicate_names_in_one_dir_are_reported(tmp_path: Path) -> None:
    user = user_theme_dir()
    write(user / "one.toml", MINIMAL.format(name="dup", background="#000000"))
    write(user / "two.toml", MINIMAL.format(name="dup", background="#ffffff"))
    load = discover_themes()
    assert [t.background for t in load.themes if t.name == "dup"] == ["#ffffff"]
    assert len(load.errors) == 1 and "'dup'" in load.errors[0]


def test_discover_with_explicit_dirs(tmp_path: Path) -> None:
    builtin = tmp_path / "b"
    write(builtin / "x.toml", MINIMAL.format(name="x", background="#000000"))
    load = discover_themes(builtin_dir=builtin, user_dir=tmp_path / "nowhere")
    assert load.names == ["x"] and load.errors == []


# ----------------------------------------------------------------------------- picking


@pytest.mark.parametrize("colors", ["truecolor", "256"])
def test_pick_theme(colors: str) -> None:
    available = ["tui-dark", "tui-light", "high-contrast", "textual-dark"]
    assert pick_theme("tui-light", available, colors=colors) == "tui-light"
    assert pick_theme("gone", available, colors=colors) == DEFAULT_THEME
    assert pick_theme(None, available, colors=colors) == DEFAULT_THEME
    assert pick_theme("", available, colors=colors) == DEFAULT_THEME
    assert pick_theme("gone", ["textual-dark"], colors=colors) == FALLBACK_THEME


@pytest.mark.parametrize("colors", ["standard", "windows", None])
def test_pick_theme_on_a_16_colour_terminal(colors: str | None) -> None:
    available = ["tui-dark", "tui-light", "high-contrast", "textual-dark"]
    assert pick_theme(None, available, colors=colors) == LOW_COLOR_THEME
    assert pick_theme("gone", available, colors=colors) == LOW_COLOR_THEME
    assert pick_theme("tui-light", available, colors=colors) == "tui-light"  # a choice wins
    assert pick_theme(None, ["tui-dark"], colors=colors) == DEFAULT_THEME


# ----------------------------------------------------------------------------- ui state


def test_ui_state_round_trip(tmp_path: Path) -> None:
    assert ui_state.load_ui_state() == {"theme": None}
    assert ui_state.save_ui_state(theme="tui-light") is True
    assert ui_state.ui_state_path() == tmp_path / "state" / "ui.json"
    assert ui_state.load_ui_state()["theme"] == "tui-light"
    assert ui_state.save_ui_state(other=3) is True
    assert ui_state.load_ui_state() == {"theme": "tui-light", "other": 3}
    assert ui_state.save_ui_state(theme=None) is True
    assert ui_state.load_ui_state() == {"theme": None, "other": 3}
    assert json.loads(ui_state.ui_state_path().read_text()) == {"other": 3}
    # No temp files left behind.
    assert [p.name for p in ui_state.ui_state_path().parent.iterdir()] == ["ui.json"]


@pytest.mark.parametrize("content", [b"{not json", b"[1, 2]", b"\xff\xfe", b""])
def test_corrupt_ui_state_reads_as_defaults_and_is_repaired(content: bytes) -> None:
    path = ui_state.ui_state_path()
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    assert ui_state.load_ui_state() == {"theme": None}
    assert ui_state.save_ui_state(theme="kanagawa") is True
    assert ui_state.load_ui_state()["theme"] == "kanagawa"


def test_ui_state_save_failure_returns_false(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = write(tmp_path / "a-file", "")
    monkeypatch.setenv("TUI_STATE_DIR", str(blocker / "sub"))
    assert ui_state.save_ui_state(theme="x") is False
    assert ui_state.load_ui_state() == {"theme": None}


def test_ui_state_rejects_unserialisable_values() -> None:
    with pytest.raises(TypeError):
        ui_state.save_ui_state(theme=object())
    assert not ui_state.ui_state_path().exists()


# ----------------------------------------------------------------------------- in the app


class ThemedApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("hello")

    def on_mount(self) -> None:
        for theme in discover_themes().themes:
            self.register_theme(theme)


async def test_registered_themes_apply_in_textual() -> None:
    app = ThemedApp()
    async with app.run_test() as pilot:
        app.theme = "tui-light"
        await pilot.pause()
        light = tomllib.loads((BUILTIN_THEME_DIR / "tui-light.toml").read_text("utf-8"))
        assert Color.parse(app.theme_variables["background"]) == Color.parse(
            light["colors"]["background"]
        )
        assert app.current_theme.dark is False

        # Every shipped theme provides every variable the state styles refer to.
        for name in discover_themes().names:
            app.theme = name
            await pilot.pause()
            for style in STATE_STYLES.values():
                assert app.theme_variables.get(style.color), (name, style.color)


def test_builtin_dir_points_at_repo_themes() -> None:
    assert themes_mod.builtin_theme_dir() == BUILTIN_THEME_DIR
    assert (BUILTIN_THEME_DIR / f"{DEFAULT_THEME}.toml").is_file()


def test_a_theme_file_is_read_within_the_input_limits(tmp_path: Path) -> None:
    # As every config file: deep nesting is a message naming the file, not a RecursionError.
    path = write(tmp_path / "deep.toml", 'name = "deep"\nx = ' + "[" * 50_000 + "]" * 50_000)
    with pytest.raises(ThemeError, match="nested") as err:
        load_theme_file(path)
    assert str(err.value).startswith(f"{path}: ")
    load = discover_themes(builtin_dir=tmp_path / "none", user_dir=tmp_path)
    assert load.names == [] and str(path) in load.errors[0]
