"""Difficulty knobs: a named preset per family, single knobs overridable, validated by name."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Protocol, TypeVar


class Knobs(Protocol):
    """A frozen dataclass of one family's knobs whose ``validate`` raises ``ValueError`` naming the knob."""

    __dataclass_fields__: ClassVar[dict[str, Any]]  # what makes it a dataclass to dataclasses.fields/replace

    def validate(self) -> None: ...


K = TypeVar("K", bound=Knobs)


def resolve_knobs(presets: Mapping[str, K], difficulty: str, overrides: Mapping[str, Any]) -> K:
    """The preset ``difficulty`` with ``overrides`` applied, then validated.

    Sequences in ``overrides`` (e.g. Hydra ListConfig) become tuples so that knobs stay hashable.
    """
    if difficulty not in presets:
        raise ValueError(f"env.difficulty must be one of {sorted(presets)}, got {difficulty!r}")
    base = presets[difficulty]
    known = [f.name for f in dataclasses.fields(base)]
    unknown = sorted(set(overrides) - set(known))
    if unknown:
        raise ValueError(f"env.knobs has unknown knob(s) {unknown}; known: {known}")
    changes = {
        name: tuple(value) if isinstance(value, Sequence) and not isinstance(value, str) else value
        for name, value in overrides.items()
    }
    knobs = dataclasses.replace(base, **changes)
    knobs.validate()
    return knobs


def check_int(name: str, value: object, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"env.knobs.{name} must be an int in [{low}, {high}], got {value!r}")


def check_fraction(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or not 0 <= value <= 1:
        raise ValueError(f"env.knobs.{name} must be a number in [0, 1], got {value!r}")


def check_subset(name: str, values: object, allowed: Sequence[str]) -> None:
    if (
        not isinstance(values, tuple)
        or not values
        or any(v not in allowed for v in values)
        or len(set(values)) < len(values)
    ):
        raise ValueError(
            f"env.knobs.{name} must be a non-empty list without repeats from {list(allowed)}, got {values!r}"
        )
