"""What the trainer feeds the estimator and logs about it: H_t over sampled tokens, a fresh random
permutation per batch, the criticality histogram's overflow bin and the batch-signal diagnostics."""

import csv

import numpy as np
import pytest
import torch
from mlflow.tracking import MlflowClient

from gaca.backends.cpu.loop import histogram_csv, train
from gaca.backends.cpu.rollout import Episode, RolloutRows, Rollouts, sampled_token_mask
from gaca.backends.cpu.signal import batch_signal
from gaca.contract import (
    CRITICALITY_BINS,
    SIGNAL_METRICS,
)
from gaca.contract import (
    DIAG_C_LENGTH_CORR as C_LENGTH_CORR,
)
from gaca.contract import (
    DIAG_LENGTH_FRAC as LENGTH_FRAC,
)
from gaca.contract import (
    DIAG_MIXED_GROUP_FRAC as MIXED_GROUP_FRAC,
)
from gaca.contract import (
    DIAG_STEP_EPISODE_CORR as STEP_EPISODE_CORR,
)
from gaca.contract import (
    DIAG_ZERO_ADV_FRAC as ZERO_ADVANTAGE_FRAC,
)
from gaca.estimators import AdvantageConfig, AdvantageOutput, compute_advantages


def test_forced_tokens_never_enter_the_mean_nll():
    rows = RolloutRows(logprobs=[[-1.0, 0.0, 0.0], [-2.0, -0.5]], allowed=[[[4, 5], [6], [7]], [[4, 5], [8, 9]]])
    mask = sampled_token_mask(rows, 3)
    assert mask.tolist() == [[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]]
    free = RolloutRows(logprobs=[[-1.0, 0.0], [-2.0]], allowed=None)
    assert sampled_token_mask(free, 2).tolist() == [[1.0, 1.0], [1.0, 0.0]]


def _random_detector_batch():
    group = [0] * 12
    traj = [0] * 6 + [1] * 6
    step = list(range(6)) * 2
    reward = [0.0] * 5 + [1.0] + [0.0] * 6
    nll = [0.1, 0.9, 0.3, 2.0, 0.05, 0.7, 0.4, 1.5, 0.2, 0.6, 0.8, 0.3]
    return dict(group=group, traj=traj, step=step, reward=reward, anchor=[str(s) for s in step], nll=nll)


def test_the_random_control_draws_a_fresh_permutation_per_run_seed_and_iteration():
    batch = _random_detector_batch()
    base = AdvantageConfig(method="gaca", detector="random")

    def criticality(run_seed, iteration):
        return compute_advantages(**batch, config=base.reseeded(run_seed, iteration)).criticality

    first = criticality(0, 1)
    assert torch.equal(first, criticality(0, 1))  # a rerun draws the same permutation
    assert not torch.equal(first, criticality(0, 2))  # another iteration, another permutation
    assert not torch.equal(first, criticality(1, 1))  # another run seed, another permutation
    # Still a permutation of the entropy scores within each trajectory.
    entropy = compute_advantages(**batch, config=AdvantageConfig(method="gaca")).criticality
    for rows in (slice(0, 6), slice(6, 12)):
        assert sorted(first[rows].tolist()) == pytest.approx(sorted(entropy[rows].tolist()))


def test_the_histogram_counts_every_criticality_value():
    values = np.array([0.0, 0.05, 3.99, 4.0, 7.5, 123.0])
    counts = np.histogram(values, bins=CRITICALITY_BINS)[0]
    assert counts.sum() == len(values) and counts[-1] == 3 and counts[0] == 2
    rows = list(csv.DictReader(histogram_csv(counts).splitlines()))
    assert (rows[-1]["bin_left"], rows[-1]["bin_right"], rows[-1]["count"]) == ("4.00", "inf", "3")


def test_batch_signal_on_a_hand_computed_batch():
    # Two groups of two episodes: group 0 mixed (one win), group 1 both lost; horizon 4.
    episodes = [
        Episode(0, 0, won=True, length=2),
        Episode(0, 0, length=4),
        Episode(1, 1, length=4),
        Episode(1, 1, length=2),
    ]
    rows = RolloutRows(response_ids=[[1, 2], [1, 2, 3, 4], [1], [1, 2, 3]])
    rollouts = Rollouts(rows, episodes, 0.0, 0.0, 0)
    output = AdvantageOutput(
        advantages=torch.tensor([1.0, 0.0, -1.0, 0.0]),
        episode=torch.tensor([1.0, 0.0, -1.0, 0.0]),
        step_level=torch.tensor([2.0, 0.0, 0.0, 1.0]),
        criticality=torch.tensor([2.0, 1.0, 0.5, 0.5]),
    )
    signal = batch_signal(rollouts, output, horizon=4)
    assert signal[ZERO_ADVANTAGE_FRAC] == 0.5
    assert signal[MIXED_GROUP_FRAC] == 0.5
    assert signal[LENGTH_FRAC] == pytest.approx(12 / 4 / 4)
    # Rows carrying signal: 0, 2, 3 -> A^S (2, 0, 1), A^E (1, -1, 0).
    assert signal[STEP_EPISODE_CORR] == pytest.approx(np.corrcoef([2, 0, 1], [1, -1, 0])[0, 1])
    assert signal[C_LENGTH_CORR] == pytest.approx(np.corrcoef([2, 1, 0.5, 0.5], [2, 4, 1, 3])[0, 1])
    # No spread: no linear relation can be measured; 0 keeps a point every iteration.
    flat = AdvantageOutput(advantages=torch.zeros(4), episode=torch.zeros(4), step_level=torch.zeros(4))
    assert batch_signal(rollouts, flat, horizon=4)[STEP_EPISODE_CORR] == 0.0


def test_a_gaca_run_logs_the_signal_metrics_every_iteration(workdir, compose_run):
    run, resolved = compose_run("env=errand", "env.knobs.route_length=3", "trainer.iterations=2")
    result = train(run, resolved, quiet=True)
    client = MlflowClient(workdir[1])
    for key in SIGNAL_METRICS:
        history = client.get_metric_history(result.run_id, key)
        assert [m.step for m in history] == [1, 2], key
        assert all(np.isfinite(m.value) for m in history)
