"""Behaviour cloning from noisy planner demonstrations: the base policy RL starts from (``init=bc``).

The analogue of starting from an instruct model: a policy that sometimes solves tasks, so that sparse
rewards carry signal from the first RL step. ``noise`` sets how often the demonstrator deviates, and
with it how good the cloned policy is.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import random
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np
import torch

from gaca.policy.config import ModelConfig
from gaca.policy.logprobs import sequence_logprobs
from gaca.policy.model import Policy
from gaca.policy.prompt import ObservationLike, observation_prompt

TaskId = TypeVar("TaskId")


class StepResultLike(Protocol):
    observation: ObservationLike
    done: bool


class DemoEnv(Protocol):
    """The environment interface demonstrations need (``gaca.envs.Env`` has it)."""

    def reset(self) -> ObservationLike: ...

    def step(self, action: str) -> StepResultLike: ...

    def expert_action(self) -> str: ...


def env_expert_action(env: DemoEnv) -> str:
    """The default demonstrator: the environment's ``demonstration_action`` when it has one (what the base
    policy is meant to know), else its planner."""
    demonstrate = getattr(env, "demonstration_action", None)
    return demonstrate() if demonstrate is not None else env.expert_action()


def collect_demos(
    make_env_fn: Callable[[TaskId], DemoEnv],
    task_ids: Sequence[TaskId],
    expert_fn: Callable[[DemoEnv], str] = env_expert_action,
    noise: float = 0.0,
    *,
    config: ModelConfig,
    max_steps: int,
    seed: int = 0,
) -> list[tuple[str, str]]:
    """(prompt, action) pairs from one noisy expert episode per entry of ``task_ids``.

    At each step the demonstrator takes a uniformly random admissible command with probability
    ``noise``, else ``expert_fn(env)``; the pair records the action actually taken (so the clone
    inherits the noise) and the prompt is built exactly as during RL (``observation_prompt`` with
    ``config``'s history and admissible settings). Episodes end when the environment says done
    or after ``max_steps`` actions. The expert must replan from whatever state the noise led to.
    """
    if not 0.0 <= noise <= 1.0:
        raise ValueError(f"noise must be a probability in [0, 1], got {noise!r}")
    if max_steps < 1:
        raise ValueError(f"max_steps must be >= 1, got {max_steps!r}")
    rng = random.Random(seed)
    demos: list[tuple[str, str]] = []
    for task_id in task_ids:
        env = make_env_fn(task_id)
        observation = env.reset()
        history: list[tuple[str, str]] = []
        for _ in range(max_steps):
            if observation.admissible and rng.random() < noise:
                action = rng.choice(list(observation.admissible))
            else:
                action = expert_fn(env)
            demos.append((observation_prompt(observation, history, config), action))
            history.append((observation.text, action))
            result = env.step(action)
            if result.done:
                break
            observation = result.observation
    return demos


def behaviour_clone(
    policy: Policy,
    demos: Sequence[tuple[str, str]],
    steps: int,
    lr: float,
    batch_size: int,
    seed: int,
    *,
    more: Callable[[], bool] | None = None,
    more_steps: int = 250,
    max_steps: int = 0,
    report: Callable[[int, int], None] | None = None,
    report_every: int = 50,
) -> list[float]:
    """Train ``policy.model`` in place by cross-entropy on the action tokens (eos included) of ``demos``.

    The loss is the mean negative log-likelihood per action token under the full-vocabulary
    distribution (prompt tokens carry no loss), minimised with AdamW and gradient clipping at 1 over
    ``steps`` mini-batches of ``batch_size`` drawn by shuffled epochs from ``seed``. With ``more``,
    training goes on by ``more_steps`` (same optimizer, same stream of batches) while ``more()`` says
    so, up to ``max_steps`` in all. ``report(done, planned)`` is called every ``report_every`` steps.
    Returns the loss of every step.
    """
    if not demos:
        raise ValueError("behaviour cloning needs at least one demonstration")
    if steps < 1 or batch_size < 1 or not lr > 0:
        raise ValueError(f"need steps >= 1, batch_size >= 1 and lr > 0, got {steps!r}, {batch_size!r}, {lr!r}")
    prompt_ids = policy.encode_prompts([prompt for prompt, _ in demos])
    response_ids = policy.encode_actions([action for _, action in demos])
    optimizer = torch.optim.AdamW(policy.model.parameters(), lr=lr, weight_decay=0.0)
    generator = torch.Generator().manual_seed(seed)
    order: list[int] = []
    losses: list[float] = []
    while True:
        if len(losses) == steps:
            if more is None or steps >= max_steps or not more():
                return losses
            steps = min(steps + more_steps, max_steps)
        if len(order) < batch_size:
            order.extend(torch.randperm(len(demos), generator=generator).tolist())
        batch, order = order[:batch_size], order[batch_size:]
        logprobs, _, mask = sequence_logprobs(
            policy.model, [prompt_ids[i] for i in batch], [response_ids[i] for i in batch]
        )
        loss = -(logprobs * mask).sum() / mask.sum()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
        if report is not None and len(losses) % report_every == 0:
            report(len(losses), steps)


def choice_probabilities(
    policy: Policy, prompts: Sequence[str], options: Sequence[Sequence[str]], chunk: int = 512
) -> np.ndarray:
    """[len(prompts)] the probability of each prompt's first option among its options: the softmax of
    the options' full-vocabulary sequence log-probs (eos included), the choice a sampler makes when it
    writes one of them."""
    pairs = [(i, option) for i, row in enumerate(options) for option in row]
    prompt_ids = policy.encode_prompts(list(prompts))
    response_ids = policy.encode_actions([option for _, option in pairs])
    scores = torch.empty(len(pairs))
    with torch.no_grad():
        for begin in range(0, len(pairs), chunk):
            rows = range(begin, min(begin + chunk, len(pairs)))
            logprobs, _, mask = sequence_logprobs(
                policy.model, [prompt_ids[pairs[r][0]] for r in rows], [response_ids[r] for r in rows]
            )
            scores[begin : begin + len(rows)] = (logprobs * mask).sum(1)
    result, offset = np.empty(len(prompts)), 0
    for i, row in enumerate(options):
        result[i] = torch.softmax(scores[offset : offset + len(row)], 0)[0].item()
        offset += len(row)
    return result


def bc_cache_key(config: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of ``config`` (sorted keys, no spaces): everything the BC policy depends on."""
    canonical = json.dumps(config, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


def load_cached_policy(cache_dir: str | Path, key: str, device: str | None = None) -> Policy | None:
    """The policy saved under ``cache_dir/key``, or None when there is none."""
    directory = Path(cache_dir) / key
    return Policy.load(directory, device=device) if directory.is_dir() else None


def save_cached_policy(policy: Policy, cache_dir: str | Path, key: str) -> Path:
    """Save under ``cache_dir/key`` atomically: written to a temporary sibling, then renamed.

    When another process has already published the same key, its copy is kept (same key, same config).
    """
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    final = cache_dir / key
    staging = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=cache_dir))
    try:
        policy.save(staging)
        os.rename(staging, final)
    except OSError:
        if not final.is_dir():
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return final


def cached_policy(
    cache_dir: str | Path,
    config: Mapping[str, Any],
    build: Callable[[], Policy],
    device: str | None = None,
    waiting: Callable[[], None] | None = None,
) -> Policy:
    """The policy cached for ``config``, else ``build()`` saved under its key and returned.

    Concurrent callers with the same key (sweep jobs of one seed) build it once: the builder holds
    an exclusive lock on ``cache_dir/key.lock``; the others wait for it and then load its copy.
    The OS drops the lock when the builder dies, so a crashed build only makes the next caller build.
    ``waiting()`` is called when another caller holds the lock.
    """
    key = bc_cache_key(config)
    cached = load_cached_policy(cache_dir, key, device=device)
    if cached is not None:
        return cached
    Path(cache_dir).mkdir(parents=True, exist_ok=True)
    with open(Path(cache_dir) / f"{key}.lock", "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if waiting is not None:
                waiting()
            fcntl.flock(lock, fcntl.LOCK_EX)
        cached = load_cached_policy(cache_dir, key, device=device)
        if cached is not None:
            return cached
        policy = build()
        save_cached_policy(policy, cache_dir, key)
        return policy
