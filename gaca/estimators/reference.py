"""A plain per-row Python implementation of docs/estimator.md, written for reading, not speed.

It is the oracle of the property tests and the baseline of ``gaca bench estimators``. It shares no
code with the vectorized estimator. The ``random`` detector is not here: its permutation is
checked through its properties (per-trajectory multiset, seed reproducibility) instead.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any, Hashable, Sequence

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
    if config.detector == "random":
        raise ValueError("the reference has no random detector; test its properties instead")
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
            step_return[i] = sum(config.gamma ** (k - position) * discounted[rows[k]] for k in range(position, len(rows)))
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

    if config.method == "grpo":
        return {"advantages": episode, "episode": episode, "step_level": None, "lam": None, "criticality": None}
    if config.method == "gigpo":
        advantages = [episode[i] + config.step_weight * step_level[i] for i in range(n)]
        return {"advantages": advantages, "episode": episode, "step_level": step_level, "lam": None, "criticality": None}

    criticality = [1.0] * n
    if config.detector != "uniform":
        entropy = list(nll)
        if config.detector == "loo":
            for i in range(n):
                others = [nll[j] for j in rows_of_anchor[(group[i], anchor[i])] if j != i]
                if others:
                    entropy[i] = sum(others) / len(others)
                else:
                    own = rows_of_traj[traj[i]]
                    entropy[i] = sum(nll[j] for j in own) / len(own)
        for rows in rows_of_traj.values():
            e = _relative([entropy[i] for i in rows])
            change = [0.0] + [abs(step_return[rows[k]] - step_return[rows[k - 1]]) for k in range(1, len(rows))]
            d = _relative(change)
            score = [config.alpha_c * e[k] + (1 - config.alpha_c) * d[k] for k in range(len(rows))]
            for k, c in enumerate(_relative(score)):
                criticality[rows[k]] = c
    lam = [_gate(criticality[i], config) for i in range(n)]
    advantages = [lam[i] * config.step_weight * step_level[i] + (1 - lam[i]) * episode[i] for i in range(n)]
    return {"advantages": advantages, "episode": episode, "step_level": step_level, "lam": lam, "criticality": criticality}
