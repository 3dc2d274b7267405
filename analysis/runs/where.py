"""``--where KEY=VALUE``: the runs whose logged param KEY equals VALUE, compared as the values they were
logged from (``trainer.kl_coef=0.1`` matches ``0.1`` and ``0.10``, ``trainer.iterations=25`` matches ``25``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from analysis.runs.collect import PARAM_PREFIX
from gaca import contract


def parse_where(items: Sequence[str]) -> dict[str, object]:
    """``["trainer.kl_coef=0.1", ...]`` -> ``{"trainer.kl_coef": 0.1, ...}``; a malformed item is a ValueError."""
    where = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--where {item!r}: expected KEY=VALUE, e.g. trainer.kl_coef=0.1")
        where[key] = contract.parse_param(value)
    return where


def mismatches(runs: pd.DataFrame, where: Mapping[str, object]) -> pd.Series:
    """Per run (``collect.load_runs`` rows): None when every ``where`` param equals its value, else the
    first that does not, as ``KEY=LOGGED (not VALUE)``."""
    reasons = pd.Series([None] * len(runs), index=runs.index, dtype=object)
    for key, value in where.items():
        logged = runs.get(PARAM_PREFIX + key, pd.Series([None] * len(runs), index=runs.index, dtype=object))
        values = logged.map(lambda v: contract.normalize(contract.parse_param(v) if isinstance(v, str) else v))
        differs = reasons.isna() & (values != contract.normalize(value))
        reasons[differs] = [f"{key}={text} (not {value})" for text in logged[differs]]
    return reasons


def unknown_keys(runs: pd.DataFrame, where: Mapping[str, object]) -> list[str]:
    """The ``where`` keys that no run logs (a misspelt key would otherwise silently match nothing)."""
    return [key for key in where if PARAM_PREFIX + key not in runs or runs[PARAM_PREFIX + key].isna().all()]


def pinned(runs: pd.DataFrame, where: Mapping[str, object], experiment: str) -> pd.DataFrame:
    """The runs that match every ``where`` value; a key that no run logs is a LookupError naming it."""
    check_keys(runs, where, experiment)
    return runs.loc[mismatches(runs, where).isna()] if where else runs


def check_keys(runs: pd.DataFrame, where: Mapping[str, object], experiment: str) -> None:
    """A LookupError naming the first ``where`` key that no run of ``experiment`` logs."""
    unknown = unknown_keys(runs, where)
    if unknown:
        raise LookupError(f"--where {unknown[0]}: no run of experiment {experiment!r} logs this param")
