""" "Did you mean ...?" for misspelt keys, enum values and task references."""

from __future__ import annotations

import re
from collections.abc import Iterable

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _normal(word: str) -> str:
    """Fold spelling variants together: dependsOn, depends-on, Depends_On -> depends_on."""
    return _CAMEL.sub("_", word.strip()).lower().replace("-", "_").replace(" ", "_")


def did_you_mean(word: str, choices: Iterable[str], limit: int = 3) -> list[str]:
    """Closest ``choices`` to ``word``, best first; spelling variants win outright."""
    options = list(dict.fromkeys(choices))
    folded = _normal(word)
    same = [c for c in options if _normal(c).replace("_", "") == folded.replace("_", "")]
    if same:
        return same[:limit]
    by_fold = {_normal(c): c for c in options}
    import difflib  # only a misspelling pays its import (~1 ms), not every `tui run`

    close = difflib.get_close_matches(folded, list(by_fold), n=limit, cutoff=0.6)
    return [by_fold[c] for c in close]
