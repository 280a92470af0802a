from fractions import Fraction
from typing import cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

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


# Exact ties of half a nanosecond (k/1024 s for odd k: 976562.5 ns) round to even, as Go's
# integer nanoseconds and Fraction's round() do; the rest are the odd corners of floats.
_ODD_SECONDS = [
    1 / 1024,
    3 / 1024,
    5e-10,
    1.5e-9,
    2.5e-9,
    4.9999999e-10,
    1e-9,
    0.1,
    0.7,
    1 / 3,
    2 / 3,
    59.999999999,
    59.9999999995,
    1e-300,
    5e-324,
    123456789.123456789,
    2**53 + 2.0,
    9223372036.854775807,
    1e300,
    1.7976931348623157e308,
    10**30,
    2**63,
]


def _exactly(seconds: float) -> str:
    """The text by the general way: any other number (here a Fraction) is rounded in exact
    Fraction arithmetic; ints and floats go a faster way that must give the same text."""
    return format_duration(cast(float, Fraction(seconds)))


@pytest.mark.parametrize("seconds", _ODD_SECONDS)
def test_format_of_a_float_is_its_exact_value_rounded(seconds):
    assert format_duration(seconds) == _exactly(seconds)


@given(st.floats(min_value=0, allow_nan=False, allow_infinity=False) | st.integers(0, 10**25))
def test_format_is_the_same_for_any_number(seconds):
    assert format_duration(seconds) == _exactly(seconds)


def test_format_rounds_a_half_nanosecond_to_even():
    assert format_duration(1 / 1024) == "976.562µs"  # 976562.5 ns
    assert format_duration(3 / 1024) == "2.929688ms"  # 2929687.5 ns
