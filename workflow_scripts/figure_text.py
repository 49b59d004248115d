"""How the probes' tables print a figure with its interval (`0.93 [0.90, 0.95]`, `97.42% [96.9, 97.8]`)."""
from __future__ import annotations

import math


def _finite(x) -> bool:
    return x is not None and math.isfinite(x)


def interval_text(value, low=None, high=None, *, digits: int = 2, bound_digits: int | None = None,
                  scale: float = 1.0, suffix: str = "", missing: str = "undefined") -> str:
    """`value [low, high]`, each times `scale` (100 for a percentage), the value with `digits` and
    `suffix`, the bounds with `bound_digits` (default `digits`); the interval left out where either
    bound is missing or not finite (B = 0, too few replicates), `missing` without a value."""
    if not _finite(value):
        return missing
    bound_digits = digits if bound_digits is None else bound_digits
    text = f"{scale * value:.{digits}f}{suffix}"
    if _finite(low) and _finite(high):
        text += f" [{scale * low:.{bound_digits}f}, {scale * high:.{bound_digits}f}]"
    return text
