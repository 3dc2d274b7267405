"""The same update: one PPO update of the same weights on the same step rows through the CPU backend's
``ppo_update`` and through verl's actor loss as verl-agent's actor applies it (``dp_actor.update_policy``:
verl's ``vanilla`` policy loss, ``low_var_kl`` and entropy terms aggregated ``token-mean`` per micro-batch,
each micro-batch's loss divided by the micro-batches of a full mini-batch, grad-norm clip, AdamW), with
verl 0.9.1's ``core_algos`` and its log-prob functions on the layout verl's actor builds.

The parameters agree within float tolerance when a mini-batch is one micro-batch
(``backend.micro_batch_size_per_gpu`` = ``trainer.minibatch_size``); with smaller micro-batches they do not
(each micro-batch's token mean weighs the same, however many tokens it holds), which the last test pins.
"""

from __future__ import annotations

import copy

import pytest
import torch

from gaca.backends.config import TrainerConfig
from gaca.backends.cpu.ppo import ppo_update
from gaca.backends.cpu.rollout import RolloutRows, collect_rollouts, pad_rows
from gaca.envs import EnvConfig, make_family
from gaca.estimators import AdvantageConfig, compute_advantages, mean_token_nll
from gaca.policy.config import ModelConfig
from gaca.policy.logprobs import FILLER_TOKEN_ID
from gaca.policy.model import Policy

core_algos = pytest.importorskip("verl.trainer.ppo.core_algos", reason="needs the verl extra (CI installs it)")
pytestmark = pytest.mark.verl

SETTINGS = dict(lr=1e-3, clip_ratio=0.2, clip_ratio_c=3.0, kl_coef=0.01, entropy_coef=0.001, max_grad_norm=1.0)
"""The recipe's loss settings (verl-agent's KL 0.01 low_var_kl, entropy 0.001, dual clip 3, grad clip 1)."""

TOLERANCE = 1e-5
"""1% of the learning rate: Adam's first step moves a parameter by about lr, whatever its gradient's size, so
float rounding of a tiny gradient (two layouts, two log-prob formulas) shows at about 1e-6 here."""


@pytest.fixture(scope="module")
def batch():
    """A real rollout of the tiny policy on errand (3 tasks x 2 episodes) and its GACA advantages."""
    family = make_family(EnvConfig(name="errand", difficulty="easy", horizon=6))
    policy = Policy.create(ModelConfig(), sorted(family.vocabulary()), seed=0)
    rollouts = collect_rollouts(policy, family, family.train_task_ids[:3], 2, 1.0, policy.generator(0))
    rows = rollouts.rows
    old = pad_rows(rows.logprobs, max(map(len, rows.logprobs)))
    columns = {name: getattr(rows, name) for name in ("group", "traj", "step", "reward", "anchor", "invalid")}
    nll = mean_token_nll(old, (old != 0).float())
    advantage = compute_advantages(**columns, nll=nll, config=AdvantageConfig(method="gaca"), invalid_penalty=0.1)
    return policy, rows, advantage.advantages


def verl_layout(rows: RolloutRows, indices: list[int]) -> dict[str, torch.Tensor]:
    """The rows as verl's actor gets them: [left-padded prompt | right-padded response], mask, positions."""
    prompt_width = max(len(rows.prompt_ids[i]) for i in indices)
    response_width = max(len(rows.response_ids[i]) for i in indices)
    input_ids, mask, responses = [], [], []
    for i in indices:
        prompt, response = rows.prompt_ids[i], rows.response_ids[i]
        left, right = prompt_width - len(prompt), response_width - len(response)
        input_ids.append([FILLER_TOKEN_ID] * left + prompt + response + [FILLER_TOKEN_ID] * right)
        mask.append([0] * left + [1] * (len(prompt) + len(response)) + [0] * right)
        responses.append(response + [FILLER_TOKEN_ID] * right)
    attention_mask = torch.tensor(mask)
    from verl.utils.model import compute_position_id_with_mask

    return {
        "input_ids": torch.tensor(input_ids),
        "attention_mask": attention_mask,
        "position_ids": compute_position_id_with_mask(attention_mask),
        "responses": torch.tensor(responses),
        "response_mask": attention_mask[:, prompt_width:].float(),
    }


