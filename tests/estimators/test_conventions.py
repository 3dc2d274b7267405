"""``conventions='verl_agent'`` worked out by hand, one convention at a time (docs/estimator.md, "Conventions").

The batch: prompt group g with trajectories a and b, prompt group h with one one-step trajectory c.
Penalty p = 0.1, gamma = 0.95; ``reward`` carries the penalty at its row (the spec's r_t).
    a: env rewards 0, 0, 1; step 1 invalid -> r = 0, -0.1, 1;  anchors s0, s1, s2
    b: env rewards 0, 0;    step 1 invalid -> r = 0, -0.1;     anchors s0, s1
    c: env reward 1                        -> r = 1;           anchor  s0 (another group: a singleton)
Rows are given shuffled. The verl_agent numbers below were also reproduced, to 1e-6, by verl-agent's
own gigpo/core_gigpo.py and its trainer's penalty step (upstream commit 796ed31) run outside the repo.
"""

import math

import pytest
import torch

from gaca import AdvantageConfig, compute_advantages

EPS = 1e-6
P = 0.1
ORDER = ["b1", "c0", "a2", "a0", "b0", "a1"]
ROWS = {
    "a0": dict(group="g", traj="a", step=0, reward=0.0, invalid=False, anchor="s0", nll=1.0),
    "a1": dict(group="g", traj="a", step=1, reward=-P, invalid=True, anchor="s1", nll=2.0),
    "a2": dict(group="g", traj="a", step=2, reward=1.0, invalid=False, anchor="s2", nll=3.0),
    "b0": dict(group="g", traj="b", step=0, reward=0.0, invalid=False, anchor="s0", nll=1.0),
    "b1": dict(group="g", traj="b", step=1, reward=-P, invalid=True, anchor="s1", nll=1.0),
    "c0": dict(group="h", traj="c", step=0, reward=1.0, invalid=False, anchor="s0", nll=0.5),
}
FIELDS = ("group", "traj", "step", "reward", "invalid", "anchor", "nll")


def run(**overrides):
    columns = {key: [ROWS[name][key] for name in ORDER] for key in FIELDS}
    out = compute_advantages(invalid_penalty=P, config=AdvantageConfig(**overrides), **columns)
    return {name: out for name in ORDER}, {name: i for i, name in enumerate(ORDER)}


def values(tensor, at):
    return {name: tensor[i].item() for name, i in at.items()}


def check(actual, expected, tol=1e-6):
    assert actual == pytest.approx(expected, abs=tol)


def sd(xs):
    mean = sum(xs) / len(xs)
    return math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1))


# Spec. R_a = 0.9, R_b = -0.1: mean 0.4, std sqrt(0.5); group h has one trajectory: 0.
SPEC_EPISODE = {"a": 0.5 / (math.sqrt(0.5) + EPS), "b": -0.5 / (math.sqrt(0.5) + EPS), "c": 0.0}
# Spec step returns: a2 = 1, a1 = -0.1 + 0.95 = 0.85, a0 = 0.95 * 0.85 = 0.8075; b1 = -0.1, b0 = -0.095.
SPEC_G = {"a0": 0.8075, "a1": 0.85, "a2": 1.0, "b0": -0.095, "b1": -0.1, "c0": 1.0}
# verl-agent step returns: discounted environment rewards, then the row's own penalty once:
# a: 0.9025, 0.95 - 0.1, 1; b: 0, 0 - 0.1; c: 1.
VA_G = {"a0": 0.9025, "a1": 0.85, "a2": 1.0, "b0": 0.0, "b1": -0.1, "c0": 1.0}
# verl-agent episode scores per row: R_env(a) = 1, R_env(b) = 0, minus p at the invalid rows.
VA_SCORE = {"a0": 1.0, "a1": 0.9, "a2": 1.0, "b0": 0.0, "b1": -0.1, "c0": 1.0}
G_ROWS = ["a0", "a1", "a2", "b0", "b1"]
VA_MEAN, VA_STD = 2.8 / 5, math.sqrt(1.252 / 4)  # squared deviations .44^2*2 + .34^2 + .56^2 + .66^2 = 1.252
VA_EPISODE = {name: (VA_SCORE[name] - VA_MEAN) / (VA_STD + EPS) for name in G_ROWS} | {"c0": 1.0 / (1.0 + EPS)}
PAIR = 1 / math.sqrt(2)  # two distinct values normalised: +-1/sqrt(2) (up to eps)


