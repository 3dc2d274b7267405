"""Where a verl-agent iteration's seconds go: the worker's own work apart from the Ray round trips.

verl-agent times an iteration's phases on its driver (``timing_s/gen``, ``timing_s/old_log_prob``,
``timing_s/ref``, ``timing_s/update_actor``, ``timing_s/adv``, ``timing_s/testing``,
``timing_s/step``). Four of them are calls to the actor's worker group through Ray (``gen`` once per
turn of the rollout, between the environment steps), so a driver time holds the worker's own work
and the round trip around it: the batch serialized to the worker and back, the scheduling. On a GPU
node the worker's work shrinks and the round trips do not, so the split says what a GPU changes.

- In each Ray worker, ``stamping`` wraps the worker's methods (``WORKER_PHASES``): each stamps its
  own seconds into the ``DataProto`` it returns (``meta_info[WORKER_SECONDS]``).
- On the driver, ``IterationClock.timed`` wraps the worker group's methods: the call is timed, the
  stamp taken off, the difference counted as the round trip.
- ``IterationClock.take`` turns the sums since the last iteration into the contract's ``perf/*``
  (``contract.REMOTE_WORKER_METRICS`` and the update's and generation's seconds and rates).

The held-out evaluation's calls are counted apart (``IterationClock.evaluating``) and left out.
"""

from __future__ import annotations

import functools
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from gaca import contract

WORKER_SECONDS = "gaca_worker_s"
"""``meta_info`` key of a worker method's output: the seconds the worker spent in it."""
GENERATION, LOGPROB, UPDATE = "generation", "logprob", "update"
WORKER_PHASES: Mapping[str, str] = {
    "generate_sequences": GENERATION,
    "compute_log_prob": LOGPROB,  # the old policy's log-probabilities, recomputed after the rollout
    "compute_ref_log_prob": LOGPROB,  # the reference policy's, for the KL term
    "update_actor": UPDATE,
}
"""A method of verl's actor worker (``ActorRolloutRefWorker``) -> the phase its seconds count in."""
PHASE_METRICS: Mapping[str, str] = {
    GENERATION: contract.PERF_GENERATION_S,
    LOGPROB: contract.PERF_LOGPROB_S,
    UPDATE: contract.PERF_UPDATE_S,
}
HOOKED = "_gaca_timed"
now = time.perf_counter
"""The clock (a module attribute, so that tests can drive it)."""


def stamping(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` (a worker method returning a ``DataProto``) that stamps its own seconds into its output.

    ``functools.wraps`` keeps verl's dispatch attributes (``@register``) on the wrapper."""
    if getattr(method, HOOKED, False):
        return method

    @functools.wraps(method)
    def stamped(self: Any, *args: Any, **kwargs: Any) -> Any:
        began = now()
        output = method(self, *args, **kwargs)
        meta_info = getattr(output, "meta_info", None)
        if isinstance(meta_info, dict):
            meta_info[WORKER_SECONDS] = now() - began
        return output

    setattr(stamped, HOOKED, True)
    return stamped


def stamp_worker_methods(worker_class: type) -> None:
    """Wrap ``worker_class``'s methods of ``WORKER_PHASES`` with ``stamping`` (in place; idempotent)."""
    for name in WORKER_PHASES:
        method = worker_class.__dict__.get(name)
        if method is not None:
            setattr(worker_class, name, stamping(method))


class IterationClock:
    """Seconds per phase of the training iteration in progress, on the driver.

    ``worker[phase]``: the workers' own seconds; ``round_trip``: driver time minus worker time over the
    calls whose output carried a stamp; ``unstamped``: calls without one (their driver time is counted
    as the phase's, and the round trip is then unknown)."""

    def __init__(self) -> None:
        self._evaluating = False
        self._zero()

    def _zero(self) -> None:
        self.worker: dict[str, float] = defaultdict(float)
        self.round_trip = 0.0
        self.unstamped = 0

    def timed(self, call: Callable[..., Any], phase: str) -> Callable[..., Any]:
        """``call`` (a worker group's method) timed into ``phase``, its output's stamp taken off."""

        @functools.wraps(call)
        def timed_call(*args: Any, **kwargs: Any) -> Any:
            began = now()
            output = call(*args, **kwargs)
            seconds = now() - began
            meta_info = getattr(output, "meta_info", None)
            worker = meta_info.pop(WORKER_SECONDS, None) if isinstance(meta_info, dict) else None
            if self._evaluating:
                return output
            if worker is None:
                self.unstamped += 1
                self.worker[phase] += seconds
            else:
                self.worker[phase] += float(worker)
                self.round_trip += max(seconds - float(worker), 0.0)
            return output

        return timed_call

    @contextmanager
    def evaluating(self) -> Iterator[None]:
        """Calls made inside (the held-out evaluation) are not counted in the iteration."""
        previous, self._evaluating = self._evaluating, True
        try:
            yield
        finally:
            self._evaluating = previous

    def take(self, timing_raw: Mapping[str, float], response_tokens: float, tokens: float) -> dict[str, float]:
        """The contract's ``perf/*`` of the iteration, then zero for the next.

        ``timing_raw``: verl's phase seconds (``adv`` is the estimator's); ``response_tokens``: the tokens
        generated in the rollout; ``tokens``: prompt and response tokens of the batch the update saw."""
        metrics = {PHASE_METRICS[phase]: seconds for phase, seconds in self.worker.items()}
        if not self.unstamped:
            metrics[contract.PERF_RAY_S] = self.round_trip
        if "adv" in timing_raw:
            metrics[contract.PERF_ESTIMATOR_S] = float(timing_raw["adv"])
        if self.worker.get(GENERATION):
            metrics[contract.PERF_TOKENS_PER_S] = response_tokens / self.worker[GENERATION]
        if self.worker.get(UPDATE):
            metrics[contract.PERF_TRAIN_TOKENS_PER_S] = tokens / self.worker[UPDATE]
        self._zero()
        return metrics


def wrap_worker_group(group: Any, clock: IterationClock) -> dict[str, Any]:
    """Shadow ``group``'s methods of ``WORKER_PHASES`` (instance attributes, as verl binds them) with
    ``clock.timed``; returns the originals for ``unwrap_worker_group``."""
    originals = {name: getattr(group, name) for name in WORKER_PHASES if callable(getattr(group, name, None))}
    for name, call in originals.items():
        setattr(group, name, clock.timed(call, WORKER_PHASES[name]))
    return originals


def unwrap_worker_group(group: Any, originals: Mapping[str, Any]) -> None:
    for name, call in originals.items():
        setattr(group, name, call)
