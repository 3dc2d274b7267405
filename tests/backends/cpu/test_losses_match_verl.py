"""The surrogate and KL equal verl 0.9.1's ``vanilla`` policy loss and ``low_var_kl`` on random tensors."""

import pytest
import torch

from gaca.backends.cpu.losses import clipped_policy_loss, low_var_kl, masked_mean

core_algos = pytest.importorskip("verl.trainer.ppo.core_algos", reason="needs the verl extra (CI installs it)")
pytestmark = pytest.mark.verl


def verl_actor_config(clip_ratio: float, clip_ratio_c: float):
    from verl.workers.config import ActorConfig

    return ActorConfig(
        strategy="fsdp",
        rollout_n=8,
        clip_ratio=clip_ratio,
        clip_ratio_low=clip_ratio,  # ActorConfig defaults these to 0.2, not to clip_ratio
        clip_ratio_high=clip_ratio,
        clip_ratio_c=clip_ratio_c,
        ppo_micro_batch_size_per_gpu=1,
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("batch, length", [(4, 7), (32, 12)])
@pytest.mark.parametrize("clip_ratio, clip_ratio_c", [(0.2, 3.0), (0.1, 1.5)])
def test_policy_loss_equals_verl_vanilla(seed, batch, length, clip_ratio, clip_ratio_c):
    generator = torch.Generator().manual_seed(seed)
    old = -torch.rand(batch, length, generator=generator) * 3
    new = old + torch.randn(batch, length, generator=generator) * 0.5
    advantages = torch.randn(batch, 1, generator=generator).expand(batch, length).contiguous()
    mask = (torch.rand(batch, length, generator=generator) < 0.8).float()
    mask[:, 0] = 1
    ours = clipped_policy_loss(old, new, advantages, mask, clip_ratio, clip_ratio_c)
    config = verl_actor_config(clip_ratio, clip_ratio_c)
    theirs, metrics = core_algos.get_policy_loss_fn("vanilla")(old, new, advantages, mask, "token-mean", config)
    torch.testing.assert_close(ours.loss, theirs)
    assert ours.clip_frac.item() == pytest.approx(metrics["actor/pg_clipfrac"], abs=1e-6)
    assert ours.clip_frac_lower.item() == pytest.approx(metrics["actor/pg_clipfrac_lower"], abs=1e-6)
    assert ours.approx_kl.item() == pytest.approx(metrics["actor/ppo_kl"], abs=1e-6)


@pytest.mark.parametrize("seed", [0, 1])
def test_low_var_kl_equals_verl(seed):
    generator = torch.Generator().manual_seed(seed)
    logprob = -torch.rand(16, 9, generator=generator) * 5
    ref = logprob + torch.randn(16, 9, generator=generator) * 2
    mask = (torch.rand(16, 9, generator=generator) < 0.7).float()
    torch.testing.assert_close(low_var_kl(logprob, ref), core_algos.kl_penalty(logprob, ref, "low_var_kl"))
    ours = masked_mean(low_var_kl(logprob, ref), mask)
    theirs = core_algos.agg_loss(core_algos.kl_penalty(logprob, ref, "low_var_kl"), mask, "token-mean")
    torch.testing.assert_close(ours, theirs)
