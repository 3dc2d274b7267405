"""Bad input is rejected by name before any computation; degenerate input stays finite."""

import math

import pytest
import torch

from gaca import AdvantageConfig, broadcast_to_tokens, compute_advantages, mean_token_nll

GOOD = dict(
    group=[0, 0, 0, 0],
    traj=["a", "a", "b", "b"],
    step=[0, 1, 0, 1],
    reward=[0.0, 1.0, 0.0, 0.0],
    anchor=["s", "t", "s", "u"],
    nll=[0.5, 1.0, 0.2, 0.3],
)


def call(**changes):
    return compute_advantages(**(GOOD | changes))


@pytest.mark.parametrize(
    "changes, pattern",
    [
        (dict(reward=[0.0, 1.0, 0.0]), "one entry per step row"),
        (dict(nll=[0.5, 1.0]), "one entry per step row"),
        (dict(reward=[0.0, math.nan, 0.0, 0.0]), "reward must be finite.*row 1"),
        (dict(reward=[0.0, math.inf, 0.0, 0.0]), "reward must be finite"),
        (dict(nll=[0.5, 1.0, -math.inf, 0.3]), "nll must be finite"),
        (dict(nll=[0.5, -0.1, 0.2, 0.3]), "nll .* must be >= 0; row 1"),
        (dict(step=[0, 0, 0, 1]), "duplicated \\(traj, step\\).*'a' has step 0 twice"),
        (dict(group=[0, 1, 0, 0]), "trajectory 'a' has rows in two different groups"),
        (dict(step=[0, 2, 0, 1]), "trajectory 'a' must be 0..T-1 without gaps"),
        (dict(step=[1, 2, 0, 1]), "trajectory 'a' must be 0..T-1 without gaps"),
        (dict(step=[0, -1, 0, 1]), "step must be >= 0"),
        (dict(step=[0.0, 1.5, 0.0, 1.0]), "step must be .* integer"),
        (dict(anchor=[[1], [2], [1], [3]]), "anchor ids must be hashable"),
        (dict(reward=[]), "one entry per step row"),
        (dict(anchor=None), "anchor is required for method='gaca'"),
        (dict(nll=None), "nll is required for method='gaca'"),
    ],
)
def test_bad_inputs_name_the_field(changes, pattern):
    with pytest.raises(ValueError, match=pattern):
        call(**changes)


def test_empty_batch():
    with pytest.raises(ValueError, match="empty"):
        compute_advantages(group=[], traj=[], step=[], reward=[], anchor=[], nll=[])


def test_gigpo_needs_anchor_but_grpo_does_not():
    with pytest.raises(ValueError, match="anchor is required for method='gigpo'"):
        call(anchor=None, config=AdvantageConfig(method="gigpo"))
    out = call(anchor=None, nll=None, config=AdvantageConfig(method="grpo"))
    assert torch.isfinite(out.advantages).all()


@pytest.mark.parametrize(
    "field, value, pattern",
    [
        ("lambda0", 1.5, "lambda0 must be in \\[0, 1\\]"),
        ("lambda0", -0.1, "lambda0 must be in \\[0, 1\\]"),
        ("lambda0", math.nan, "lambda0 must be in \\[0, 1\\]"),
        ("alpha_lambda", -0.5, "alpha_lambda must be >= 0"),
        ("beta_lambda", -1.0, "beta_lambda must be >= 0"),
        ("alpha_c", 1.2, "alpha_c must be in \\[0, 1\\]"),
        ("gamma", 0.0, "gamma must be in \\(0, 1\\]"),
        ("gamma", 1.01, "gamma must be in \\(0, 1\\]"),
        ("eps", 0.0, "eps must be > 0"),
        ("step_weight", -1.0, "step_weight must be >= 0"),
        ("method", "ppo", "method must be one of \\['gaca', 'gigpo', 'grpo'\\], got 'ppo'"),
        ("detector", "oracle", "detector must be one of .*'loo'"),
        ("norm", "std", "norm must be one of"),
        ("singleton_fallback", "drop", "singleton_fallback must be one of"),
        ("seed", 1.5, "seed must be an int"),
        ("lambda0", "0.5", "lambda0 must be a number"),
    ],
)
def test_bad_config_names_the_field(field, value, pattern):
    with pytest.raises(ValueError, match=pattern):
        AdvantageConfig(**{field: value})


