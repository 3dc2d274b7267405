"""The group-rollout PPO loop (the paper's Algorithm 1 on the CPU backend). ``iteration`` is the
algorithm (sample tasks, roll out G episodes each, estimate advantages, update); ``train`` is the
scaffolding around it (the MLflow run, resume, evaluation, checkpoints, timers). The starting
policy is ``gaca.backends.cpu.start``'s; every random draw comes from ``gaca.backends.cpu.seeds``.
"""

from __future__ import annotations

import copy
import io
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from gaca import contract
from gaca.backends.config import RunConfig
from gaca.backends.cpu.checkpoint import load_checkpoint, save_checkpoint
from gaca.backends.cpu.extension import adopt, extensible, find_source
from gaca.backends.cpu.garbage_collector import relaxed_gc
from gaca.backends.cpu.ppo import UpdateStats, ppo_update
from gaca.backends.cpu.progress import Progress
from gaca.backends.cpu.rollout import Rollouts, collect_rollouts, pad_rows, sampled_token_mask
from gaca.backends.cpu.seeds import PURPOSE_EVAL, PURPOSE_ROLLOUT, PURPOSE_TASKS, PURPOSE_UPDATE, seed_for
from gaca.backends.cpu.signal import batch_signal
from gaca.backends.cpu.start import initial_policy, prior_accuracy
from gaca.backends.lifecycle import OpenRun, Stopped, finishing, open_or_skip
from gaca.backends.result import TrainResult
from gaca.envs import EnvFamily, make_family
from gaca.estimators import AdvantageOutput, mean_token_nll
from gaca.estimators.registry import ESTIMATORS
from gaca.policy.model import Policy
from gaca.tracking.run import RunLogger


def evaluate(policy: Policy, family: EnvFamily, run: RunConfig, iteration: int) -> Rollouts:
    """``eval_episodes_per_task`` episodes per held-out task at the evaluation temperature (the same
    tasks and generator seed for every run of a seed, so that runs pair task by task)."""
    tasks = list(family.eval_task_ids)[: run.trainer.num_eval_tasks or None]
    generator = policy.generator(seed_for(run.seed, iteration, PURPOSE_EVAL))
    return collect_rollouts(
        policy,
        family,
        tasks,
        run.trainer.eval_episodes_per_task,
        run.trainer.eval_temperature,
        generator,
        transcripts=run.trainer.transcripts,
    )


def eval_metrics(rollouts: Rollouts) -> dict[str, float]:
    episodes = rollouts.episodes
    return {
        contract.EVAL_SUCCESS_RATE: rollouts.success_rate,
        contract.EVAL_RETURN_MEAN: float(np.mean([e.total_return for e in episodes])),
        contract.EVAL_EPISODE_LENGTH: float(np.mean([e.length for e in episodes])),
    }


def outcomes_csv(rollouts: Rollouts, iteration: int) -> str:
    out = io.StringIO()
    out.write(",".join(contract.OUTCOME_FILE_COLUMNS) + "\n")
    seen: dict[int, int] = {}
    for e in rollouts.episodes:
        episode = seen[e.task_id] = seen.get(e.task_id, -1) + 1
        out.write(f"{iteration},{e.task_id},{episode},{int(e.won)},{e.total_return:.6g},{e.length}\n")
    return out.getvalue()


def transcripts_text(rollouts: Rollouts) -> str:
    return "\n\n".join(
        "\n".join(e.transcript) + f"\n[won={e.won} return={e.total_return:.3g}]"
        for e in rollouts.episodes
        if e.transcript
    )


def log_evaluation(logger: RunLogger, rollouts: Rollouts, iteration: int) -> None:
    logger.log_text(outcomes_csv(rollouts, iteration), contract.outcomes_artifact(iteration))
    text = transcripts_text(rollouts)
    if text:
        logger.log_text(text, contract.transcripts_artifact(iteration))


@dataclass
class Iteration:
    """What one iteration of Algorithm 1 produced."""

    rollouts: Rollouts
    advantage: AdvantageOutput
    update: UpdateStats
    estimator_seconds: float
    update_seconds: float


