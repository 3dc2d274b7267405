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

For every estimator, with gaca's environments served (``gaca.backends.verl.agent.env_manager``,
``env.env_name=gaca/<family>``), and to keep the tracking contract (``gaca.contract``):

4. The environments. ``agent_system.environments.make_envs`` answers ``gaca/<family>`` with gaca's
   managers; each training rollout is told its iteration (``self.global_steps``) first, so that it
   plays the tasks the CPU backend's iteration plays.
5. The diagnostics. ``compute_data_metrics`` (the metrics ``fit`` logs every step) gets the
   estimator's ``diag/*`` and the signal metrics read from its output from ``meta_info[DIAGNOSTICS_KEY]``,
   and, with gaca's environments served, the training rollout's ``train/*`` (the return with the
   invalid-action penalty, ``train/invalid_action_rate``) and outcome signal metrics
   (``ServedEnvironments.rollout_metrics``); each step's criticality counts
   (``contract.CRITICALITY_BINS``) go to ``$GACA_OUTPUT_DIR/criticality/<step>.csv``, summed by the job.
6. The evaluations. After ``_validate`` the served validation episodes are logged to the active MLflow
   run (verl's logger opened it) as ``contract.outcomes_artifact(step)``, and the contract's
   ``eval/*`` join the metrics ``fit`` logs at that step.

And for every run through verl's HF rollout (``actor_rollout_ref.rollout.name=hf``, the CPU jobs'):

7. The positions of generated tokens. ``HFRollout._generate_minibatch`` hands ``generate`` the
   prompt's ``position_ids``; transformers 4.51 (verl-agent's pin) keeps them as given at every
   decoding step, so each generated token after the first is placed at the last prompt token's
   position (the policy then writes ``take egg 1 </s>`` or ``go to cabinet 6 6 6 ...`` where it
   writes ``take egg 1 from sofa 1 </s>`` on the CPU backend). The hook drops them: ``generate``
   counts each token's position from the attention mask, which gives the prompt the same positions.

And for every run, where the seconds go (``gaca.backends.verl.agent.timing``):

8. The timing. In every Ray worker the actor worker's methods (``verl.workers.fsdp_workers``) stamp their
   own seconds into what they return; during ``fit`` the worker group's methods are timed around each
   call, and ``compute_timing_metrics`` (the timing ``fit`` logs every step) gets the contract's
   ``perf/*``: generation, log-probability recomputation and update seconds on the worker, the Ray round
   trips of those calls, the estimator's seconds, and (served environments) the environments' seconds.

With gaca's environments served, ``fit`` also gives the rollout loop's collector a tokenizer that
decodes with special tokens kept (``env_manager.SpecialTokensKept``), so that a response's eos
reaches the environments (``ServedEnvironments.command``).

Where they run: verl-agent's ``main_ppo`` builds the trainer inside a Ray actor (``TaskRunner``),
not in the process that starts it. ``gaca.backends.verl.agent.main`` installs the hooks in its own process
and, through Ray's ``runtime_env['worker_process_setup_hook']``, in every Ray worker process; in
each they take effect when ``verl.trainer.ppo.ray_trainer`` is imported. ``gaca verl-agent check
PATH`` (``gaca.backends.verl.agent.check``) says whether a checkout has what they need.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from contextvars import ContextVar
from enum import Enum
from types import ModuleType
from typing import Any

from gaca.backends.verl.agent.imports import when_imported
from gaca.backends.verl.agent.options import ESTIMATOR_METHODS
from gaca.backends.verl.agent.timing import IterationClock, stamp_worker_methods, unwrap_worker_group, wrap_worker_group

RAY_TRAINER = "verl.trainer.ppo.ray_trainer"
HF_ROLLOUT = "verl.workers.rollout.hf_rollout"
WORKERS = "verl.workers.fsdp_workers"
WORKER_CLASS = "ActorRolloutRefWorker"
ENVIRONMENTS = "agent_system.environments"
OUTPUT_VARIABLE = "GACA_OUTPUT_DIR"
"""The job's folder for what the hooks hand back to it (per-step criticality counts)."""
CRITICALITY_FOLDER = "criticality"
MAIN_PPO = "verl.trainer.main_ppo"
TRAINER_CLASS = "RayPPOTrainer"
STAND_IN_ESTIMATOR = "gigpo"
"""verl-agent's ``AdvantageEstimator.GiGPO``: a name its ``RayPPOTrainer.__init__`` runs without a critic."""
WORKER_SETUP_HOOK = "gaca.backends.verl.agent.hooks.install"
"""Ray's ``worker_process_setup_hook``: called in every Ray worker process when it starts."""
HOOKED = "_gaca_hooks"

_ALGORITHM: ContextVar[Any] = ContextVar("gaca_verl_agent_algorithm", default=None)
_ROLLOUT_METRICS: ContextVar[dict[str, float] | None] = ContextVar("gaca_verl_agent_rollout_metrics", default=None)
"""The served environments' metrics of the last training rollout, logged with that step's metrics."""
_CLOCK: ContextVar[IterationClock | None] = ContextVar("gaca_verl_agent_clock", default=None)
"""The seconds per phase of the iteration in progress (hook 8), set during ``fit``."""


def install() -> None:
    """Install the hooks when verl-agent's trainer and environment modules are imported (now, if they are)."""
    when_imported(RAY_TRAINER, install_hooks)
    when_imported(ENVIRONMENTS, install_environments)
    when_imported(HF_ROLLOUT, install_rollout_positions)
    when_imported(WORKERS, install_worker_timing)


def install_worker_timing(workers: ModuleType) -> None:
    """Make the actor worker's methods stamp their own seconds into their output (hook 8). Idempotent."""
    worker = getattr(workers, WORKER_CLASS, None)
    if worker is not None:
        stamp_worker_methods(worker)


def install_rollout_positions(hf_rollout: ModuleType) -> None:
    """Make ``HFRollout._generate_minibatch`` generate without the prompt's position ids (hook 7). Idempotent."""
    rollout = hf_rollout.HFRollout
    original = rollout._generate_minibatch
    if getattr(original, HOOKED, False):
        return

    @functools.wraps(original)
    def _generate_minibatch(self: Any, prompts: Any) -> Any:
        module = self.module  # the FSDP-wrapped policy; its generate is the model's
        generate = module.generate

        @functools.wraps(generate)
        def generate_from_mask(*args: Any, position_ids: Any = None, **kwargs: Any) -> Any:
            return generate(*args, **kwargs)

        module.generate = generate_from_mask  # an instance attribute shadows it for this call only
        try:
            return original(self, prompts)
        finally:
            del module.generate

    setattr(_generate_minibatch, HOOKED, True)
    rollout._generate_minibatch = _generate_minibatch


def install_environments(environments: Any) -> None:
    """Make ``environments.make_envs`` answer ``env.env_name=gaca/<family>`` with gaca's managers. Idempotent."""
    original = environments.make_envs
    if getattr(original, HOOKED, False):
        return

    @functools.wraps(original)
    def make_envs(config: Any) -> Any:
        from gaca.backends.verl.agent import env_manager

        return env_manager.make_envs(config) if env_manager.serves(config) else original(config)

    setattr(make_envs, HOOKED, True)
    environments.make_envs = make_envs


def install_hooks(ray_trainer: Any) -> None:
    """Wrap ``RayPPOTrainer.__init__``, ``RayPPOTrainer.fit`` and ``compute_advantage`` of
    ``ray_trainer`` (verl-agent's ``verl.trainer.ppo.ray_trainer``). Idempotent."""
    trainer = getattr(ray_trainer, TRAINER_CLASS)
    if getattr(trainer, HOOKED, False):
        return
    trainer.__init__ = _init_without_critic(trainer.__init__)
    trainer.fit = _fit_with_hooks(trainer.fit)
    ray_trainer.compute_advantage = _dispatching(ray_trainer.compute_advantage)
    # What keeps the tracking contract; a trainer without them runs, logging less.
    if hasattr(trainer, "_validate"):
        trainer._validate = _validating(trainer._validate)
    if hasattr(ray_trainer, "compute_data_metrics"):
        ray_trainer.compute_data_metrics = _with_diagnostics(ray_trainer.compute_data_metrics)
    if hasattr(ray_trainer, "compute_timing_metrics"):
        ray_trainer.compute_timing_metrics = _with_perf(ray_trainer.compute_timing_metrics)
    setattr(trainer, HOOKED, True)


def install_in_ray_workers(ray: Any) -> None:
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
        clock = IterationClock()
        group = getattr(self, "actor_rollout_wg", None)
        originals = wrap_worker_group(group, clock) if group is not None else {}
        token = _CLOCK.set(clock)
        try:
            return fit_with_gaca(self, *args, **kwargs)
        finally:
            _CLOCK.reset(token)
            if group is not None:
                unwrap_worker_group(group, originals)

    def fit_with_gaca(self: Any, *args: Any, **kwargs: Any) -> Any:
        algorithm = self.config.algorithm
        if not is_gaca_estimator(algorithm.adv_estimator) and not _served(getattr(self, "envs", None)):
            return fit(self, *args, **kwargs)
        collector = self.traj_collector
        collector.multi_turn_loop = _stamping(collector.multi_turn_loop, self)  # shadows the method during fit
        served = _served(getattr(self, "envs", None))
        if served:
            from gaca.backends.verl.agent.env_manager import SpecialTokensKept

            tokenizer = collector.tokenizer
            collector.tokenizer = SpecialTokensKept(tokenizer)
        token = _ALGORITHM.set(algorithm)
        try:
            return fit(self, *args, **kwargs)
        finally:
            _ALGORITHM.reset(token)
            del collector.multi_turn_loop
            if served:
                collector.tokenizer = tokenizer

    return fit_with_hooks


def _stamping(rollout: Callable[..., Any], trainer: Any) -> Callable[..., Any]:
    """``rollout`` (a bound ``multi_turn_loop``) whose training batches come back with their step index."""
    signature = inspect.signature(rollout)

    @functools.wraps(rollout)
    def multi_turn_loop(*args: Any, **kwargs: Any) -> Any:
        from gaca.backends.verl.agent.batch import add_step_index

        call = signature.bind(*args, **kwargs)
        call.apply_defaults()
        is_train = call.arguments.get("is_train", True)
        if is_train and _served(call.arguments.get("envs")):
            call.arguments["envs"].iteration = trainer.global_steps
        batch = rollout(*args, **kwargs)
        if is_train and _served(call.arguments.get("envs")):
            _ROLLOUT_METRICS.set(call.arguments["envs"].rollout_metrics())
        if is_train and is_gaca_estimator(trainer.config.algorithm.adv_estimator):
            add_step_index(batch, global_step=trainer.global_steps)
        return batch

    return multi_turn_loop


def _dispatching(compute_advantage: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(compute_advantage)
    def dispatching(data: Any, adv_estimator: Any, *args: Any, **kwargs: Any) -> Any:
        if not is_gaca_estimator(adv_estimator):
            return compute_advantage(data, adv_estimator, *args, **kwargs)
        from gaca.backends.verl.agent.advantage import compute_batch_advantages

        name = adv_estimator.value if isinstance(adv_estimator, Enum) else adv_estimator
        algorithm = kwargs["config"] if kwargs.get("config") is not None else _ALGORITHM.get()
        if algorithm is None:
            raise RuntimeError(
                f"compute_advantage(adv_estimator={name!r}) was called outside RayPPOTrainer.fit and without "
                "config=<the algorithm config>: gaca's estimators read their options from it"
            )
        data = compute_batch_advantages(data, name, algorithm)
        _record_criticality(data)
        return data

    return dispatching


def _served(envs: Any) -> bool:
    from gaca.backends.verl.agent.env_manager import ServedEnvironments

    return isinstance(envs, ServedEnvironments)


def _record_criticality(data: Any) -> None:
    """Write this step's criticality counts (and take c_t out of the batch the workers get)."""
    import os
    from pathlib import Path

    import numpy as np

    from gaca import contract
    from gaca.backends.verl.agent.advantage import CRITICALITY_KEY
    from gaca.backends.verl.agent.batch import GLOBAL_STEP

    values = data.meta_info.pop(CRITICALITY_KEY, None)
    folder = os.environ.get(OUTPUT_VARIABLE)
    if values is None or not folder:
        return
    counts = np.histogram(np.asarray(values, dtype=float), bins=contract.CRITICALITY_BINS)[0]
    path = Path(folder) / CRITICALITY_FOLDER / f"{int(data.meta_info[GLOBAL_STEP]):05d}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(",".join(str(int(count)) for count in counts) + "\n")


def criticality_histogram(folder: str, last_step: int) -> Any | None:
    """[bins] the counts of steps 1..last_step written by ``_record_criticality`` in ``folder``, or None.

    A step redone after a resume rewrote its own file, so every step counts once."""
    from pathlib import Path

    import numpy as np

    files = [Path(folder) / CRITICALITY_FOLDER / f"{step:05d}.csv" for step in range(1, last_step + 1)]
    present = [np.loadtxt(file, delimiter=",", ndmin=1) for file in files if file.is_file()]
    return np.sum(present, axis=0) if present else None


def _with_diagnostics(compute_data_metrics: Callable[..., dict]) -> Callable[..., dict]:
    @functools.wraps(compute_data_metrics)
    def with_diagnostics(*args: Any, **kwargs: Any) -> dict:
        from gaca.backends.verl.agent.advantage import DIAGNOSTICS_KEY

        metrics = compute_data_metrics(*args, **kwargs)
        batch = kwargs["batch"] if "batch" in kwargs else args[0]
        metrics.update(batch.meta_info.get(DIAGNOSTICS_KEY) or {})
        metrics.update(_ROLLOUT_METRICS.get() or {})  # the contract's train/* win over verl's mapped ones
        return metrics

    return with_diagnostics


def _validating(validate: Callable[..., dict]) -> Callable[..., dict]:
    @functools.wraps(validate)
    def validating(self: Any) -> dict:
        clock = _CLOCK.get()
        if clock is None:
            metrics = validate(self)
        else:
            with clock.evaluating():
                metrics = validate(self)
        envs = self.val_envs
        if not _served(envs):
            return metrics
        import mlflow

        from gaca import contract

        metrics.update(envs.eval_metrics())
        if mlflow.active_run() is not None:  # trainer.logger has mlflow: verl's logger opened the job's run
            mlflow.log_text(envs.outcomes_csv(self.global_steps), contract.outcomes_artifact(self.global_steps))
        return metrics

    return validating


def _with_perf(compute_timing_metrics: Callable[..., dict]) -> Callable[..., dict]:
    @functools.wraps(compute_timing_metrics)
    def with_perf(*args: Any, **kwargs: Any) -> dict:
        metrics = compute_timing_metrics(*args, **kwargs)
        clock = _CLOCK.get()
        if clock is None:
            return metrics
        batch = kwargs["batch"] if "batch" in kwargs else args[0]
        timing_raw = kwargs["timing_raw"] if "timing_raw" in kwargs else args[1]
        tensors = batch.batch
        response = float(tensors["response_mask"].sum()) if "response_mask" in tensors.keys() else 0.0
        tokens = float(tensors["attention_mask"].sum()) if "attention_mask" in tensors.keys() else 0.0
        metrics.update(clock.take(timing_raw, response, tokens))
        return metrics

    return with_perf