def test_from_dict_rejects_unknown_keys():
    with pytest.raises(ValueError, match="unknown key\\(s\\) \\['algorithm.lamda0'\\]"):
        AdvantageConfig.from_dict({"lamda0": 0.3})
    assert AdvantageConfig.from_dict({"lambda0": 0.3}).lambda0 == 0.3


DEGENERATE = {
    "zero-variance groups": dict(
        group=[0, 0, 1, 1],
        traj=[0, 1, 2, 3],
        step=[0, 0, 0, 0],
        reward=[1.0, 1.0, 0.0, 0.0],
        anchor=["s"] * 4,
        nll=[1.0] * 4,
    ),
    "all singleton anchors": dict(
        group=[0] * 4,
        traj=[0, 0, 1, 1],
        step=[0, 1, 0, 1],
        reward=[0.0, 1.0, 0.0, 0.0],
        anchor=["a", "b", "c", "d"],
        nll=[1.0, 2.0, 0.5, 0.1],
    ),
    "one-step trajectories": dict(
        group=[0, 0, 0],
        traj=[0, 1, 2],
        step=[0, 0, 0],
        reward=[1.0, 0.0, -0.1],
        anchor=["s", "s", "s"],
        nll=[0.3, 0.0, 2.0],
    ),
    "all-zero nll": dict(
        group=[0] * 4,
        traj=[0, 0, 1, 1],
        step=[0, 1, 0, 1],
        reward=[0.0, 1.0, 0.0, 0.0],
        anchor=["s", "t", "s", "t"],
        nll=[0.0] * 4,
    ),
    "one trajectory": dict(
        group=[0, 0, 0],
        traj=[0, 0, 0],
        step=[0, 1, 2],
        reward=[0.0, -0.1, 1.0],
        anchor=["a", "b", "a"],
        nll=[0.2, 0.9, 0.0],
    ),
    "one row": dict(group=[0], traj=[0], step=[0], reward=[1.0], anchor=["a"], nll=[0.0]),
}


@pytest.mark.parametrize("case", sorted(DEGENERATE))
@pytest.mark.parametrize("detector", ["entropy", "uniform", "random", "loo"])
@pytest.mark.parametrize("norm", ["mean_std", "mean"])
@pytest.mark.parametrize("alpha_c", [1.0, 0.5])
def test_degenerate_inputs_stay_finite(case, detector, norm, alpha_c):
    for method in ("grpo", "gigpo", "gaca"):
        config = AdvantageConfig(method=method, detector=detector, norm=norm, alpha_c=alpha_c)
        out = compute_advantages(config=config, **DEGENERATE[case])
        for name in ("advantages", "episode", "step_level", "lam", "criticality"):
            value = getattr(out, name)
            assert value is None or torch.isfinite(value).all(), (case, method, name)
        assert all(math.isfinite(v) for v in out.diagnostics.values())


def test_one_trajectory_has_zero_episode_advantage():
    out = compute_advantages(**DEGENERATE["one trajectory"])
    assert torch.equal(out.episode, torch.zeros(3))
    torch.testing.assert_close(out.criticality, torch.tensor([2 / 11, 9 / 11, 0.0]) * 3)


def test_mean_token_nll_and_broadcast():
    logprobs = torch.tensor([[-1.0, -3.0, -9.0], [-0.5, 0.0, 0.0], [0.0, 0.0, 0.0]])
    mask = torch.tensor([[1, 1, 0], [1, 0, 0], [0, 0, 0]])
    torch.testing.assert_close(mean_token_nll(logprobs, mask), torch.tensor([2.0, 0.5, 0.0]))
    tokens = broadcast_to_tokens(torch.tensor([1.5, -2.0, 3.0]), mask)
    torch.testing.assert_close(tokens, torch.tensor([[1.5, 1.5, 0.0], [-2.0, 0.0, 0.0], [0.0, 0.0, 0.0]]))
    with pytest.raises(ValueError, match="same \\[B, L\\] shape"):
        mean_token_nll(logprobs, mask[:, :2])
    with pytest.raises(ValueError, match="advantages must be \\[B\\]"):
        broadcast_to_tokens(torch.zeros(2), mask)