def iteration(
    run: RunConfig,
    family: EnvFamily,
    policy: Policy,
    reference: Policy | None,
    optimizer: torch.optim.Optimizer,
    i: int,
) -> Iteration:
    """Iteration ``i`` of Algorithm 1: roll out G episodes on each sampled task, estimate the
    advantages (Eqs. 2-8), update the policy with PPO (Eq. 1)."""
    trainer = run.trainer
    # 1. Rollout: trainer.tasks_per_iteration distinct training tasks, G episodes each.
    rng = np.random.default_rng(seed_for(run.seed, i, PURPOSE_TASKS))
    tasks = rng.choice(family.train_task_ids, size=trainer.tasks_per_iteration, replace=False)
    rollouts = collect_rollouts(
        policy,
        family,
        [int(t) for t in tasks],
        trainer.group_size,
        trainer.rollout_temperature,
        policy.generator(seed_for(run.seed, i, PURPOSE_ROLLOUT)),
    )
    rows = rollouts.rows

    # 2. Advantages: one row per agent step; H_t from the old policy's sampled tokens.
    began = time.perf_counter()
    old = pad_rows(rows.logprobs, max(len(r) for r in rows.logprobs))
    nll = mean_token_nll(old, sampled_token_mask(rows, old.shape[1]))
    advantage = rows.steps(nll).advantages(run.algorithm.reseeded(run.seed, i), run.env.invalid_penalty)
    estimator_seconds = time.perf_counter() - began

    # 3. PPO update on the batch's step rows.
    began = time.perf_counter()
    for group in optimizer.param_groups:
        group["lr"] = trainer.lr_at(i)
    update = ppo_update(
        policy,
        reference,
        optimizer,
        rows,
        advantage.advantages,
        trainer,
        torch.Generator().manual_seed(seed_for(run.seed, i, PURPOSE_UPDATE)),
    )
    return Iteration(rollouts, advantage, update, estimator_seconds, time.perf_counter() - began)


def iteration_metrics(step: Iteration, lr: float, horizon: int, seconds: float) -> dict[str, float]:
    """The contract's per-iteration metrics (``gaca.contract.METRICS``) of one iteration."""
    rollouts, stats, rows = step.rollouts, step.update, step.rollouts.rows
    episodes = rollouts.episodes
    return {
        contract.TRAIN_SUCCESS_RATE: rollouts.success_rate,
        contract.TRAIN_RETURN_MEAN: float(np.mean([e.total_return for e in episodes])),
        contract.TRAIN_EPISODE_LENGTH: float(np.mean([e.length for e in episodes])),
        contract.TRAIN_INVALID_ACTION_RATE: float(np.mean(rows.invalid)),
        contract.LOSS_POLICY: stats.policy_loss,
        contract.LOSS_KL: stats.kl,
        contract.LOSS_CLIP_FRAC: stats.clip_frac,
        contract.LOSS_ENTROPY: stats.entropy,
        contract.LOSS_GRAD_NORM: stats.grad_norm,
        contract.TRAIN_LR: lr,
        **{contract.diagnostic_metric(k): v for k, v in step.advantage.diagnostics.items()},
        **batch_signal(rollouts, step.advantage, horizon),
        contract.PERF_ITERATION_S: seconds,
        contract.PERF_ENV_S: rollouts.env_seconds,
        contract.PERF_GENERATION_S: rollouts.generation_seconds,
        contract.PERF_UPDATE_S: step.update_seconds,
        contract.PERF_ESTIMATOR_S: step.estimator_seconds,
        contract.PERF_ENV_STEPS_PER_S: len(rows) / max(rollouts.env_seconds, 1e-9),
        contract.PERF_TOKENS_PER_S: rollouts.generated_tokens / max(rollouts.generation_seconds, 1e-9),
        contract.PERF_TRAIN_TOKENS_PER_S: stats.tokens / max(step.update_seconds, 1e-9),
    }


def train(
    run: RunConfig, resolved: dict[str, Any], quiet: bool | None = None, stop_after: int | None = None
) -> TrainResult:
    """Train one run end to end; ``resolved`` is the plain config it was built from (for params and the key).

    A finished run with the same key in MLflow is skipped; an unfinished one is resumed from its
    last checkpoint into the same MLflow run. ``stop_after`` stops the run like a preemption after
    that iteration's checkpoint (the MLflow run is left KILLED, to be resumed).
    """
    if run.trainer.threads is not None:
        torch.set_num_threads(run.trainer.threads)
    opened = open_or_skip(run, resolved)
    if isinstance(opened, TrainResult):
        return opened
    with relaxed_gc(), finishing(opened.logger):
        return _train(run, resolved, opened, quiet, stop_after)


