"""gaca's estimators in an unmodified verl-agent: three hooks installed at run time.

verl-agent (the public GiGPO code, a fork of verl) dispatches advantage estimators by name in its own
trainer, ``verl/trainer/ppo/ray_trainer.py``. For ``algorithm.adv_estimator`` in
``ESTIMATOR_METHODS`` these hooks do, without editing that file:

1. No critic. ``RayPPOTrainer.__init__`` raises for an estimator it does not know; while it runs,
   the hook shows it verl-agent's own critic-free ``gigpo`` (``STAND_IN_ESTIMATOR``), then puts the
   name back and sets ``use_critic = False``.
2. The step index. ``RayPPOTrainer.fit`` gets each rollout from ``self.traj_collector.multi_turn_loop``;
   during ``fit`` the hook stamps every training rollout with
   ``add_step_index(batch, global_step=self.global_steps)`` while its rows are still in rollout
   order (before ``adjust_batch`` pads and ``_balance_batch`` reorders).
3. The estimator. ``fit`` calls the module's ``compute_advantage(data, adv_estimator, ...)`` by name
   at call time; the hook sends these names to ``compute_batch_advantages(data, name,
   self.config.algorithm)`` and every other name to verl-agent's own code.

Where they run: verl-agent's ``main_ppo`` builds the trainer inside a Ray actor (``TaskRunner``),
not in the process that starts it. ``gaca.backends.verl.agent_main`` installs the hooks in its own process
and, through Ray's ``runtime_env['worker_process_setup_hook']``, in every Ray worker process; in
each they take effect when ``verl.trainer.ppo.ray_trainer`` is imported. ``gaca verl-agent check
PATH`` (``gaca.backends.verl.agent_check``) says whether a checkout has what they need.
"""

from __future__ import annotations

import functools
import inspect
from contextvars import ContextVar
from enum import Enum
from types import ModuleType
from typing import Any, Callable

from gaca.backends.verl.imports import when_imported
from gaca.backends.verl.options import ESTIMATOR_METHODS

RAY_TRAINER = "verl.trainer.ppo.ray_trainer"
MAIN_PPO = "verl.trainer.main_ppo"
TRAINER_CLASS = "RayPPOTrainer"
STAND_IN_ESTIMATOR = "gigpo"
"""verl-agent's ``AdvantageEstimator.GiGPO``: a name its ``RayPPOTrainer.__init__`` runs without a critic."""
WORKER_SETUP_HOOK = "gaca.backends.verl.agent_hooks.install"
"""Ray's ``worker_process_setup_hook``: called in every Ray worker process when it starts."""
HOOKED = "_gaca_hooks"

_ALGORITHM: ContextVar[Any] = ContextVar("gaca_verl_agent_algorithm", default=None)


def install() -> None:
    """Install the hooks when verl-agent's trainer module is imported (now, if it is)."""
    when_imported(RAY_TRAINER, install_hooks)


def install_hooks(ray_trainer: ModuleType) -> None:
    """Wrap ``RayPPOTrainer.__init__``, ``RayPPOTrainer.fit`` and ``compute_advantage`` of
    ``ray_trainer`` (verl-agent's ``verl.trainer.ppo.ray_trainer``). Idempotent."""
    trainer = getattr(ray_trainer, TRAINER_CLASS)
    if getattr(trainer, HOOKED, False):
        return
    trainer.__init__ = _init_without_critic(trainer.__init__)
    trainer.fit = _fit_with_hooks(trainer.fit)
    ray_trainer.compute_advantage = _dispatching(ray_trainer.compute_advantage)
    setattr(trainer, HOOKED, True)