def verl_forward(model, layout: dict[str, torch.Tensor], temperature: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probs and entropies [B, R] of the responses, as verl's actor computes them (logits / temperature)."""
    from verl.utils.torch_functional import entropy_from_logits, logprobs_from_logits

    width = layout["responses"].shape[1]
    logits = model(
        input_ids=layout["input_ids"],
        attention_mask=layout["attention_mask"],
        position_ids=layout["position_ids"],
        use_cache=False,
    ).logits
    logits = logits[:, -width - 1 : -1].float() / temperature
    return logprobs_from_logits(logits, layout["responses"]), entropy_from_logits(logits)


def verl_update(policy, reference, optimizer, rows, advantages, config, micro_batch: int) -> None:
    """One mini-batch of every row, in batch order, through verl's actor loss in ``micro_batch``-row pieces."""
    from verl.workers.config import ActorConfig

    actor = ActorConfig(
        strategy="fsdp",
        rollout_n=1,
        clip_ratio=config.clip_ratio,
        clip_ratio_low=config.clip_ratio,
        clip_ratio_high=config.clip_ratio,
        clip_ratio_c=config.clip_ratio_c,
        ppo_micro_batch_size_per_gpu=micro_batch,
    )
    n = len(rows)
    gradient_accumulation = config.minibatch_size // micro_batch
    optimizer.zero_grad(set_to_none=True)
    for start in range(0, n, micro_batch):
        indices = list(range(start, min(start + micro_batch, n)))
        layout = verl_layout(rows, indices)
        mask = layout["response_mask"]
        old = pad_rows([rows.logprobs[i] for i in indices], mask.shape[1])
        token_advantages = advantages[indices].unsqueeze(1) * mask
        logprob, entropy = verl_forward(policy.model, layout, config.rollout_temperature)
        with torch.no_grad():
            reference_logprob, _ = verl_forward(reference.model, layout, config.rollout_temperature)
        pg_loss, _ = core_algos.get_policy_loss_fn("vanilla")(old, logprob, token_advantages, mask, "token-mean", actor)
        loss = pg_loss - config.entropy_coef * core_algos.agg_loss(entropy, mask, "token-mean")
        kl = core_algos.kl_penalty(logprob, reference_logprob, "low_var_kl")
        loss = loss + config.kl_coef * core_algos.agg_loss(kl, mask, "token-mean")
        (loss / gradient_accumulation).backward()
    torch.nn.utils.clip_grad_norm_(policy.model.parameters(), config.max_grad_norm)
    optimizer.step()


def updated(policy: Policy, update) -> dict[str, torch.Tensor]:
    policy = copy.deepcopy(policy)
    reference = copy.deepcopy(policy)
    reference.model.requires_grad_(False)
    optimizer = torch.optim.AdamW(policy.model.parameters(), lr=SETTINGS["lr"])
    update(policy, reference, optimizer)
    return {name: parameter.detach().clone() for name, parameter in policy.model.named_parameters()}


def largest_difference(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    return max(float((a[name] - b[name]).abs().max()) for name in a)


def test_verls_recomputed_old_log_probs_are_the_sampled_ones(batch):
    """verl recomputes the old log-probs with the actor before updating; the CPU backend keeps the sampled
    ones. At the sampling weights they agree to float rounding."""
    policy, rows, _ = batch
    indices = list(range(len(rows)))
    layout = verl_layout(rows, indices)
    with torch.no_grad():
        recomputed, _ = verl_forward(policy.model, layout, 1.0)
    sampled = pad_rows(rows.logprobs, layout["response_mask"].shape[1])
    torch.testing.assert_close(recomputed * layout["response_mask"], sampled, atol=1e-5, rtol=1e-5)


def test_one_update_gives_the_cpu_backends_parameters_with_one_micro_batch_per_mini_batch(batch):
    policy, rows, advantages = batch
    config = TrainerConfig(minibatch_size=len(rows), ppo_epochs=1, **SETTINGS)
    cpu = updated(
        policy,
        lambda p, r, o: ppo_update(p, r, o, rows, advantages, config, torch.Generator().manual_seed(0)),
    )
    verl = updated(policy, lambda p, r, o: verl_update(p, r, o, rows, advantages, config, micro_batch=len(rows)))
    moved = largest_difference(cpu, {n: q.detach() for n, q in policy.model.named_parameters()})
    assert moved > 1e-4  # the update did something
    assert largest_difference(cpu, verl) < TOLERANCE


def test_smaller_micro_batches_weigh_each_micro_batchs_token_mean_alike(batch):
    """The convention that differs: verl's token mean is per micro-batch (``ppo_micro_batch_size_per_gpu``);
    set it to ``ppo_mini_batch_size`` (``backend.micro_batch_size_per_gpu``) to align."""
    policy, rows, advantages = batch
    config = TrainerConfig(minibatch_size=len(rows), ppo_epochs=1, **SETTINGS)
    cpu = updated(
        policy,
        lambda p, r, o: ppo_update(p, r, o, rows, advantages, config, torch.Generator().manual_seed(0)),
    )
    micro = max(1, len(rows) // 3)
    config = TrainerConfig(minibatch_size=micro * 3, ppo_epochs=1, **SETTINGS)
    verl = updated(policy, lambda p, r, o: verl_update(p, r, o, rows, advantages, config, micro_batch=micro))
    assert largest_difference(cpu, verl) > 100 * TOLERANCE