def _train(
    run: RunConfig, resolved: dict[str, Any], opened: OpenRun, quiet: bool | None, stop_after: int | None
) -> TrainResult:
    """The scaffolding around ``iteration``: resume or extend, evaluation, logging, checkpoints, timers."""
    key, logger, trainer = opened.key, opened.logger, run.trainer
    family = make_family(run.env)
    output = Path(run.output_dir)
    checkpoint_dir = output / key
    checkpoint = load_checkpoint(checkpoint_dir, newest=logger.logged_until) if run.resume and opened.resumed else None
    if checkpoint is not None and checkpoint.state.get("run_id") != logger.run_id:
        checkpoint = None  # a checkpoint of a run MLflow does not know starts over
    if checkpoint is None and (run.resume or not opened.resumed) and extensible(run):
        source = find_source(logger, resolved, output)
        if source is not None:
            checkpoint = adopt(source, logger, output, checkpoint_dir, trainer.eval_every)
    elif checkpoint is not None:
        print(
            f"gaca train: resumed run {key} from iteration {checkpoint.iteration} ({checkpoint.folder})",
            file=sys.stderr,
        )
    initial = initial_policy(run, family, output / "bc-cache")
    policy = checkpoint.policy if checkpoint else initial
    reference = None
    if trainer.kl_coef > 0:
        reference = copy.deepcopy(initial) if checkpoint is None else initial
        reference.model.requires_grad_(False)
    optimizer = torch.optim.AdamW(policy.model.parameters(), lr=trainer.lr, weight_decay=trainer.weight_decay)
    start = 0
    histogram = np.zeros(len(contract.CRITICALITY_BINS) - 1)
    if checkpoint:
        optimizer.load_state_dict(checkpoint.state["optimizer"])
        histogram = np.resize(
            checkpoint.state["criticality_hist"], len(contract.CRITICALITY_BINS) - 1
        )  # older: no overflow bin
        histogram[len(checkpoint.state["criticality_hist"]) :] = 0
        start = checkpoint.iteration

    progress = Progress(trainer.iterations, start, quiet=quiet)
    curve: list[tuple[int, float]] = []
    final_success = None
    try:
        if start == 0:
            first = evaluate(policy, family, run, 0)
            metrics = eval_metrics(first)
            if family.prior_accuracy > 0:
                choices = family.prior_choices(list(family.eval_task_ids)[: trainer.num_eval_tasks or None])
                metrics[contract.INIT_PRIOR_ACCURACY] = prior_accuracy(policy, choices, run)
            logger.log_metrics(metrics, step=0)
            log_evaluation(logger, first, 0)
            curve.append((0, first.success_rate))
            final_success = first.success_rate
        for i in range(start + 1, trainer.iterations + 1):
            began = time.perf_counter()
            step = iteration(run, family, policy, reference, optimizer, i)
            if step.advantage.criticality is not None:
                histogram += np.histogram(step.advantage.criticality.numpy(), bins=contract.CRITICALITY_BINS)[0]
            metrics = iteration_metrics(
                step, optimizer.param_groups[0]["lr"], family.horizon, time.perf_counter() - began
            )
            evaluation: Rollouts | None = None
            if i % trainer.eval_every == 0 or i == trainer.iterations:
                evaluation = evaluate(policy, family, run, i)
                metrics.update(eval_metrics(evaluation))
                curve.append((i, evaluation.success_rate))
                final_success = evaluation.success_rate
            logger.log_metrics(metrics, step=i)
            if evaluation is not None:
                log_evaluation(logger, evaluation, i)
            if i == trainer.iterations or (trainer.checkpoint_every and i % trainer.checkpoint_every == 0):
                state = {"optimizer": optimizer.state_dict(), "run_id": logger.run_id, "criticality_hist": histogram}
                save_checkpoint(checkpoint_dir, i, policy, state)
            progress.update(i, step.rollouts.success_rate, evaluation.success_rate if evaluation else None)
            if stop_after is not None and i >= stop_after:
                raise Stopped(f"stopped after iteration {i}")
        if final_success is None:  # resumed after the last iteration's checkpoint
            final_success = evaluate(policy, family, run, trainer.iterations).success_rate
        if ESTIMATORS.spec(run.algorithm.method).gated:
            logger.log_text(histogram_csv(histogram), contract.CRITICALITY_HISTOGRAM)
        logger.log_metrics({contract.FINAL_EVAL_SUCCESS_RATE: final_success}, step=trainer.iterations)
    finally:
        progress.close()
    return TrainResult(logger.run_id, key, final_success, curve=curve)


def histogram_csv(histogram: np.ndarray) -> str:
    """``contract.CRITICALITY_HISTOGRAM``: the counts of each bin of ``contract.CRITICALITY_BINS``."""
    lines = ["bin_left,bin_right,count"]
    bins = contract.CRITICALITY_BINS
    lines += [f"{lo:.2f},{hi:.2f},{int(count)}" for lo, hi, count in zip(bins[:-1], bins[1:], histogram)]
    return "\n".join(lines) + "\n"