def install_in_ray_workers(ray: ModuleType) -> None:
    """Make ``ray.init`` (as verl-agent's ``run_ppo`` calls it) add ``WORKER_SETUP_HOOK`` to the job's
    ``runtime_env``, so that the hooks are installed in its Ray workers too. Idempotent."""
    init = ray.init
    if getattr(init, HOOKED, False):
        return

    @functools.wraps(init)
    def ray_init(*args: Any, **kwargs: Any) -> Any:
        runtime_env = dict(kwargs.get("runtime_env") or {})
        existing = runtime_env.get("worker_process_setup_hook")
        if existing not in (None, WORKER_SETUP_HOOK):
            raise ValueError(
                f"ray_init.runtime_env.worker_process_setup_hook is {existing!r}, but gaca needs "
                f"{WORKER_SETUP_HOOK!r} there to install its hooks in verl-agent's trainer; remove the other one"
            )
        runtime_env["worker_process_setup_hook"] = WORKER_SETUP_HOOK
        return init(*args, **{**kwargs, "runtime_env": runtime_env})

    setattr(ray_init, HOOKED, True)
    ray.init = ray_init


def is_gaca_estimator(adv_estimator: Any) -> bool:
    """Whether ``adv_estimator`` (a string, or verl-agent's ``AdvantageEstimator``) names one of gaca's."""
    name = adv_estimator.value if isinstance(adv_estimator, Enum) else adv_estimator
    return isinstance(name, str) and name in ESTIMATOR_METHODS


def _init_without_critic(init: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        config = kwargs["config"] if "config" in kwargs else args[0]
        algorithm = config.algorithm
        name = algorithm.adv_estimator
        if not is_gaca_estimator(name):
            init(self, *args, **kwargs)
            return
        algorithm.adv_estimator = STAND_IN_ESTIMATOR  # verl-agent's critic decision raises on names it lacks
        try:
            init(self, *args, **kwargs)
        finally:
            algorithm.adv_estimator = name
        self.use_critic = False

    return __init__


def _fit_with_hooks(fit: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fit)
    def fit_with_hooks(self: Any, *args: Any, **kwargs: Any) -> Any:
        algorithm = self.config.algorithm
        if not is_gaca_estimator(algorithm.adv_estimator):
            return fit(self, *args, **kwargs)
        collector = self.traj_collector
        collector.multi_turn_loop = _stamping(collector.multi_turn_loop, self)  # shadows the method during fit
        token = _ALGORITHM.set(algorithm)
        try:
            return fit(self, *args, **kwargs)
        finally:
            _ALGORITHM.reset(token)
            del collector.multi_turn_loop

    return fit_with_hooks


def _stamping(rollout: Callable[..., Any], trainer: Any) -> Callable[..., Any]:
    """``rollout`` (a bound ``multi_turn_loop``) whose training batches come back with their step index."""
    signature = inspect.signature(rollout)

    @functools.wraps(rollout)
    def multi_turn_loop(*args: Any, **kwargs: Any) -> Any:
        from gaca.backends.verl.batch import add_step_index

        batch = rollout(*args, **kwargs)
        call = signature.bind(*args, **kwargs)
        call.apply_defaults()
        if call.arguments.get("is_train", True):
            add_step_index(batch, global_step=trainer.global_steps)
        return batch

    return multi_turn_loop


def _dispatching(compute_advantage: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(compute_advantage)
    def dispatching(data: Any, adv_estimator: Any, *args: Any, **kwargs: Any) -> Any:
        if not is_gaca_estimator(adv_estimator):
            return compute_advantage(data, adv_estimator, *args, **kwargs)
        from gaca.backends.verl.advantage import compute_batch_advantages

        name = adv_estimator.value if isinstance(adv_estimator, Enum) else adv_estimator
        algorithm = kwargs["config"] if kwargs.get("config") is not None else _ALGORITHM.get()
        if algorithm is None:
            raise RuntimeError(
                f"compute_advantage(adv_estimator={name!r}) was called outside RayPPOTrainer.fit and without "
                "config=<the algorithm config>: gaca's estimators read their options from it"
            )
        return compute_batch_advantages(data, name, algorithm)

    return dispatching
