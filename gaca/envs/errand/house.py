"""The house's receptacle names, in ALFWorld's naming, shared by the knobs' check and the world."""

from __future__ import annotations

from gaca.envs.household.lexicon import FILL_TYPES

MAX_NUMBER = 9
"""Receptacles of one type are numbered 1..MAX_NUMBER."""


def name(kind: str, number: int) -> str:
    """ALFWorld's naming: "cabinet 3"."""
    return f"{kind} {number}"


WALK_NAMES: tuple[str, ...] = tuple(
    name(kind, number) for number in range(2, MAX_NUMBER + 1) for kind in sorted(set(FILL_TYPES))
)
"""The house's receptacles that routes run through, numbered from 2 (a task's start and goal are number 1)."""