def test_the_hand_numbers_themselves():
    assert sd([VA_SCORE[n] for n in G_ROWS]) == pytest.approx(VA_STD)
    assert sum(VA_SCORE[n] for n in G_ROWS) / 5 == pytest.approx(VA_MEAN)


def test_spec_is_the_default_and_ignores_the_flags():
    rows, at = run(method="grpo")
    with_flags = values(rows["a0"].advantages, at)
    plain = compute_advantages(
        **{key: [ROWS[name][key] for name in ORDER] for key in ("group", "traj", "step", "reward")},
        config=AdvantageConfig(method="grpo"),
    )
    assert with_flags == values(plain.advantages, at)
    check(with_flags, {name: SPEC_EPISODE[ROWS[name]["traj"]] for name in ORDER})


def test_episode_level_over_step_rows_with_penalty_at_its_row_and_one_element_raw():
    # GRPO under verl_agent is the episode level alone: every row's own score, statistics over rows,
    # and the one-trajectory group h gives back its raw score 1 / (1 + eps).
    rows, at = run(method="grpo", conventions="verl_agent")
    check(values(rows["a0"].advantages, at), VA_EPISODE)


def test_one_element_groups_in_mean_norm():
    rows, at = run(method="grpo", conventions="verl_agent", norm="mean")
    expected = {name: VA_SCORE[name] - VA_MEAN for name in G_ROWS} | {"c0": 1.0}
    check(values(rows["a0"].advantages, at), expected)
    rows, at = run(method="grpo", norm="mean")
    assert values(rows["a0"].advantages, at)["c0"] == 0.0  # spec: a set of one gives 0


def test_step_level_penalty_at_its_row_and_singletons_zero():
    rows, at = run(method="gigpo", conventions="verl_agent")
    out = rows["a0"]
    # Anchor groups {a0, b0}: g 0.9025 vs 0 (spec: 0.8075 vs -0.095); {a1, b1}: 0.85 vs -0.1; both pairs
    # normalise to +-1/sqrt(2). a2 and c0 are alone: 0 (verl-agent's rule), whatever singleton_fallback says.
    pair_std = {"s0": sd([VA_G["a0"], VA_G["b0"]]), "s1": sd([VA_G["a1"], VA_G["b1"]])}
    step = {
        "a0": (VA_G["a0"] - 0.45125) / (pair_std["s0"] + EPS),
        "b0": (VA_G["b0"] - 0.45125) / (pair_std["s0"] + EPS),
        "a1": (VA_G["a1"] - 0.375) / (pair_std["s1"] + EPS),
        "b1": (VA_G["b1"] - 0.375) / (pair_std["s1"] + EPS),
        "a2": 0.0,
        "c0": 0.0,
    }
    check(values(out.step_level, at), step)
    assert step["a0"] == pytest.approx(PAIR, abs=1e-5)
    check(values(out.advantages, at), {name: VA_EPISODE[name] + step[name] for name in ORDER})


def test_step_returns_move_with_the_penalty():
    # The gate sees the step returns through D_t = |g_t - g_{t-1}| (alpha_c = 0: D alone), so c exposes g.
    rows, at = run(conventions="verl_agent", alpha_c=0.0)
    c = values(rows["a0"].criticality, at)
    d_a = [0.0, abs(VA_G["a1"] - VA_G["a0"]), abs(VA_G["a2"] - VA_G["a1"])]  # 0, 0.0525, 0.15
    check([c["a0"], c["a1"], c["a2"]], [d * 3 / sum(d_a) for d in d_a])
    spec_rows, spec_at = run(alpha_c=0.0)
    c = values(spec_rows["a0"].criticality, spec_at)
    d_a = [0.0, abs(SPEC_G["a1"] - SPEC_G["a0"]), abs(SPEC_G["a2"] - SPEC_G["a1"])]  # 0, 0.0425, 0.15
    check([c["a0"], c["a1"], c["a2"]], [d * 3 / sum(d_a) for d in d_a])


