"""The adapter for verl-agent's own trainer: steps stamped after the rollout survive its padding
copies (``adjust_batch``) and reordering (``_balance_batch``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

pytest.importorskip("verl")
pytestmark = pytest.mark.verl

from verl import DataProto  # noqa: E402

from gaca.backends.verl.agent.advantage import DIAGNOSTICS_KEY, compute_batch_advantages  # noqa: E402
from gaca.backends.verl.agent.batch import add_step_index, rollout_order_steps  # noqa: E402
from gaca.estimators import AdvantageConfig  # noqa: E402


def as_verl_agent_trainer_leaves_it(data: DataProto, seed: int) -> tuple[DataProto, np.ndarray]:
    """Padding copies appended as adjust_batch(mode='copy') does, then a reorder as _balance_batch.

    Returns the batch and, for each of its rows, the index of the original row it holds.
    """
    rng = np.random.default_rng(seed)
    copies = rng.choice(len(data), size=5, replace=False)
    padded = DataProto.concat([data, data.select_idxs(copies)])
    order = rng.permutation(len(padded))
    padded.reorder(torch.from_numpy(order))
    return padded, np.r_[np.arange(len(data)), copies][order]


@pytest.mark.parametrize("estimator", ["gaca", "gigpo", "gaca_grpo"])
def test_adapter_on_a_padded_and_reordered_verl_agent_batch(layout_batch, estimator):
    batch = layout_batch(num_tasks=3, group_size=4, max_steps=6, seed=5)
    method = {"gaca": "gaca", "gigpo": "gigpo", "gaca_grpo": "grpo"}[estimator]
    expected = batch.reference(AdvantageConfig(method=method))
    add_step_index(batch.data)  # right after multi_turn_loop, rows still in rollout order
    assert (batch.data.non_tensor_batch["step"] == batch.step).all()

    data, source = as_verl_agent_trainer_leaves_it(batch.data, seed=6)
    out = compute_batch_advantages(data, estimator, OmegaConf.create({"adv_estimator": estimator}))

    torch.testing.assert_close(out.batch["advantages"], expected[source], rtol=0, atol=1e-6)
    mask = out.batch["response_mask"].bool()
    assert (out.batch["advantages"][~mask] == 0).all()
    assert torch.equal(out.batch["returns"], out.batch["advantages"])
    assert DIAGNOSTICS_KEY in out.meta_info


def test_copies_get_exactly_their_originals_advantage(layout_batch):
    batch = layout_batch(seed=7)
    add_step_index(batch.data)
    data, source = as_verl_agent_trainer_leaves_it(batch.data, seed=8)
    advantages = compute_batch_advantages(data, "gaca").batch["advantages"]
    for original in np.unique(source):
        rows = np.flatnonzero(source == original)
        for row in rows[1:]:
            assert torch.equal(advantages[row], advantages[rows[0]])


def test_two_different_rows_with_one_step_are_rejected(layout_batch):
    data = layout_batch(seed=9).data
    add_step_index(data)
    step = data.non_tensor_batch["step"]
    second = int(np.flatnonzero(step == 1)[0])  # a trajectory's step 1, stamped as step 0
    step[second] = 0
    with pytest.raises(ValueError, match=r"share traj_uid 'traj-\d-\d' and step 0 but differ in"):
        compute_batch_advantages(data, "gigpo")


def test_steps_follow_rollout_order_within_each_trajectory():
    codes = np.array([0, 1, 0, 0, 2, 1])
    assert rollout_order_steps(codes).tolist() == [0, 0, 1, 2, 0, 1]


@pytest.mark.parametrize("estimator", ["gaca", "gigpo", "gaca_grpo"])
def test_verl_agent_conventions_reach_the_estimator_with_the_invalid_flags(layout_batch, estimator):
    batch = layout_batch(num_tasks=3, group_size=4, max_steps=6, seed=11)
    method = {"gaca": "gaca", "gigpo": "gigpo", "gaca_grpo": "grpo"}[estimator]
    add_step_index(batch.data)
    algorithm = OmegaConf.create({"adv_estimator": estimator, "gaca": {"conventions": "verl_agent"}})
    out = compute_batch_advantages(batch.data, estimator, algorithm).batch["advantages"]
    torch.testing.assert_close(
        out, batch.reference(AdvantageConfig(method=method, conventions="verl_agent")), rtol=0, atol=0
    )
    spec = batch.reference(AdvantageConfig(method=method))
    assert not torch.equal(out, spec)  # the batch has invalid actions and mixed lengths: the conventions matter


def test_random_detector_draws_a_new_permutation_every_training_step(layout_batch):
    algorithm = OmegaConf.create({"adv_estimator": "gaca", "gaca": {"detector": "random", "seed": 4}})
    data = layout_batch(num_tasks=2, group_size=4, max_steps=8, seed=12).data
    with pytest.raises(ValueError, match="no meta_info\\['global_steps'\\].*add_step_index\\(batch, global_step="):
        compute_batch_advantages(data, "gaca", algorithm)
    advantages = {}
    for step in (1, 2, 1):
        add_step_index(data, global_step=step)
        advantages.setdefault(step, []).append(
            compute_batch_advantages(data, "gaca", algorithm).batch["advantages"].clone()
        )
    assert torch.equal(advantages[1][0], advantages[1][1])  # reproducible per step
    assert not torch.equal(advantages[1][0], advantages[2][0])  # fresh per step
    expected = layout_batch(num_tasks=2, group_size=4, max_steps=8, seed=12).reference(
        AdvantageConfig(detector="random", seed=4).reseeded(2)
    )
    torch.testing.assert_close(advantages[2][0], expected, rtol=0, atol=0)
