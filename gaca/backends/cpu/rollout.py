"""Group rollouts: every live environment acts in one generation batch per step; one row per agent step."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from gaca.envs import EnvFamily, Observation, VectorEnv
from gaca.estimators.steps import StepRows
from gaca.policy.generation import generate
from gaca.policy.model import Policy
from gaca.policy.prompt import observation_prompt


@dataclass
class RolloutRows:
    """The step rows of a batch of episodes in collection order: the estimator's inputs (``steps``)
    and what the PPO update reads (prompt and response ids, old log-probs, the allowed ids)."""

    group: list[int] = field(default_factory=list)
    """Prompt-group id: the index of the task within the batch."""
    traj: list[int] = field(default_factory=list)
    """Episode index within the batch."""
    step: list[int] = field(default_factory=list)
    reward: list[float] = field(default_factory=list)
    anchor: list[str] = field(default_factory=list)
    invalid: list[bool] = field(default_factory=list)
    prompt_ids: list[list[int]] = field(default_factory=list)
    response_ids: list[list[int]] = field(default_factory=list)
    logprobs: list[list[float]] = field(default_factory=list)
    """Old log-probs of the response tokens, as sampled."""
    allowed: list[list[list[int]]] | None = field(default_factory=list)
    """Constrained decoding: the ids each response token was chosen among; None for free decoding."""

    def __len__(self) -> int:
        return len(self.reward)

    def steps(self, nll: torch.Tensor | None) -> StepRows:
        """The estimator's input: these rows with ``nll`` [N] as H_t."""
        return StepRows(self.group, self.traj, self.step, self.reward, self.invalid, self.anchor, nll)


def pad_rows(values: Sequence[Sequence[float]], width: int) -> torch.Tensor:
    """[B, width] right-padded with 0."""
    return torch.tensor([list(v) + [0.0] * (width - len(v)) for v in values], dtype=torch.float32)


def sampled_token_mask(rows: RolloutRows, width: int) -> torch.Tensor:
    """[N, width] 1 for the response tokens the policy actually sampled from its distribution, 0 for
    padding and for tokens that constrained decoding forced (a single allowed continuation, log-prob
    0): H_t of Eq. 4 is the mean NLL of the sampled tokens only, so that it does not shrink with the
    length of an action's forced tail."""
    if rows.allowed is None:
        return pad_rows([[1.0] * len(r) for r in rows.logprobs], width)
    return pad_rows([[float(len(options) > 1) for options in row] for row in rows.allowed], width)


@dataclass
class Episode:
    task_id: int
    group: int
    won: bool = False
    total_return: float = 0.0
    length: int = 0
    invalid_actions: int = 0
    transcript: list[str] = field(default_factory=list)


@dataclass
class Rollouts:
    rows: RolloutRows
    episodes: list[Episode]
    env_seconds: float
    generation_seconds: float
    generated_tokens: int

    @property
    def success_rate(self) -> float:
        return sum(e.won for e in self.episodes) / len(self.episodes)


def decodable(observation: Observation, policy: Policy) -> tuple[str, ...]:
    """The commands generation is given: for constrained decoding the well-formed ones the environment
    offers (invalid ones included, so that invalid actions can happen), else the admissible ones (free
    decoding maps a response that spells one onto its exact string)."""
    if policy.config.decoding == "constrained" and observation.commands is not None:
        return observation.commands
    return observation.admissible


def collect_rollouts(
    policy: Policy,
    family: EnvFamily,
    task_ids: Sequence[int],
    group_size: int,
    temperature: float,
    generator: torch.Generator,
    transcripts: int = 0,
) -> Rollouts:
    """Play ``group_size`` episodes of each task until all are done (success or horizon).

    Episode ``k`` plays task ``task_ids[k // group_size]``. At every step the prompts of all live
    episodes go through ``generate`` together. The first ``transcripts`` episodes keep a text log.
    """
    envs = VectorEnv(family, [task_id for task_id in task_ids for _ in range(group_size)])
    start = time.perf_counter()
    observations = envs.reset()
    env_seconds = time.perf_counter() - start
    generation_seconds, generated_tokens = 0.0, 0
    histories: list[list[tuple[str, str]]] = [[] for _ in observations]
    episodes = [Episode(task_id, k // group_size) for k, task_id in enumerate(envs.task_ids)]
    for k in range(min(transcripts, len(episodes))):
        episodes[k].transcript.append(f"task {episodes[k].task_id}: {observations[k].task}\n{observations[k].text}")
    rows = RolloutRows(allowed=[] if policy.config.decoding == "constrained" else None)
    while any(envs.alive):
        live = [k for k, alive in enumerate(envs.alive) if alive]
        prompts = [observation_prompt(observations[k], histories[k], policy.config) for k in live]
        start = time.perf_counter()
        generation = generate(
            policy, prompts, [decodable(observations[k], policy) for k in live], temperature, generator
        )
        generation_seconds += time.perf_counter() - start
        generated_tokens += sum(len(ids) for ids in generation.response_ids)
        actions: list[str | None] = [None] * len(envs)
        for j, k in enumerate(live):
            actions[k] = generation.actions[j]
        start = time.perf_counter()
        results = envs.step(actions)
        env_seconds += time.perf_counter() - start
        for j, k in enumerate(live):
            result, observation, episode, action = results[k], observations[k], episodes[k], actions[k]
            assert result is not None and action is not None  # a live episode was given an action and stepped
            rows.group.append(episode.group)
            rows.traj.append(k)
            rows.step.append(episode.length)
            rows.reward.append(result.reward)
            rows.anchor.append(observation.anchor)
            rows.invalid.append(result.invalid)
            rows.prompt_ids.append(generation.prompt_ids[j])
            rows.response_ids.append(generation.response_ids[j])
            rows.logprobs.append(generation.logprobs[j])
            if rows.allowed is not None and generation.allowed is not None:
                rows.allowed.append(generation.allowed[j])
            episode.length += 1
            episode.total_return += result.reward
            episode.won = episode.won or result.won
            episode.invalid_actions += result.invalid
            if episode.transcript:
                episode.transcript.append(f"> {action}\n{result.observation.text}")
            histories[k].append((observation.text, action))
            observations[k] = result.observation
    return Rollouts(rows, episodes, env_seconds, generation_seconds, generated_tokens)
