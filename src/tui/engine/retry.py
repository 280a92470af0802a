"""Retry delays: exponential base×2^(n-1) (the default), linear n×base, or none (base each
time), with ±20% jitter."""

from __future__ import annotations

import random

from tui.model.task import Backoff, RetryConfig

JITTER = 0.2


def retry_delay(policy: RetryConfig, failed_attempt: int, rng: random.Random) -> float:
    """Seconds to wait before the attempt after ``failed_attempt`` (1-based)."""
    base = max(0.0, policy.delay)
    n = max(1, failed_attempt)
    if policy.backoff == Backoff.LINEAR:
        delay = n * base
    elif policy.backoff == Backoff.FIXED:
        delay = base
    else:
        delay = base * 2 ** (n - 1)
    # Jitter keeps many tasks that failed together from retrying in lockstep.
    return delay * (1 + JITTER * (2 * rng.random() - 1))
