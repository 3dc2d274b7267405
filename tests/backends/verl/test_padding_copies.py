"""Padding copies of verl-agent's ``adjust_batch`` through the adapter: under ``conventions: verl_agent``
they count in the group statistics as verl-agent's own GiGPO counts them, under ``spec`` once
(the batch of ``tests/estimators/test_padding_copies.py``, its last two rows the copies)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

pytest.importorskip("verl")
pytestmark = pytest.mark.verl

from verl import DataProto  # noqa: E402

from gaca.backends.verl.agent.advantage import compute_batch_advantages  # noqa: E402

from ...estimators.test_padding_copies import STEPS, VERL_AGENT, gigpo  # noqa: E402

ROWS = [*STEPS, "a2s0", "b2s1"]  # the six steps, then adjust_batch's copies of a2s0 and b2s1


def padded_batch() -> DataProto:
    columns = {
        name: [STEPS[row][i] for row in ROWS]
        for i, name in enumerate(("uid", "traj_uid", "step", "rewards", "anchor_obs"))
    }
    non_tensors = {name: np.array(values, dtype=object) for name, values in columns.items()}
    non_tensors["is_action_valid"] = np.ones(len(ROWS), dtype=bool)
    return DataProto.from_dict(tensors={"response_mask": torch.ones(len(ROWS), 3)}, non_tensors=non_tensors)


@pytest.mark.parametrize("norm", ["mean_std", "mean"])
def test_verl_agent_conventions_count_the_copies_as_verl_agent_does(norm):
    algorithm = OmegaConf.create(
        {"gamma": 0.5, "gaca": {"conventions": "verl_agent", "norm": norm, "invalid_action_penalty": 0.0}}
    )
    advantages = compute_batch_advantages(padded_batch(), "gigpo", algorithm).batch["advantages"][:, 0].double()
    expected = torch.tensor(VERL_AGENT[norm] + [VERL_AGENT[norm][2], VERL_AGENT[norm][5]], dtype=torch.float64)
    torch.testing.assert_close(advantages, expected, rtol=0, atol=1e-5)


def test_spec_counts_each_real_row_once():
    algorithm = OmegaConf.create({"gamma": 0.5, "gaca": {"invalid_action_penalty": 0.0}})
    advantages = compute_batch_advantages(padded_batch(), "gigpo", algorithm).batch["advantages"][:, 0].double()
    once = gigpo("spec", copies=False)
    torch.testing.assert_close(advantages, torch.cat([once, once[[2, 5]]]), rtol=0, atol=0)