@pytest.mark.parametrize("huge", [50_000_000, 10**12, 2**62, 2**63 - 1])
def test_a_huge_step_is_rejected_before_any_allocation(huge):
    # Six rows: every step must be < 6. Sized by the step, the [trajectories x horizon] layout would
    # have taken gigabytes (5e7), terabytes (1e12) or overflowed (2**62).
    rows = dict(group=[0] * 6, traj=[0, 0, 0, 1, 1, 1], step=[0, 1, huge, 0, 1, 2], reward=[0.0] * 5 + [1.0])
    for kind in (list, torch.tensor):
        with pytest.raises(ValueError, match=f"step {huge} at row 2 is out of range: .* every step is < 6"):
            compute_advantages(**(rows | {"step": kind(rows["step"])}), config=AdvantageConfig(method="grpo"))


def test_a_step_beyond_64_bits_names_the_field():
    with pytest.raises(ValueError, match="step holds an integer outside the 64-bit range"):
        compute_advantages(
            group=[0, 0], traj=[0, 0], step=[0, 2**64], reward=[0.0, 1.0], config=AdvantageConfig(method="grpo")
        )
    with pytest.raises(ValueError, match="step holds an integer outside the 64-bit range"):
        import numpy as np

        compute_advantages(
            group=[0, 0],
            traj=[0, 0],
            step=np.array([0, 2**63], dtype=np.uint64),
            reward=[0.0, 1.0],
            config=AdvantageConfig(method="grpo"),
        )


@pytest.mark.parametrize("method", ["grpo", "gigpo", "gaca"])
def test_large_rewards_are_exact_up_to_the_stated_limit_and_rejected_above(method):
    # Four one-step trajectories, rewards x, 0, x, 0: mean x/2, std x/sqrt(3), so A^E = +-sqrt(3)/2.
    def batch(x):
        return dict(
            group=[0] * 4, traj=[0, 1, 2, 3], step=[0] * 4, reward=[x, 0.0, x, 0.0], anchor=["s"] * 4, nll=[1.0] * 4
        )

    config = AdvantageConfig(method=method)
    out = compute_advantages(**batch(1e100), config=config)
    torch.testing.assert_close(out.episode, torch.tensor([1.0, -1.0, 1.0, -1.0]) * math.sqrt(3) / 2)
    assert torch.isfinite(out.advantages).all()
    for x in (1e160, 1.7e308, -1e101):
        with pytest.raises(ValueError, match="reward must be within \\+-1e\\+100 .*row 0"):
            compute_advantages(**batch(x), config=config)


@pytest.mark.parametrize(
    "field, value",
    [
        ("reward", None),
        ("reward", 1.0),
        ("group", 3),
        ("step", torch.tensor(0)),
        ("reward", torch.tensor(1.0)),
        ("traj", "ab"),
        ("anchor", 7),
        ("nll", 0.5),
        ("reward", torch.zeros(4, 1)),
    ],
)
def test_scalars_none_and_strings_where_rows_are_expected_name_the_field(field, value):
    import numpy as np

    with pytest.raises(ValueError, match=f"^{field} "):
        call(**{field: value})
    if isinstance(value, float):
        with pytest.raises(ValueError, match=f"^{field} "):
            call(**{field: np.float64(value)})
        with pytest.raises(ValueError, match=f"^{field} "):
            call(**{field: np.array(value)})


@pytest.mark.parametrize("config", [dict(method="grpo"), dict(method="gigpo"), dict(detector="uniform"), dict()])
@pytest.mark.parametrize(
    "nll, pattern", [([0.5, math.nan, 0.2, 0.3], "nll must be finite"), ([0.5, -1.0, 0.2, 0.3], "nll .* must be >= 0")]
)
def test_nll_is_validated_whenever_given(config, nll, pattern):
    with pytest.raises(ValueError, match=pattern):
        call(nll=nll, config=AdvantageConfig(**config))
