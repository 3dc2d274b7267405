"""Small batches whose advantages are worked out by hand (docs/estimator.md).

The batch used throughout: one prompt group, two trajectories.
    a: steps 0, 1; rewards 0, 1 (success);  anchors s0, s1;      nll 1, 3
    b: steps 0, 1, 2; rewards 0, 0, 0;      anchors s0, s2, s3;  nll 2, 2, 2
Episode returns R_a = 1, R_b = 0. Step returns (gamma 0.95): g_a = [0.95, 1], g_b = [0, 0, 0].
Anchor group s0 = {a0, b0}; every other step is alone in its anchor group.
Rows are given shuffled to check that results come back in the input order.
"""

import math

import pytest
import torch

from gaca import AdvantageConfig, compute_advantages, gate_weight

EPS = 1e-6
ORDER = ["b2", "a1", "b0", "a0", "b1"]  # shuffled row order
ROWS = {
    "a0": dict(traj="a", step=0, reward=0.0, anchor="s0", nll=1.0),
    "a1": dict(traj="a", step=1, reward=1.0, anchor="s1", nll=3.0),
    "b0": dict(traj="b", step=0, reward=0.0, anchor="s0", nll=2.0),
    "b1": dict(traj="b", step=1, reward=0.0, anchor="s2", nll=2.0),
    "b2": dict(traj="b", step=2, reward=0.0, anchor="s3", nll=2.0),
}


def run(**overrides):
    config = AdvantageConfig(**overrides)
    columns = {key: [ROWS[name][key] for name in ORDER] for key in ("traj", "step", "reward", "anchor", "nll")}
    out = compute_advantages(group=[7] * len(ORDER), config=config, **columns)
    return out, {name: i for i, name in enumerate(ORDER)}


def expect(tensor, row_index, values, tol=1e-5):
    for name, value in values.items():
        assert tensor[row_index[name]].item() == pytest.approx(value, abs=tol), name


# Episode level: returns {1, 0}, mean 0.5, unbiased std sqrt(0.25 + 0.25) = sqrt(0.5).
A_E = {"a": 0.5 / (math.sqrt(0.5) + EPS), "b": -0.5 / (math.sqrt(0.5) + EPS)}
# Anchor group s0: g {0.95, 0}, mean 0.475, std 0.475 * sqrt(2).
A_S_S0 = {"a0": 0.475 / (0.475 * math.sqrt(2) + EPS), "b0": -0.475 / (0.475 * math.sqrt(2) + EPS)}
# Singletons fall back to the prompt group: g {0.95, 1, 0, 0, 0}, mean 0.39,
# squared deviations 0.56^2 + 0.61^2 + 3 * 0.39^2 = 1.142, std sqrt(1.142 / 4).
PROMPT_STD = math.sqrt(1.142 / 4)
A_S_FALLBACK = {"a1": 0.61 / (PROMPT_STD + EPS), "b1": -0.39 / (PROMPT_STD + EPS), "b2": -0.39 / (PROMPT_STD + EPS)}
A_S = {**A_S_S0, **A_S_FALLBACK}
EPISODE = {name: A_E[ROWS[name]["traj"]] for name in ROWS}


def test_grpo_mean_std():
    out, at = run(method="grpo")
    expect(out.advantages, at, EPISODE)
    assert out.step_level is None and out.lam is None and out.criticality is None


def test_grpo_mean_norm():
    out, at = run(method="grpo", norm="mean")
    expect(out.advantages, at, {"a0": 0.5, "a1": 0.5, "b0": -0.5, "b1": -0.5, "b2": -0.5})


def test_gigpo_prompt_group_fallback():
    out, at = run(method="gigpo")
    expect(out.step_level, at, A_S)
    expect(out.advantages, at, {name: EPISODE[name] + A_S[name] for name in ROWS})
    assert out.diagnostics["nonsingleton_frac"] == pytest.approx(2 / 5)


def test_gigpo_zero_fallback_and_step_weight():
    out, at = run(method="gigpo", singleton_fallback="zero", step_weight=0.5)
    step = {**A_S_S0, "a1": 0.0, "b1": 0.0, "b2": 0.0}
    expect(out.step_level, at, step)
    expect(out.advantages, at, {name: EPISODE[name] + 0.5 * step[name] for name in ROWS})


def test_gigpo_mean_norm():
    # s0: 0.95 - 0.475; singletons: g - 0.39.
    out, at = run(method="gigpo", norm="mean")
    expect(out.step_level, at, {"a0": 0.475, "b0": -0.475, "a1": 0.61, "b1": -0.39, "b2": -0.39})


def mixture(lam):
    return {name: lam[name] * A_S[name] + (1 - lam[name]) * EPISODE[name] for name in ROWS}


