"""A plain per-row Python implementation of docs/estimator.md, written for reading, not speed.

It is the oracle of the property tests and the baseline of ``gaca bench estimators``. It shares no
code with the vectorized estimator. ``reference_advantages`` computes the two levels every
estimator builds on and hands them to the method's own reference (``EstimatorSpec.reference``, a
function of this module or of the plugin that brings the method); a gated method's detector scores
come from ``DetectorSpec.reference``. A detector without one says why (``DetectorSpec.no_reference``:
``random``'s permutation is checked through its properties instead).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gaca.estimators.registry import DETECTORS, ESTIMATORS, DetectorSpec, EstimatorSpec

if TYPE_CHECKING:  # the registry imports this module with the specs: no NumPy there
    from gaca.estimators.config import AdvantageConfig, Conventions


def _normalize(x: float, xs: Sequence[float], config: AdvantageConfig, one_element_raw: bool = False) -> float:
    if len(xs) == 1 and one_element_raw:  # verl's rule: mean 0, std 1
        return x if config.norm == "mean" else x / (1.0 + config.eps)
    mean = sum(xs) / len(xs)
    if config.norm == "mean":
        return x - mean
    std = math.sqrt(sum((v - mean) ** 2 for v in xs) / (len(xs) - 1)) if len(xs) > 1 else 1.0
    return (x - mean) / (std + config.eps)


def _relative(xs: list[float]) -> list[float]:
    mean = sum(xs) / len(xs)
    return [x / mean for x in xs] if mean > 0 else [1.0] * len(xs)


def _gate(c: float, config: AdvantageConfig) -> float:
    if c >= 1:
        lam = config.lambda0 * (1 + config.alpha_lambda * (c - 1))
    else:
        lam = config.lambda0 * (1 - config.beta_lambda * (1 - c))
    return min(1.0, max(0.0, lam))


@dataclass(frozen=True)
class ReferenceLevels:
    """Per-row lists (length N) that every estimator's reference combines, and the row sets they came from."""

    episode: list[float]
    """A^E (Eq. 2)."""
    step_level: list[float]
    """A^S (Eq. 3), the singleton rule applied."""
    step_return: list[float]
    """g_t."""
    nll: list[float]
    """H_t as given."""
    rows_of_traj: dict[Any, list[int]]
    """Each trajectory's rows in step order."""
    anchor_rows: list[list[int]]
    """Each row's anchor group (its own row included)."""


def reference_advantages(
    group: Sequence[Hashable],
    traj: Sequence[Hashable],
    step: Sequence[int],
    reward: Sequence[float],
    anchor: Sequence[Hashable],
    nll: Sequence[float],
    config: AdvantageConfig,
    invalid: Sequence[bool] | None = None,
    invalid_penalty: float = 0.0,
    rules: Conventions | None = None,
) -> dict[str, list[float] | None]:
    """Per-row lists ``advantages``, ``episode``, ``step_level``, ``lam``, ``criticality``.

    ``rules`` (default ``config.rules``) may switch single conventions on, as ``gaca bench
    estimators`` does to measure each one's effect.
    """
    spec: EstimatorSpec = ESTIMATORS.spec(config.method)
    if spec.reference is None:
        raise ValueError(f"the reference has no method {config.method!r} (its EstimatorSpec names no reference)")
    detector: DetectorSpec = DETECTORS.spec(config.detector)
    if spec.gated and not detector.constant and detector.reference is None:
        raise ValueError(f"the reference has no {config.detector} detector; test its properties instead")
    rules = config.rules if rules is None else rules
    n = len(reward)
    # The penalty inside each row's reward, and the environment's reward without it.
    penalty = [invalid_penalty if invalid is not None and invalid[i] else 0.0 for i in range(n)]
    moved = rules.penalty_at_step and invalid is not None
    rows_of_traj: dict[Any, list[int]] = defaultdict(list)
    for i in range(n):
        rows_of_traj[traj[i]].append(i)
    for rows in rows_of_traj.values():
        rows.sort(key=lambda i: step[i])
    trajs_of_group: dict[Any, list[Any]] = defaultdict(list)
    rows_of_group: dict[Any, list[int]] = defaultdict(list)
    for i in range(n):
        rows_of_group[group[i]].append(i)
        if traj[i] not in trajs_of_group[group[i]]:
            trajs_of_group[group[i]].append(traj[i])
    rows_of_anchor: dict[Any, list[int]] = defaultdict(list)
    for i in range(n):
        rows_of_anchor[(group[i], anchor[i])].append(i)

    discounted = [reward[i] + penalty[i] for i in range(n)] if moved else list(reward)
    episode_return = {tau: sum(reward[i] for i in rows) for tau, rows in rows_of_traj.items()}
    step_return = [0.0] * n
    for rows in rows_of_traj.values():
        for position, i in enumerate(rows):
            step_return[i] = sum(
                config.gamma ** (k - position) * discounted[rows[k]] for k in range(position, len(rows))
            )
            if moved:  # verl-agent: subtracted once, at the row where the invalid action happened
                step_return[i] -= penalty[i]
    row_score = [episode_return[traj[i]] for i in range(n)]
    if moved:
        row_score = [sum(discounted[j] for j in rows_of_traj[traj[i]]) - penalty[i] for i in range(n)]

    episode = [0.0] * n
    step_level = [0.0] * n
    for i in range(n):
        if rules.episode_over_rows:
            group_scores = [row_score[j] for j in rows_of_group[group[i]]]
            episode[i] = _normalize(row_score[i], group_scores, config, rules.one_element_raw)
        else:
            group_returns = [episode_return[tau] for tau in trajs_of_group[group[i]]]
            episode[i] = _normalize(episode_return[traj[i]], group_returns, config, rules.one_element_raw)
        members = rows_of_anchor[(group[i], anchor[i])]
        if len(members) > 1:
            step_level[i] = _normalize(step_return[i], [step_return[j] for j in members], config)
        elif rules.singleton_zero:
            step_level[i] = 0.0
        else:
            step_level[i] = _normalize(step_return[i], [step_return[j] for j in rows_of_group[group[i]]], config)

    levels = ReferenceLevels(
        episode,
        step_level,
        step_return,
        list(nll),
        dict(rows_of_traj),
        [rows_of_anchor[(group[i], anchor[i])] for i in range(n)],
    )
    return spec.reference(levels, config)


