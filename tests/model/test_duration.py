import pytest

from tui.model.duration import format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30m", 1800.0),
        ("1h30m", 5400.0),
        ("45s", 45.0),
        ("1.5h", 5400.0),
        ("300ms", 0.3),
        ("2h45m30.5s", 9930.5),
        ("10us", 0.00001),
        ("10µs", 0.00001),
        ("10μs", 0.00001),
        ("250ns", 0.00000025),
        (".5s", 0.5),
        ("+1m", 60.0),
        ("0", 0.0),
        ("", 0.0),
        ("  5s ", 5.0),
        ("-0", 0.0),
        (0, 0.0),
        (90, 90.0),
        (2.5, 2.5),
        (None, 0.0),
    ],
)
def test_parse_duration(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds, rel=1e-12, abs=0)


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ("10 minutes", "invalid duration"),
        ("1h 30m", "invalid duration"),
        ("5", 'missing unit in duration "5"'),
        ("-5s", "must be >= 0"),
        (-5, "must be >= 0"),
        ("5d", "invalid duration"),
        ("h", "invalid duration"),
        ("-", "invalid duration"),
        (True, "expected a duration"),
        (float("inf"), "finite"),
        ([1], "expected a duration"),
    ],
)
def test_parse_duration_errors(value, needle):
    with pytest.raises(ValueError) as caught:
        parse_duration(value)
    assert needle in str(caught.value)


def test_parse_error_suggests_syntax():
    with pytest.raises(ValueError) as caught:
        parse_duration("10 minutes")
    assert '"1h30m"' in str(caught.value)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (45, "45s"),
        (5400, "1h30m"),
        (3600, "1h"),
        (90, "1m30s"),
        (9930.5, "2h45m30.5s"),
        (0.3, "300ms"),
        (0.0015, "1.5ms"),
        (0.00001, "10µs"),
        (0.00000025, "250ns"),
        (3600.5, "1h0.5s"),
    ],
)
def test_format_duration(seconds, text):
    assert format_duration(seconds) == text


@pytest.mark.parametrize("seconds", [0, 0.1, 0.3, 1, 1.5, 59.999, 61, 5400, 86400 * 3, 0.000001])
def test_format_then_parse_is_exact(seconds):
    assert parse_duration(format_duration(seconds)) == seconds


def test_format_rejects_negative():
    with pytest.raises(ValueError, match=">= 0"):
        format_duration(-1)
