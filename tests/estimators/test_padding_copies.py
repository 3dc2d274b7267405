"""Padding copies (verl-agent's ``adjust_batch`` repeats rows to fill its micro-batches), worked out by hand.

The batch, gamma = 0.5, no invalid action, GiGPO (w = 1):
    group a: a1 rewards 0, 1 (anchors x, y); a2 reward 0 (anchor x)      -- a2's step 0 has one copy
    group b: b1 reward 1 (anchor p);        b2 rewards 0, 0 (anchors p, q) -- b2's step 1 has one copy
Step returns g: a1 0.5, 1; a2 0; b1 1; b2 0, 0.

Under ``conventions='verl_agent'`` a copy is one more row in its groups, as in verl-agent's own
statistics. Episode level over rows: group a's scores 1, 1, 0, 0 (mean 1/2, std sqrt(1/3)); group
b's 1, 0, 0, 0 (mean 1/4, std 1/2). Step level: anchor x holds 0.5, 0, 0 (mean 1/6, std
sqrt(1/12)); p holds 1, 0 (std sqrt(1/2)); q holds b2's step 1 and its copy (0, 0: advantage 0).
verl-agent's gigpo/core_gigpo.py (upstream 796ed31, run outside the repository on the 8 padded rows)
gives the same numbers in float32: mean_std_norm [2.02072, 0.866024, -1.443372, 2.207103,
-1.207105, -0.499999] and mean_norm [0.833333, 0.5, -0.666667, 1.25, -0.75, -0.25] for the six steps.
"""

import math

import pytest
import torch

from gaca import AdvantageConfig, compute_advantages

EPS = 1e-6
STEPS = {  # name: group, traj, step, reward, anchor, copies
    "a1s0": ("a", "a1", 0, 0.0, "x", 0),
    "a1s1": ("a", "a1", 1, 1.0, "y", 0),
    "a2s0": ("a", "a2", 0, 0.0, "x", 1),
    "b1s0": ("b", "b1", 0, 1.0, "p", 0),
    "b2s0": ("b", "b2", 0, 0.0, "p", 0),
    "b2s1": ("b", "b2", 1, 0.0, "q", 1),
}
VERL_AGENT = {  # verl-agent's own GiGPO on the padded batch (float32)
    "mean_std": [2.02072, 0.866024, -1.443372, 2.207103, -1.207105, -0.499999],
    "mean": [0.833333, 0.5, -0.666667, 1.25, -0.75, -0.25],
}


def gigpo(conventions: str, norm: str = "mean_std", copies: bool = True, method: str = "gigpo") -> torch.Tensor:
    group, traj, step, reward, anchor, count = zip(*STEPS.values())
    config = AdvantageConfig(method=method, gamma=0.5, norm=norm, conventions=conventions, detector="uniform")
    return compute_advantages(
        group=group,
        traj=traj,
        step=step,
        reward=reward,
        anchor=anchor,
        invalid=[False] * len(STEPS),
        invalid_penalty=0.0,
        config=config,
        copies=list(count) if copies else None,
    ).advantages.double()


def test_verl_agent_counts_each_copy_in_its_groups_as_worked_out_by_hand():
    s3, s12 = math.sqrt(1 / 3), math.sqrt(1 / 12)
    episode_a = [(1 - 0.5) / (s3 + EPS)] * 2 + [(0 - 0.5) / (s3 + EPS)]
    episode_b = [(1 - 0.25) / (0.5 + EPS)] + [(0 - 0.25) / (0.5 + EPS)] * 2
    step = [
        (0.5 - 1 / 6) / (s12 + EPS),
        0.0,
        (0 - 1 / 6) / (s12 + EPS),  # x, y (alone: 0), x
        0.5 / (math.sqrt(0.5) + EPS),
        -0.5 / (math.sqrt(0.5) + EPS),
        0.0,  # p, p, q with its copy (0, 0)
    ]
    expected = torch.tensor(episode_a + episode_b, dtype=torch.float64) + torch.tensor(step, dtype=torch.float64)
    torch.testing.assert_close(gigpo("verl_agent"), expected, rtol=0, atol=1e-6)  # float32 results


@pytest.mark.parametrize("norm", ["mean_std", "mean"])
def test_verl_agent_with_copies_equals_verl_agents_own_gigpo_on_the_padded_rows(norm):
    verl_agent = torch.tensor(VERL_AGENT[norm], dtype=torch.float64)
    torch.testing.assert_close(gigpo("verl_agent", norm), verl_agent, rtol=0, atol=1e-5)
    assert (gigpo("verl_agent", norm, copies=False) - verl_agent).abs().max() > 0.2  # without the copies: far off


@pytest.mark.parametrize("method", ["grpo", "gigpo", "gaca"])
def test_spec_counts_each_real_row_once(method):
    assert torch.equal(gigpo("spec", method=method), gigpo("spec", method=method, copies=False))
    assert not torch.equal(gigpo("verl_agent", method=method), gigpo("verl_agent", method=method, copies=False))


def test_copies_must_be_integers_of_at_least_zero():
    with pytest.raises(ValueError, match=r"copies must be >= 0"):
        compute_advantages(
            group=[0, 0],
            traj=[0, 1],
            step=[0, 0],
            reward=[1.0, 0.0],
            copies=[0, -1],
            config=AdvantageConfig(method="grpo"),
        )
    with pytest.raises(ValueError, match=r"copies must be a one-dimensional sequence of integers"):
        compute_advantages(
            group=[0, 0],
            traj=[0, 1],
            step=[0, 0],
            reward=[1.0, 0.0],
            copies=[0.5, 1.0],
            config=AdvantageConfig(method="grpo"),
        )