def grpo_reference(levels: ReferenceLevels, config: AdvantageConfig) -> dict[str, list[float] | None]:
    """A = A^E."""
    episode = levels.episode
    return {"advantages": episode, "episode": episode, "step_level": None, "lam": None, "criticality": None}


def gigpo_reference(levels: ReferenceLevels, config: AdvantageConfig) -> dict[str, list[float] | None]:
    """A = A^E + w A^S."""
    episode, step_level = levels.episode, levels.step_level
    advantages = [episode[i] + config.step_weight * step_level[i] for i in range(len(episode))]
    return {"advantages": advantages, "episode": episode, "step_level": step_level, "lam": None, "criticality": None}


def gaca_reference(levels: ReferenceLevels, config: AdvantageConfig) -> dict[str, list[float] | None]:
    """A = lambda w A^S + (1 - lambda) A^E with lambda the gate of the detector's c (Eqs. 5-8)."""
    episode, step_level = levels.episode, levels.step_level
    criticality = reference_criticality(levels, config)
    lam = [_gate(c, config) for c in criticality]
    advantages = [lam[i] * config.step_weight * step_level[i] + (1 - lam[i]) * episode[i] for i in range(len(episode))]
    return {
        "advantages": advantages,
        "episode": episode,
        "step_level": step_level,
        "lam": lam,
        "criticality": criticality,
    }


def reference_criticality(levels: ReferenceLevels, config: AdvantageConfig) -> list[float]:
    """c_t (Eqs. 5-6): the detector's scores fused with the return change, relative per trajectory."""
    criticality = [1.0] * len(levels.nll)
    detector: DetectorSpec = DETECTORS.spec(config.detector)
    if detector.constant:
        return criticality
    if detector.reference is None:
        raise ValueError(f"detector {config.detector!r} has no loop reference (DetectorSpec.reference)")
    entropy = detector.reference(levels)
    step_return = levels.step_return
    for rows in levels.rows_of_traj.values():
        e = _relative([entropy[i] for i in rows])
        change = [0.0] + [abs(step_return[rows[k]] - step_return[rows[k - 1]]) for k in range(1, len(rows))]
        d = _relative(change)
        score = [config.alpha_c * e[k] + (1 - config.alpha_c) * d[k] for k in range(len(rows))]
        for k, c in enumerate(_relative(score)):
            criticality[rows[k]] = c
    return criticality


def entropy_scores(levels: ReferenceLevels) -> list[float]:
    """The entropy detector's score: H_t itself."""
    return list(levels.nll)


def loo_scores(levels: ReferenceLevels) -> list[float]:
    """The leave-one-out detector's score: the mean H of the step's anchor group without it, else
    (alone in its group) the mean H of its trajectory."""
    nll, scores = levels.nll, list(levels.nll)
    own_traj = {i: rows for rows in levels.rows_of_traj.values() for i in rows}
    for i in range(len(nll)):
        others = [nll[j] for j in levels.anchor_rows[i] if j != i]
        if others:
            scores[i] = sum(others) / len(others)
        else:
            scores[i] = sum(nll[j] for j in own_traj[i]) / len(own_traj[i])
    return scores