def test_gaca_mixes_the_two_verl_agent_levels_through_the_same_gate():
    rows, at = run(conventions="verl_agent", detector="uniform", lambda0=0.25)
    gigpo, _ = run(method="gigpo", conventions="verl_agent")
    expected = 0.25 * gigpo["a0"].step_level + 0.75 * gigpo["a0"].episode
    torch.testing.assert_close(rows["a0"].advantages, expected)


def test_verl_agent_needs_the_flags():
    columns = {key: [ROWS[name][key] for name in ORDER] for key in ("group", "traj", "step", "reward", "anchor", "nll")}
    with pytest.raises(ValueError, match="invalid is required with conventions='verl_agent'"):
        compute_advantages(config=AdvantageConfig(conventions="verl_agent"), **columns)
    with pytest.raises(ValueError, match="invalid_penalty is required with invalid"):
        compute_advantages(invalid=[False] * len(ORDER), config=AdvantageConfig(conventions="verl_agent"), **columns)
    no_invalid = compute_advantages(
        invalid=[False] * len(ORDER), invalid_penalty=0.0, config=AdvantageConfig(conventions="verl_agent"), **columns
    )
    assert torch.isfinite(no_invalid.advantages).all()


@pytest.mark.parametrize(
    "invalid, penalty, pattern",
    [
        ([0.5] * 6, P, "invalid must hold one bool per step row"),
        ([2, 0, 0, 0, 0, 0], P, "invalid must hold bools \\(or 0/1\\), got 2"),
        ([False] * 5, P, "one entry per step row"),
        ([False] * 6, -0.1, "invalid_penalty must be a finite number"),
        ([False] * 6, math.nan, "invalid_penalty must be a finite number"),
        (None, P, "invalid_penalty was given without invalid"),
    ],
)
def test_bad_flags_name_the_field(invalid, penalty, pattern):
    columns = {key: [ROWS[name][key] for name in ORDER] for key in ("group", "traj", "step", "reward", "anchor", "nll")}
    with pytest.raises(ValueError, match=pattern):
        compute_advantages(invalid=invalid, invalid_penalty=penalty, **columns)


def test_flags_as_arrays_and_tensors():
    import numpy as np

    columns = {key: [ROWS[name][key] for name in ORDER] for key in ("group", "traj", "step", "reward", "anchor", "nll")}
    flags = [ROWS[name]["invalid"] for name in ORDER]
    config = AdvantageConfig(conventions="verl_agent")
    expected = compute_advantages(invalid=flags, invalid_penalty=P, config=config, **columns).advantages
    for converted in (np.asarray(flags), torch.tensor(flags), [int(f) for f in flags], np.asarray(flags, dtype=object)):
        out = compute_advantages(invalid=converted, invalid_penalty=P, config=config, **columns)
        assert torch.equal(out.advantages, expected)


def test_conventions_is_validated():
    with pytest.raises(ValueError, match="conventions must be one of \\['spec', 'verl_agent'\\]"):
        AdvantageConfig(conventions="verl-agent")


def test_reseeded_draws_a_fresh_reproducible_seed_per_step():
    config = AdvantageConfig(detector="random", seed=3)
    seeds = [config.reseeded(step).seed for step in range(1, 6)]
    assert len(set(seeds)) == 5 and seeds == [config.reseeded(step).seed for step in range(1, 6)]
    assert config.reseeded(1) == AdvantageConfig(detector="random", seed=seeds[0])


def test_the_bench_steps_from_spec_to_verl_agent():
    from gaca.bench.estimators import convention_effects, typical_batch

    batch = typical_batch(tasks=3, rollouts=4, horizon=12, seed=1)
    effects = {(method, label): (mean, largest) for method, label, mean, largest in convention_effects(batch)}
    assert len(effects) == 15
    assert effects[("gigpo", "one-element set -> raw score")] == (0.0, 0.0)  # no group of one in such a batch
    columns = {key: batch[key] for key in ("group", "traj", "step", "reward", "anchor", "nll", "invalid")}
    for method in ("grpo", "gigpo", "gaca"):
        spec = compute_advantages(invalid_penalty=0.1, config=AdvantageConfig(method=method), **columns).advantages
        verl = compute_advantages(
            invalid_penalty=0.1, config=AdvantageConfig(method=method, conventions="verl_agent"), **columns
        ).advantages
        mean, largest = effects[(method, "all (spec -> verl_agent)")]
        assert largest == pytest.approx(float((verl - spec).abs().max()), rel=1e-6) and largest > 0
