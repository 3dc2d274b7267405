"""Checks of config values, each raising ``ValueError`` that names the dotted Hydra key and what it may be:
``algorithm.lambda0 must be in [0, 1], got 2.0``. Every config dataclass validates with these."""

from __future__ import annotations

import math
from collections.abc import Collection, Iterator, Mapping
from typing import Any, Protocol


def check_int(key: str, value: object, low: int, high: float = math.inf, why: str = "") -> None:
    """An int (not a bool) in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low or value > high:
        allowed = f">= {low}" if high == math.inf else f"in [{low}, {high}]"
        raise ValueError(f"{key} must be an int {allowed}{why}, got {value!r}")


def check_number(key: str, value: object, low: float, high: float, allowed: str, low_open: bool = False) -> None:
    """A finite int or float (not a bool) between ``low`` and ``high`` (``low`` excluded when
    ``low_open``); ``allowed`` says so in words, e.g. ``in (0, 1]``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{key} must be a number {allowed}, got {value!r}")
    too_low = value <= low if low_open else value < low
    if math.isnan(value) or math.isinf(value) or too_low or value > high:
        raise ValueError(f"{key} must be {allowed}, got {value!r}")


class Choices(Protocol):
    """What ``check_choice`` accepts: a tuple of names or a ``Registry``."""

    def __contains__(self, value: object, /) -> bool: ...

    def __iter__(self) -> Iterator[str]: ...


def check_choice(key: str, value: object, allowed: Choices) -> None:
    """One of ``allowed`` (a tuple or a registry)."""
    if value not in allowed:
        raise ValueError(f"{key} must be one of {list(allowed)}, got {value!r}")


def check_bool(key: str, value: object) -> None:
    if not isinstance(value, bool):
        raise ValueError(f"{key} must be true or false, got {value!r}")


def reject_unknown(prefix: str, values: Mapping[str, Any], known: Collection[str]) -> None:
    """No key of ``values`` outside ``known``; the message names them with their prefix."""
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise ValueError(f"unknown key(s) {[f'{prefix}.{key}' for key in unknown]}; known: {sorted(known)}")
