"""``trainer.update=distinct`` computes the loss and gradient of ``every_row``: each distinct (prompt,
response) pair scored once, every copy's loss term kept; and so does ``trainer.last_layer=scored_positions``
with either. Hand-checked pair numbering, then a fixed batch of real step rows with copies, where every
way gives the same loss and a gradient equal within 1e-6; the options' run keys."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import pytest
import torch

from gaca.backends.cpu.ppo import distinct_pairs, first_of_each, ppo_update, score
from gaca.backends.cpu.rollout import RolloutRows, collect_rollouts
from gaca.backends.cpu.start import initial_policy
from gaca.compose import compose, validate
from gaca.envs import make_family
from gaca.tracking.identity import run_key


def rows_of(prompts: list[list[int]], responses: list[list[int]]) -> RolloutRows:
    n = len(prompts)
    return RolloutRows(
        group=[0] * n,
        traj=list(range(n)),
        step=[0] * n,
        reward=[0.0] * n,
        anchor=[""] * n,
        invalid=[False] * n,
        prompt_ids=prompts,
        response_ids=responses,
        logprobs=[[-1.0] * len(r) for r in responses],
        allowed=None,
    )


def test_pairs_are_numbered_by_first_appearance_and_a_prompt_alone_is_not_a_pair():
    rows = rows_of([[1, 2], [1, 2], [3], [1, 2], [3]], [[5], [6], [5], [5], [5]])
    assert distinct_pairs(rows) == [0, 1, 2, 0, 2]
    firsts, inverse = first_of_each([0, 1, 2, 0, 2])
    assert firsts == [0, 1, 2] and inverse.tolist() == [0, 1, 2, 0, 2]
    firsts, inverse = first_of_each([2, 0, 2])  # a mini-batch's rows: positions within it
    assert firsts == [0, 1] and inverse.tolist() == [0, 1, 0]


def test_constrained_decoding_pairs_include_the_allowed_ids():
    rows = rows_of([[1], [1]], [[5], [5]])
    rows.allowed = [[[5, 6]], [[5, 7]]]
    assert distinct_pairs(rows) == [0, 1]


@pytest.fixture(scope="module")
def batch():
    """A policy a little away from its frozen reference, and real step rows of a tiny errand rollout,
    with copies appended: every third row twice more (the loss must count each copy)."""
    run, _ = validate(compose(["trainer=quick", "trainer.init=scratch", "env.horizon=6", "model.max_prompt_tokens=48"]))
    family = make_family(run.env)
    reference = initial_policy(run, family, Path("unused"))  # init=scratch: nothing is cached
    rollouts = collect_rollouts(reference, family, [0, 1], 4, 1.0, reference.generator(0))
    rows = rollouts.rows
    copies = [i for i in range(len(rows)) for _ in range(2) if i % 3 == 0]
    for name in ("group", "traj", "step", "reward", "anchor", "invalid", "prompt_ids", "response_ids", "logprobs"):
        values = getattr(rows, name)
        values.extend(copy.deepcopy([values[i] for i in copies]))
    policy = copy.deepcopy(reference)
    with torch.no_grad():
        generator = torch.Generator().manual_seed(1)
        for parameter in policy.model.parameters():
            parameter.add_(0.05 * torch.randn(parameter.shape, generator=generator))
    reference.model.requires_grad_(False)
    advantages = torch.randn(len(rows), generator=torch.Generator().manual_seed(2))
    return run, policy, reference, rows, advantages


def gradient_of(update: str, batch, minibatch_size: int, last_layer: str = "every_position"):
    """The loss statistics and every parameter's gradient of one mini-batch (no clipping, no step)."""
    run, policy, reference, rows, advantages = batch
    policy = copy.deepcopy(policy)
    optimizer = torch.optim.SGD(policy.model.parameters(), lr=0.0)
    config = dataclasses.replace(
        run.trainer, update=update, last_layer=last_layer, minibatch_size=minibatch_size, max_grad_norm=1e9
    )
    stats = ppo_update(policy, reference, optimizer, rows, advantages, config, torch.Generator().manual_seed(3))
    return stats, {name: p.grad.clone() for name, p in policy.model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize(
    "update, last_layer",
    [("distinct", "every_position"), ("every_row", "scored_positions"), ("distinct", "scored_positions")],
)
@pytest.mark.parametrize("kl_coef", [0.1, 0.0])
def test_each_cheaper_way_has_the_loss_and_gradient_of_every_row(batch, kl_coef, update, last_layer):
    run, *rest = batch
    fixed = (dataclasses.replace(run, trainer=dataclasses.replace(run.trainer, kl_coef=kl_coef)), *rest)
    n = len(fixed[3])
    assert len(set(distinct_pairs(fixed[3]))) <= n - n // 3  # at least every appended copy repeats a pair
    old, old_gradient = gradient_of("every_row", fixed, n)
    new, new_gradient = gradient_of(update, fixed, n, last_layer)
    assert new.policy_loss == pytest.approx(old.policy_loss, abs=1e-6)
    assert new.kl == pytest.approx(old.kl, abs=1e-6) and (old.kl > 0) == (kl_coef > 0)
    assert new.entropy == pytest.approx(old.entropy, abs=1e-6) and new.tokens == old.tokens
    assert old_gradient.keys() == new_gradient.keys() and old_gradient
    for name, gradient in old_gradient.items():
        assert torch.allclose(new_gradient[name], gradient, rtol=0.0, atol=1e-6), name
    assert max(float(g.abs().max()) for g in old_gradient.values()) > 1e-3  # a gradient worth comparing


def test_copies_get_their_pairs_log_probs_bit_for_bit_and_those_of_every_row_within_1e_6(batch):
    run, policy, _, rows, _ = batch
    pairs = distinct_pairs(rows)
    firsts, inverse = first_of_each(pairs)
    with torch.no_grad():
        each_pair, _, _ = score(policy.model, rows, firsts, run.trainer)
        every_row, _, mask = score(policy.model, rows, list(range(len(rows))), run.trainer)
    copied = each_pair[inverse]
    for i, pair in enumerate(pairs):
        assert torch.equal(copied[i], each_pair[pair])
    assert torch.allclose(copied, every_row, rtol=0.0, atol=1e-6) and mask.sum() > 0


@pytest.mark.parametrize("last_layer", ["every_position", "scored_positions"])
def test_several_mini_batches_and_steps_stay_together(batch, last_layer):
    """Two mini-batches with an optimizer step between them: the second is scored by the updated policy."""
    run, policy, reference, rows, advantages = batch
    results = []
    for update, layer in (("every_row", "every_position"), ("distinct", last_layer)):
        twin = copy.deepcopy(policy)
        optimizer = torch.optim.SGD(twin.model.parameters(), lr=0.1)  # Adam would magnify last-bit gradients near 0
        config = dataclasses.replace(
            run.trainer, update=update, last_layer=layer, minibatch_size=len(rows) // 2 + 1, kl_coef=0.1
        )
        stats = ppo_update(twin, reference, optimizer, rows, advantages, config, torch.Generator().manual_seed(4))
        results.append((stats, torch.cat([p.detach().flatten() for p in twin.model.parameters()])))
    (old, old_weights), (new, new_weights) = results
    assert new.policy_loss == pytest.approx(old.policy_loss, abs=1e-6) and new.grad_norm == pytest.approx(old.grad_norm)
    assert torch.allclose(new_weights, old_weights, rtol=0.0, atol=1e-6)


def key_of(*overrides: str) -> str:
    _, resolved = validate(compose(list(overrides)))
    return run_key(resolved)


def test_the_update_is_part_of_the_key_unless_it_is_the_one_runs_had_before_it_existed():
    every_row = key_of("trainer=short", "trainer.update=every_row", "trainer.threads=1")
    assert every_row == key_of("trainer=short", "trainer.threads=1")
    assert key_of("trainer=short", "trainer.update=distinct", "trainer.threads=1") != every_row
    verl = ("backend=verl", "trainer=paper", "env=household", "model=path", "model.path=/models/q")
    assert key_of(*verl, "trainer.update=distinct") == key_of(*verl, "trainer.update=every_row")


def test_the_last_layer_is_part_of_the_key_unless_every_position():
    default = key_of("trainer=short", "trainer.threads=1")
    assert key_of("trainer=short", "trainer.last_layer=every_position", "trainer.threads=1") == default
    scored = key_of("trainer=short", "trainer.last_layer=scored_positions", "trainer.threads=1")
    both = key_of(
        "trainer=short", "trainer.last_layer=scored_positions", "trainer.update=distinct", "trainer.threads=1"
    )
    assert len({default, scored, both, key_of("trainer=short", "trainer.update=distinct", "trainer.threads=1")}) == 4
    verl = ("backend=verl", "trainer=paper", "env=household", "model=path", "model.path=/models/q")
    assert key_of(*verl, "trainer.last_layer=scored_positions") == key_of(*verl)


def test_compiling_is_part_of_the_key_unless_off():
    default = key_of("trainer=short", "trainer.threads=1")
    assert key_of("trainer=short", "trainer.compile=false", "trainer.threads=1") == default
    assert key_of("trainer=short", "trainer.compile=true", "trainer.threads=1") != default
    verl = ("backend=verl", "trainer=paper", "env=household", "model=path", "model.path=/models/q")
    assert key_of(*verl, "trainer.compile=true") == key_of(*verl)


@pytest.mark.slow
def test_the_compiled_update_has_the_loss_and_gradient_of_the_eager_one(batch):
    """torch.compile compiles here (a minute or more), hence slow, and on the scored-positions forward only
    (the model's own forward compiles in tests/policy/test_bench.py); its kernels round differently: 1e-5."""
    n = len(batch[3])
    old, old_gradient = gradient_of("every_row", batch, n, "scored_positions")
    run, *rest = batch
    compiled = (dataclasses.replace(run, trainer=dataclasses.replace(run.trainer, compile=True)), *rest)
    new, new_gradient = gradient_of("every_row", compiled, n, "scored_positions")
    assert new.policy_loss == pytest.approx(old.policy_loss, abs=1e-5) and new.kl == pytest.approx(old.kl, abs=1e-5)
    for name, gradient in old_gradient.items():
        assert torch.allclose(new_gradient[name], gradient, rtol=0.0, atol=1e-5), name


def test_an_unknown_update_is_one_line_naming_the_choices():
    with pytest.raises(ValueError, match=r"trainer.update must be one of \['every_row', 'distinct'\]"):
        validate(compose(["trainer.update=dedup"]))


def test_an_unknown_last_layer_is_one_line_naming_the_choices():
    with pytest.raises(
        ValueError, match=r"trainer.last_layer must be one of \['every_position', 'scored_positions'\], got 'tail'"
    ):
        validate(compose(["trainer.last_layer=tail"]))
