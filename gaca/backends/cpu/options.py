"""``backend=cpu``'s options: none (the embedded trainer reads ``trainer.*``; every other ``backend.*``
key belongs to another backend and is ignored)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CpuOptions:
    """The CPU backend has no ``backend.*`` option besides ``name``."""
