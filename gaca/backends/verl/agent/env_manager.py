"""gaca's environment families served to verl-agent's trainer as its environment manager.

verl-agent's ``TaskRunner.run`` builds its environments with ``agent_system.environments.make_envs(config)``,
imported when it runs. For ``env.env_name=gaca/<family>`` the hook of ``gaca.backends.verl.agent.hooks``
answers that call with two ``ServedEnvironments`` (training, validation) in the shape of verl-agent's
``EnvironmentManagerBase``: ``reset(kwargs)``, ``step(text_actions)``, ``success_evaluator(...)``,
``close()``. The episodes are gaca's own (``gaca.envs``), shown as the CPU backend shows them:

- the prompt is ``observation_prompt`` of the observation and the episode's history (the model's
  ``history_length`` and ``show_admissible``), the anchor the observation's ``anchor``;
- a training rollout of iteration i plays the tasks the CPU backend's iteration i plays (the same
  seeded draw of ``trainer.tasks_per_iteration`` distinct training tasks), ``env.rollout.n`` episodes each,
  consecutive (verl-agent groups rows ``k // n``); validation plays the first ``trainer.num_eval_tasks``
  held-out tasks ``trainer.eval_episodes_per_task`` times each;
- a response is parsed as the CPU backend parses it (``gaca.policy.generation.response_action``): the
  admissible command its ids spell up to and including eos, else its decoded text; verl-agent's rollout
  loop hands over text only, so the hooks make it decode with special tokens kept
  (``SpecialTokensKept``), and the ids come back by encoding that text (exact for a word-level
  tokenizer): a response cut at the length limit has no eos and is never mapped onto a command;
- the reward of a step is the environment's without the invalid-action penalty, and
  ``is_action_valid`` says where it applies: verl-agent (``use_invalid_action_penalty``) and gaca's
  estimators (``algorithm.gaca.invalid_action_penalty``) subtract it themselves, so that r_t is the CPU
  backend's; ``won`` ends with the episode.

The run config reaches the TaskRunner actor as JSON in ``RUN_CONFIG_VARIABLE`` (set by the job).
"""

from __future__ import annotations

import io
import json
import os
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gaca import contract
from gaca.backends.config import RunConfig
from gaca.envs import EnvFamily, Observation, VectorEnv, make_family
from gaca.policy.generation import response_action
from gaca.policy.prompt import observation_prompt
from gaca.policy.tokenizer import TextEncoder, load_tokenizer
from gaca.policy.trie import TrieCache

ENV_NAME_PREFIX = "gaca/"
"""``env.env_name=gaca/<family>``: the trainer plays gaca's family instead of one of verl-agent's."""
RUN_CONFIG_VARIABLE = "GACA_RUN_CONFIG"
"""The job's run config (``RunConfig.to_dict()``) as JSON, in the trainer's environment."""


def served_env_name(family: str) -> str:
    return ENV_NAME_PREFIX + family


def serves(config: Any) -> bool:
    """Whether verl-agent's ``config`` asks for one of gaca's families."""
    return str(config.env.env_name).startswith(ENV_NAME_PREFIX)


@dataclass
class Episode:
    task_id: int
    episode: int
    """Which of the task's episodes in this rollout (0 .. k - 1)."""
    history: list[tuple[str, str]] = field(default_factory=list)
    won: bool = False
    total_return: float = 0.0
    """Penalties included, as the CPU backend counts it."""
    length: int = 0
    invalid_actions: int = 0