def test_gaca_entropy():
    # a: H = [1, 3], mean 2, c = [0.5, 1.5]; b: constant H, c = 1.
    # lambda(0.5) = 0.5 * (1 - 0.5 * 0.5) = 0.375; lambda(1.5) = 0.5 * (1 + 0.5 * 0.5) = 0.625.
    out, at = run()
    expect(out.criticality, at, {"a0": 0.5, "a1": 1.5, "b0": 1.0, "b1": 1.0, "b2": 1.0})
    lam = {"a0": 0.375, "a1": 0.625, "b0": 0.5, "b1": 0.5, "b2": 0.5}
    expect(out.lam, at, lam)
    expect(out.advantages, at, mixture(lam))
    assert out.diagnostics["lambda_mean"] == pytest.approx(0.5)
    assert out.diagnostics["clamp_frac"] == 0.0
    assert out.diagnostics["criticality_std"] == pytest.approx(torch.tensor([0.5, 1.5, 1, 1, 1]).std().item())


def test_gaca_fused_score():
    # a: D = [0, |1 - 0.95|] -> d = [0, 2]; e = [0.5, 1.5]; score = 0.5 e + 0.5 d = [0.25, 1.75] (mean 1).
    # b: D = 0 everywhere -> d := 1; e = 1 -> c = 1.
    # lambda(0.25) = 0.5 * (1 - 0.5 * 0.75) = 0.3125; lambda(1.75) = 0.5 * (1 + 0.5 * 0.75) = 0.6875.
    out, at = run(alpha_c=0.5)
    expect(out.criticality, at, {"a0": 0.25, "a1": 1.75, "b0": 1.0, "b1": 1.0, "b2": 1.0})
    expect(out.lam, at, {"a0": 0.3125, "a1": 0.6875, "b0": 0.5, "b1": 0.5, "b2": 0.5})


def test_gaca_uniform():
    out, at = run(detector="uniform")
    expect(out.lam, at, {name: 0.5 for name in ROWS})
    expect(out.advantages, at, {name: 0.5 * A_S[name] + 0.5 * EPISODE[name] for name in ROWS})


def test_gaca_loo():
    # s0: a0 takes b0's H = 2, b0 takes a0's H = 1. Singletons take their trajectory's mean H (2).
    # a: H' = [2, 2] -> c = 1. b: H' = [1, 2, 2], mean 5/3 -> c = [0.6, 1.2, 1.2].
    # lambda(0.6) = 0.5 * (1 - 0.5 * 0.4) = 0.4; lambda(1.2) = 0.5 * (1 + 0.5 * 0.2) = 0.55.
    out, at = run(detector="loo")
    expect(out.criticality, at, {"a0": 1.0, "a1": 1.0, "b0": 0.6, "b1": 1.2, "b2": 1.2})
    lam = {"a0": 0.5, "a1": 0.5, "b0": 0.4, "b1": 0.55, "b2": 0.55}
    expect(out.lam, at, lam)
    expect(out.advantages, at, mixture(lam))


def test_gaca_random_permutes_within_trajectory():
    out, at = run(detector="random", seed=3)
    assert sorted([out.criticality[at["a0"]].item(), out.criticality[at["a1"]].item()]) == pytest.approx([0.5, 1.5])
    expect(out.criticality, at, {"b0": 1.0, "b1": 1.0, "b2": 1.0})


def test_gaca_mean_norm_entropy():
    out, at = run(norm="mean")
    s = {"a0": 0.475, "b0": -0.475, "a1": 0.61, "b1": -0.39, "b2": -0.39}
    e = {"a0": 0.5, "a1": 0.5, "b0": -0.5, "b1": -0.5, "b2": -0.5}
    lam = {"a0": 0.375, "a1": 0.625, "b0": 0.5, "b1": 0.5, "b2": 0.5}
    expect(out.advantages, at, {n: lam[n] * s[n] + (1 - lam[n]) * e[n] for n in ROWS})


@pytest.mark.parametrize(
    "c, lambda0, alpha, beta, expected",
    [
        (1.0, 0.5, 0.5, 0.5, 0.5),  # the branches meet at c = 1
        (3.0, 0.5, 0.5, 0.5, 1.0),  # 0.5 * (1 + 0.5 * 2): exactly at the upper clamp
        (5.0, 0.5, 0.5, 0.5, 1.0),  # clamped
        (2.0, 0.5, 1.0, 1.0, 1.0),  # stronger modulation binds at c = 2
        (0.0, 0.5, 0.5, 0.5, 0.25),  # 0.5 * (1 - 0.5)
        (0.0, 0.5, 0.5, 3.0, 0.0),  # 0.5 * (1 - 3) clamped at 0
        (1.4, 0.2, 0.5, 0.0, 0.24),  # 0.2 * (1 + 0.5 * 0.4)
        (0.6, 0.2, 0.0, 0.5, 0.16),  # 0.2 * (1 - 0.5 * 0.4)
    ],
)
def test_gate_law(c, lambda0, alpha, beta, expected):
    assert gate_weight(torch.tensor([c]), lambda0, alpha, beta).item() == pytest.approx(expected)


def test_gate_is_monotone_and_continuous():
    c = torch.linspace(0, 4, 4001, dtype=torch.float64)
    lam = gate_weight(c, 0.5, 0.5, 0.5)
    assert (lam.diff() >= 0).all()
    assert lam.diff().abs().max() < 1e-3
