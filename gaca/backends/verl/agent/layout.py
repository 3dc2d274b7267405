"""Random batches in verl-agent's exact layout, and the reference the plugin must reproduce
(the plugin's tests and the GPU check use them).

The layout is that of verl-agent's multi-turn rollout at the advantage step: rows appended per
environment in time order (``gather_rollout_data``), per-step ``rewards`` and ``active_masks`` as
object arrays, ``is_action_valid`` as bools, the episode reward written by its
``EpisodeRewardManager`` at each row's last response token minus the invalid-action penalty
(``apply_invalid_action_penalty``), and ``old_log_probs`` that are not zero outside the mask.
Needs verl (``DataProto``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from gaca.estimators import AdvantageConfig, broadcast_to_tokens, compute_advantages, mean_token_nll

PENALTY = 0.1  # verl-agent's invalid_action_penalty_coef and the plugin's default


@dataclass
class LayoutBatch:
    data: Any  # verl.DataProto
    step: np.ndarray  # [B] the true time index of each row (not in the batch unless stamped)

    def reference(self, config: AdvantageConfig, penalty: float = PENALTY) -> torch.Tensor:
        """[B, L] compute_advantages on the rows, broadcast over the response mask."""
        non_tensor = self.data.non_tensor_batch
        valid = non_tensor["is_action_valid"]
        reward = [r if ok else r - penalty for r, ok in zip(non_tensor["rewards"].tolist(), valid.tolist())]
        mask = self.data.batch["response_mask"]
        output = compute_advantages(
            group=list(non_tensor["uid"]),
            traj=list(non_tensor["traj_uid"]),
            step=self.step.tolist(),
            reward=reward,
            anchor=list(non_tensor["anchor_obs"]),
            nll=mean_token_nll(self.data.batch["old_log_probs"], mask),
            invalid=[not ok for ok in valid.tolist()],
            invalid_penalty=penalty,
            config=config,
        )
        return broadcast_to_tokens(output.advantages, mask)


def build_layout_batch(
    num_tasks: int = 3, group_size: int = 4, max_steps: int = 6, response_length: int = 8, seed: int = 0
) -> LayoutBatch:
    """A random batch of ``num_tasks x group_size`` trajectories of 1..max_steps steps."""
    import importlib

    DataProto = importlib.import_module("verl").DataProto  # verl is untyped and optional

    rng = np.random.default_rng(seed)
    prompt_length = 5
    rows: dict[str, list] = {key: [] for key in ("uid", "traj_uid", "anchor_obs", "rewards", "is_action_valid", "step")}
    episode_rewards, episode_lengths = [], []
    for task in range(num_tasks):
        for rollout in range(group_size):
            length = int(rng.integers(1, max_steps + 1))
            won = bool(rng.random() < 0.5)
            states = [0, *rng.integers(1, 4, size=length - 1)]  # all rollouts of a task start in state 0
            for t in range(length):
                rows["uid"].append(f"uid-{task}")
                rows["traj_uid"].append(f"traj-{task}-{rollout}")
                rows["anchor_obs"].append(
                    f"You are in room {states[t]} of house {task}. Your task is to: find the key."
                )
                rows["rewards"].append(10.0 if won and t == length - 1 else 0.0)  # ALFWorld: 10 x won
                rows["is_action_valid"].append(bool(rng.random() > 0.2))
                rows["step"].append(t)
                episode_rewards.append(10.0 if won else 0.0)
                episode_lengths.append(length)
    size = len(rows["uid"])
    valid_length = torch.from_numpy(rng.integers(1, response_length + 1, size=size))
    positions = torch.arange(response_length)
    response_mask = (positions[None, :] < valid_length[:, None]).long()
    attention_mask = torch.cat([torch.ones(size, prompt_length, dtype=torch.long), response_mask], dim=1)
    old_log_probs = -torch.from_numpy(rng.gamma(1.0, 1.0, size=(size, response_length))).float()
    scores = torch.zeros(size, response_length)
    last = valid_length - 1
    invalid = ~torch.tensor(rows["is_action_valid"])
    scores[torch.arange(size), last] = torch.tensor(episode_rewards) - PENALTY * invalid.float()
    tensors = {
        "prompts": torch.randint(0, 100, (size, prompt_length)),
        "responses": torch.randint(0, 100, (size, response_length)),
        "attention_mask": attention_mask,
        "response_mask": response_mask,
        "old_log_probs": old_log_probs,
        "token_level_scores": scores,
        "token_level_rewards": scores.clone(),
    }
    non_tensors = {
        "uid": np.array(rows["uid"], dtype=object),
        "traj_uid": np.array(rows["traj_uid"], dtype=object),
        "anchor_obs": np.array(rows["anchor_obs"], dtype=object),
        "rewards": np.array(rows["rewards"], dtype=object),
        "active_masks": np.array([True] * size, dtype=object),
        "is_action_valid": np.array(rows["is_action_valid"], dtype=bool),
        "episode_rewards": np.array(episode_rewards, dtype=np.float32),
        "episode_lengths": np.array(episode_lengths, dtype=np.int32),
        "data_source": np.array(["alfworld"] * size, dtype=object),
    }
    data = DataProto.from_dict(tensors=tensors, non_tensors=non_tensors)
    return LayoutBatch(data=data, step=np.array(rows["step"]))
