"""Boundary checks the run config's sections share: a mapping of options, and no key a dataclass lacks."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from gaca.validation import reject_unknown


def plain(value: Any, key: str) -> dict[str, Any]:
    """``value`` as a dict; ``ValueError`` naming ``key`` when it is not a mapping."""
    if not isinstance(value, Mapping):
        raise ValueError(f"{key} must be a mapping of options, got {value!r}")
    return dict(value)


def reject_fields(prefix: str, values: Mapping[str, Any], cls: type, extra: tuple[str, ...] = ()) -> None:
    """No key of ``values`` (besides ``extra``) outside the fields of dataclass ``cls``."""
    reject_unknown(
        prefix, {key: value for key, value in values.items() if key not in extra}, [f.name for f in fields(cls)]
    )
