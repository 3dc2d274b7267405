"""The split of a verl-agent iteration's seconds (gaca.backends.verl.agent.timing) on a driven clock: each worker
call costs 1 s of round trip and the worker's own seconds, so every phase's sum is known exactly."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from gaca import contract
from gaca.backends.verl.agent import timing

ROUND_TRIP = 1.0
WORK = {"generate_sequences": 2.0, "compute_log_prob": 3.0, "compute_ref_log_prob": 4.0, "update_actor": 5.0}


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def register(method):
    method.dispatch_mode = "DP_COMPUTE_PROTO"  # what verl's @register leaves on a worker method
    return method


class Worker:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    def _work(self, name: str):
        self.clock.t += WORK[name]
        return SimpleNamespace(meta_info={"metrics": {}})

    @register
    def generate_sequences(self, prompts):
        return self._work("generate_sequences")

    @register
    def compute_log_prob(self, data):
        return self._work("compute_log_prob")

    @register
    def compute_ref_log_prob(self, data):
        return self._work("compute_ref_log_prob")

    @register
    def update_actor(self, data):
        return self._work("update_actor")

    def save_checkpoint(self, path):
        return None


def group_of(worker: Worker, clock: Clock) -> SimpleNamespace:
    """A worker group as verl binds one: instance attributes that send each call to the worker and back."""

    def remote(name):
        def call(*args):
            clock.t += ROUND_TRIP / 2
            output = getattr(worker, name)(*args)
            clock.t += ROUND_TRIP / 2
            return output

        return call

    return SimpleNamespace(**{name: remote(name) for name in (*WORK, "save_checkpoint")})


@pytest.fixture
def clock(monkeypatch) -> Clock:
    driven = Clock()
    monkeypatch.setattr(timing, "now", driven)
    return driven


def iteration(group, turns: int = 3) -> None:
    for _ in range(turns):
        group.generate_sequences("prompts")
    group.compute_log_prob("batch")
    group.compute_ref_log_prob("batch")
    group.update_actor("batch")


def stamped_worker_class() -> type:
    worker = type("StampedWorker", (Worker,), {name: vars(Worker)[name] for name in WORK})
    timing.stamp_worker_methods(worker)
    timing.stamp_worker_methods(worker)  # idempotent
    return worker


def test_each_phase_gets_the_workers_own_seconds_and_the_round_trips_apart(clock):
    worker = stamped_worker_class()(clock)
    group = group_of(worker, clock)
    iteration_clock = timing.IterationClock()
    originals = timing.wrap_worker_group(group, iteration_clock)
    iteration(group, turns=3)
    metrics = iteration_clock.take({"adv": 0.25, "step": 99.0}, response_tokens=120, tokens=600)
    assert metrics == {
        contract.PERF_GENERATION_S: 3 * 2.0,
        contract.PERF_LOGPROB_S: 3.0 + 4.0,
        contract.PERF_UPDATE_S: 5.0,
        contract.PERF_RAY_S: 6 * ROUND_TRIP,  # three turns, two log-prob passes, one update
        contract.PERF_ESTIMATOR_S: 0.25,
        contract.PERF_TOKENS_PER_S: 120 / 6.0,
        contract.PERF_TRAIN_TOKENS_PER_S: 600 / 5.0,
    }
    iteration(group, turns=1)  # the next iteration starts from zero
    assert iteration_clock.take({}, 0, 0)[contract.PERF_RAY_S] == 4 * ROUND_TRIP
    timing.unwrap_worker_group(group, originals)
    assert group.update_actor("batch").meta_info["gaca_worker_s"] == 5.0  # unwrapped: the stamp stays on


def test_the_stamp_keeps_verls_dispatch_attributes_and_leaves_the_output_clean(clock):
    worker_class = stamped_worker_class()
    assert worker_class.update_actor.dispatch_mode == "DP_COMPUTE_PROTO"
    assert worker_class.save_checkpoint is Worker.save_checkpoint  # not one of the timed methods
    group = group_of(worker_class(clock), clock)
    timing.wrap_worker_group(group, timing.IterationClock())
    assert group.update_actor("batch").meta_info == {"metrics": {}}


def test_evaluation_calls_are_left_out_of_the_iteration(clock):
    group = group_of(stamped_worker_class()(clock), clock)
    iteration_clock = timing.IterationClock()
    timing.wrap_worker_group(group, iteration_clock)
    with iteration_clock.evaluating():
        group.generate_sequences("held-out prompts")
    group.generate_sequences("prompts")
    metrics = iteration_clock.take({}, 0, 0)
    assert metrics[contract.PERF_GENERATION_S] == 2.0 and metrics[contract.PERF_RAY_S] == ROUND_TRIP


def test_without_stamps_the_driver_time_counts_and_no_round_trip_is_claimed(clock):
    group = group_of(Worker(clock), clock)  # workers without the hook
    iteration_clock = timing.IterationClock()
    timing.wrap_worker_group(group, iteration_clock)
    group.update_actor("batch")
    metrics = iteration_clock.take({}, 0, 0)
    assert metrics[contract.PERF_UPDATE_S] == 5.0 + ROUND_TRIP
    assert contract.PERF_RAY_S not in metrics