class ServedEnvironments:
    """One rollout's episodes of a gaca family, stepped in lockstep for verl-agent's rollout loop."""

    def __init__(self, run: RunConfig, family: EnvFamily, is_train: bool, tokenizer_path: str) -> None:
        self.run = run
        self.family = family
        self.is_train = is_train
        self.iteration = 1
        """The training iteration the next training rollout belongs to (the hooks set it)."""
        self.tokenizer = load_tokenizer(tokenizer_path)
        self.encode = TextEncoder(self.tokenizer)
        self.tries = TrieCache(self.encode, self.tokenizer.eos_token_id)
        self.envs: VectorEnv | None = None
        self.observations: list[Observation] = []
        self.episodes: list[Episode] = []
        self.seconds = 0.0
        """Seconds in ``reset`` and ``step`` since the last reset: the environments' side of the rollout
        (the command parsed from the response, the step, the next prompt rendered)."""

    def task_ids(self) -> list[tuple[int, int]]:
        """(task id, episode of that task) of every environment of the next rollout, in row order."""
        trainer = self.run.trainer
        if self.is_train:
            from gaca.backends.cpu.loop import PURPOSE_TASKS, seed_for

            rng = np.random.default_rng(seed_for(self.run.seed, self.iteration, PURPOSE_TASKS))
            drawn = rng.choice(self.family.train_task_ids, size=trainer.tasks_per_iteration, replace=False)
            return [(int(task), k) for task in drawn for k in range(trainer.group_size)]
        tasks = list(self.family.eval_task_ids)[: trainer.num_eval_tasks or None]
        return [(task, k) for task in tasks for k in range(trainer.eval_episodes_per_task)]

    def __len__(self) -> int:
        return len(self.task_ids())

    def reset(self, kwargs: Any = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        began = time.perf_counter()
        plan = self.task_ids()
        self.envs = VectorEnv(self.family, [task for task, _ in plan])
        self.observations = self.envs.reset()
        self.episodes = [Episode(task, k) for task, k in plan]
        observed = self._observe()
        self.seconds = time.perf_counter() - began
        return observed, [{"won": False, "task_id": e.task_id} for e in self.episodes]

    def step(self, text_actions: list[str]) -> tuple[dict[str, Any], np.ndarray, np.ndarray, list[dict[str, Any]]]:
        began = time.perf_counter()
        try:
            return self._step(text_actions)
        finally:
            self.seconds += time.perf_counter() - began

    def _step(self, text_actions: list[str]) -> tuple[dict[str, Any], np.ndarray, np.ndarray, list[dict[str, Any]]]:
        assert self.envs is not None, "reset() first"
        if len(text_actions) != len(self.episodes):
            raise ValueError(f"{len(text_actions)} actions for {len(self.episodes)} environments")
        alive = list(self.envs.alive)
        actions = [
            self.command(text, self.observations[k]) if alive[k] else None for k, text in enumerate(text_actions)
        ]
        results = self.envs.step(actions)
        penalty = self.run.env.invalid_penalty
        rewards = np.zeros(len(self.episodes), dtype=np.float32)
        infos = []
        for k, (episode, result) in enumerate(zip(self.episodes, results)):
            if result is None:  # ended before this step: verl-agent masks the row out
                infos.append({"won": episode.won, "is_action_valid": True, "task_id": episode.task_id})
                continue
            rewards[k] = result.reward + (penalty if result.invalid else 0.0)
            episode.history.append((self.observations[k].text, str(actions[k])))
            episode.length += 1
            episode.invalid_actions += result.invalid
            episode.total_return += result.reward
            episode.won = episode.won or result.won
            self.observations[k] = result.observation
            infos.append({"won": episode.won, "is_action_valid": not result.invalid, "task_id": episode.task_id})
        dones = np.array([not alive_now for alive_now in self.envs.alive], dtype=bool)
        return self._observe(), rewards, dones, infos

    def command(self, text: str, observation: Observation) -> str:
        """The action of a response decoded with its special tokens (``SpecialTokensKept``): its ids up to
        the first eos (all of them without one; the padding after it dropped), parsed by ``response_action``."""
        ids = self.encode([text])[0]
        eos = self.tokenizer.eos_token_id
        if eos in ids:
            ids = ids[: ids.index(eos) + 1]
        trie = self.tries.get(observation.admissible) if observation.admissible else None
        return response_action(ids, trie, self.tokenizer)

    def success_evaluator(self, *args: Any, **kwargs: Any) -> dict[str, np.ndarray]:
        return {"success_rate": np.array([float(e.won) for e in self.episodes])}

    def outcomes_csv(self, iteration: int) -> str:
        """The last rollout's episodes in the contract's outcome file (``contract.OUTCOME_FILE_COLUMNS``)."""
        out = io.StringIO()
        out.write(",".join(contract.OUTCOME_FILE_COLUMNS) + "\n")
        for e in self.episodes:
            out.write(f"{iteration},{e.task_id},{e.episode},{int(e.won)},{e.total_return:.6g},{e.length}\n")
        return out.getvalue()

    def eval_metrics(self) -> dict[str, float]:
        """The contract's evaluation metrics of the last rollout."""
        return {
            contract.EVAL_SUCCESS_RATE: float(np.mean([e.won for e in self.episodes])),
            contract.EVAL_RETURN_MEAN: float(np.mean([e.total_return for e in self.episodes])),
            contract.EVAL_EPISODE_LENGTH: float(np.mean([e.length for e in self.episodes])),
        }

    def rollout_metrics(self) -> dict[str, float]:
        """The contract's training metrics of the last rollout, as the CPU backend computes them: the return
        with the invalid-action penalty, the share of invalid steps, and the outcome signal metrics."""
        from gaca.backends.cpu.signal import outcome_signal

        episodes = self.episodes
        groups = [e.task_id for e in episodes]  # a rollout plays distinct tasks: the task is the prompt group
        won, lengths = [e.won for e in episodes], [e.length for e in episodes]
        return {
            contract.PERF_ENV_S: self.seconds,
            contract.PERF_ENV_STEPS_PER_S: sum(lengths) / max(self.seconds, 1e-9),
            contract.TRAIN_SUCCESS_RATE: float(np.mean(won)),
            contract.TRAIN_RETURN_MEAN: float(np.mean([e.total_return for e in episodes])),
            contract.TRAIN_EPISODE_LENGTH: float(np.mean(lengths)),
            contract.TRAIN_INVALID_ACTION_RATE: sum(e.invalid_actions for e in episodes) / max(sum(lengths), 1),
            **outcome_signal(groups, won, lengths, self.family.horizon),
        }

    def close(self) -> None:
        self.envs = None

    def _observe(self) -> dict[str, Any]:
        model = self.run.model
        texts = [observation_prompt(o, e.history, model) for o, e in zip(self.observations, self.episodes)]
        return {"text": texts, "image": None, "anchor": [o.anchor for o in self.observations]}


class SpecialTokensKept:
    """A tokenizer that decodes with its special tokens kept and is otherwise ``tokenizer`` itself.

    verl-agent's rollout loop turns responses into the environments' text actions with
    ``batch_decode(responses, skip_special_tokens=True)``, which drops whether a response ended with eos;
    the hooks give its collector this tokenizer while gaca's environments are served, so that
    ``ServedEnvironments.command`` reads the response's ids back from the text.
    """

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer

    def __getattr__(self, name: str) -> Any:
        return getattr(self.tokenizer, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.tokenizer(*args, **kwargs)

    def batch_decode(self, sequences: Any, **kwargs: Any) -> list[str]:
        return self.tokenizer.batch_decode(sequences, **{**kwargs, "skip_special_tokens": False})


def run_from_environment() -> RunConfig:
    """The run config the job put in ``RUN_CONFIG_VARIABLE``."""
    text = os.environ.get(RUN_CONFIG_VARIABLE)
    if not text:
        raise RuntimeError(
            f"env.env_name={ENV_NAME_PREFIX}... needs the run config in ${RUN_CONFIG_VARIABLE}; "
            "start the trainer through `gaca train backend=verl`"
        )
    return RunConfig.from_dict(json.loads(text))


def make_envs(config: Any) -> tuple[ServedEnvironments, ServedEnvironments]:
    """verl-agent's ``make_envs`` for ``env.env_name=gaca/<family>``: (training, validation) managers.

    Raises:
        ValueError: when verl-agent's batch sizes disagree with the run's (they set how many rows
            the rollout loop hands the environments).
    """
    run = run_from_environment()
    family = make_family(run.env)
    path = config.actor_rollout_ref.model.path
    train, val = ServedEnvironments(run, family, True, path), ServedEnvironments(run, family, False, path)
    expected = {
        "data.train_batch_size x env.rollout.n": (config.data.train_batch_size * config.env.rollout.n, len(train)),
        "data.val_batch_size": (config.data.val_batch_size, len(val)),
    }
    for key, (given, wanted) in expected.items():
        if given != wanted:
            raise ValueError(f"{key} is {given}, but the run's rollouts have {wanted} episodes; let the job set it")
    return train, val
