"""On-demand soak of tui's input parsers: task files, config.toml and XML templates from the
fuzz suite's grammars (tests/fuzz/grammars.py), many more cases than the suite runs. Prints
how many cases were valid, clear errors, or failures (a traceback, a wrong error); exits 1 on
any failure, printing the first few.

    .venv/bin/python bench/soak_inputs.py --cases 10000
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hypothesis import HealthCheck, given, settings
from tests.fuzz.grammars import CHECKS


def soak(kind: str, cases: int, counts: Counter[str], failures: list[str]) -> None:
    def record(outcome_of: object) -> None:
        try:
            counts[f"{kind} {outcome_of()}"] += 1  # type: ignore[operator]
        except Exception:
            counts[f"{kind} FAILURE"] += 1
            failures.append(traceback.format_exc(limit=6))

    options = settings(
        max_examples=cases,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    generate, check = CHECKS[kind]

    @options
    @given(generate)
    def run(text: str) -> None:
        record(lambda: check(text))

    run()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000, help="cases per kind of file")
    parser.add_argument("--only", choices=list(CHECKS))
    args = parser.parse_args()
    counts: Counter[str] = Counter()
    failures: list[str] = []
    started = time.monotonic()
    for kind in [args.only] if args.only else list(CHECKS):
        began = time.monotonic()
        soak(kind, args.cases, counts, failures)
        done = sum(v for k, v in counts.items() if k.startswith(kind))
        print(f"{kind}: {done} cases in {time.monotonic() - began:.1f}s", flush=True)
    total = sum(counts.values())
    print(f"\n{total} cases in {time.monotonic() - started:.1f}s")
    for key in sorted(counts):
        print(f"  {key}: {counts[key]}")
    print(f"  failures: {len(failures)}")
    for failure in failures[:5]:
        print("\n" + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
