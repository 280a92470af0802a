"""Go ``time.ParseDuration`` syntax <-> seconds, so YAML reads like the Go tool it mirrors."""

from __future__ import annotations

import math
import re
from fractions import Fraction

_NS_PER_S = 10**9
# Both micro signs are accepted, as Go does (U+00B5 micro sign, U+03BC greek mu).
_UNIT_NS: dict[str, int] = {
    "ns": 1,
    "us": 10**3,
    "µs": 10**3,
    "μs": 10**3,
    "ms": 10**6,
    "s": _NS_PER_S,
    "m": 60 * _NS_PER_S,
    "h": 3600 * _NS_PER_S,
}
_TERM = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_BARE_NUMBER = re.compile(r"\d+\.?\d*|\.\d+")
_EXAMPLE = 'write a number and a unit (h, m, s, ms, us, ns), e.g. "30m", "1h30m" or "45s"'
# Go's own limit (an int64 of nanoseconds, about 292 years); past it Go's ParseDuration fails.
MAX_NS = 2**63 - 1
MAX_SECONDS = MAX_NS / _NS_PER_S
_MAX_TEXT = 200  # characters; a longer "duration" is not one (and its digits cost to convert)
_TOO_LONG = "duration is longer than 2562047h47m16s (Go's limit, about 292 years)"


def parse_duration(value: str | int | float | None) -> float:
    """Seconds for a Go duration string or a bare number of seconds; 0 means no limit."""
    if value is None:
        return 0.0
    # bool is an int subclass; ``timeout: yes`` is a mistake, not one second.
    if isinstance(value, bool):
        raise ValueError(f"expected a duration, got {value!r}; {_EXAMPLE}")
    if isinstance(value, int | float):
        # Compared before float(): a 400-digit int does not fit one.
        if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
            raise ValueError(f"expected a finite duration, got {value!r}; {_EXAMPLE}")
        if value < 0:
            raise ValueError(f"duration must be >= 0; got {value!r}")
        if value > MAX_SECONDS:
            raise ValueError(f"{_TOO_LONG}; write e.g. 0 for no limit")
        return _whole_ns(Fraction(value) * _NS_PER_S, repr(value))
    if not isinstance(value, str):
        raise ValueError(f"expected a duration, got {type(value).__name__}; {_EXAMPLE}")

    text = value.strip()
    if len(text) > _MAX_TEXT:
        raise ValueError(f"a duration of {len(text):,} characters is not one; {_EXAMPLE}")
    if text in ("", "0", "+0", "-0"):
        return 0.0
    body = text[1:] if text[0] in "+-" else text
    if not body:
        raise ValueError(f'invalid duration "{text}"; {_EXAMPLE}')
    if _BARE_NUMBER.fullmatch(body):
        raise ValueError(f'missing unit in duration "{text}"; write e.g. "{body}s" or "{body}m"')
    total = Fraction(0)
    pos = 0
    while pos < len(body):
        term = _TERM.match(body, pos)
        if term is None:
            raise ValueError(f'invalid duration "{text}"; {_EXAMPLE}')
        total += Fraction(term[1]) * _UNIT_NS[term[2]]
        pos = term.end()
    if text[0] == "-" and total:
        raise ValueError(f'duration must be >= 0; got "{text}"')
    if total > MAX_NS:
        raise ValueError(f'{_TOO_LONG}; got "{text}"')
    return _whole_ns(total, f'"{text}"')


def _whole_ns(ns: Fraction, shown: str) -> float:
    """Seconds for ``ns`` rounded to whole nanoseconds, as Go keeps durations, so a stored
    duration (written back as text) reads back the same. Exact arithmetic, one rounding:
    "0.1s" is exactly float(0.1)."""
    whole = round(ns)
    if whole == 0 and ns > 0:  # it would read back as 0: no limit at all
        raise ValueError(f"duration must be at least 1ns, or 0 for no limit; got {shown}")
    return float(Fraction(whole, _NS_PER_S))


def _fixed(count: int, unit: int) -> str:
    """``count/unit`` as a decimal without trailing zeros (1500, 1000 -> "1.5")."""
    whole, frac = divmod(count, unit)
    if not frac:
        return str(whole)
    digits = str(frac).rjust(len(str(unit)) - 1, "0").rstrip("0")
    return f"{whole}.{digits}"


def _rounded_ns(seconds: float) -> int:
    """``round(Fraction(seconds) * 10**9)`` (exact, ties to even) in integers: a float or int
    is its own exact ratio, and this costs ~1 µs where Fraction's arithmetic costs 4-7 µs
    (format_duration runs twice a task at insert, in ``Task.model_dump_json``)."""
    if type(seconds) is not float and type(seconds) is not int:
        return round(Fraction(seconds) * _NS_PER_S)  # any other number: the general way
    num, den = seconds.as_integer_ratio()
    whole, rest = divmod(num * _NS_PER_S, den)
    if 2 * rest > den or (2 * rest == den and whole % 2):
        whole += 1
    return whole


def format_duration(seconds: float) -> str:
    """Compact Go-style text for ``seconds``: 5400 -> "1h30m", 0.3 -> "300ms", 0 -> "0s"."""
    if isinstance(seconds, bool) or math.isnan(seconds) or math.isinf(seconds) or seconds < 0:
        raise ValueError(f"cannot format duration {seconds!r}; it must be a number >= 0")
    ns = _rounded_ns(seconds)
    if ns == 0:
        return "0s"
    if ns < 10**3:
        return f"{ns}ns"
    if ns < 10**6:
        return _fixed(ns, 10**3) + "µs"
    if ns < _NS_PER_S:
        return _fixed(ns, 10**6) + "ms"
    hours, rest = divmod(ns, 3600 * _NS_PER_S)
    minutes, rest = divmod(rest, 60 * _NS_PER_S)
    parts = []
    if hours:
        parts.append(f"{hours}h")
    if minutes:
        parts.append(f"{minutes}m")
    if rest:
        parts.append(_fixed(rest, _NS_PER_S) + "s")
    return "".join(parts)
