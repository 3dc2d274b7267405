"""The checks of a ``backend=verl`` run config, made in gaca's process before any job or MLflow run
exists (``BackendSpec.check_run``): what verl cannot run as the CPU backend would, and options the
hooks inside verl-agent would ignore. Each refusal is one line naming the run config's key to use."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gaca.backends.verl.agent.options import check_overrides
from gaca.backends.verl.launcher.job import verl_overrides
from gaca.backends.verl.launcher.run_options import VERL_ENV_FAMILIES, verl_environment
from gaca.estimators.registry import verl_names

if TYPE_CHECKING:
    from gaca.backends.config import RunConfig


def check_run(run: RunConfig) -> None:
    """What a verl job cannot take from a config that the CPU trainer accepts (``BackendSpec.check_run``:
    before any job or MLflow run exists); one line naming the run config's key to use."""
    served = verl_environment(run) == "gaca"
    if run.model.name != "path" and not served:
        raise ValueError(
            f"model.name: backend=verl on verl-agent's environments trains a Hugging Face checkpoint; set model=path "
            "model.path=<folder or hub id> (e.g. Qwen2.5-1.5B-Instruct), or backend.environment=gaca for "
            f"model={run.model.name}"
        )
    if run.trainer.init != "scratch" and run.model.name == "path":
        raise ValueError(
            f"trainer.init={run.trainer.init} is the CPU backend's behaviour-cloned start of model=tiny or small; "
            "backend=verl starts a checkpoint as loaded: use trainer=paper or trainer.init=scratch"
        )
    if run.trainer.clip_ratio_c is None:
        raise ValueError(
            "trainer.clip_ratio_c must be a number > 1 with backend=verl (verl always applies the dual clip)"
        )
    if run.trainer.lr_schedule != "constant":
        raise ValueError(
            f"trainer.lr_schedule={run.trainer.lr_schedule} is the CPU trainer's; backend=verl keeps verl's constant "
            "learning rate: use trainer=paper, trainer=short or trainer.lr_schedule=constant"
        )
    if run.env.name not in VERL_ENV_FAMILIES and not served:
        raise ValueError(
            f"env.name={run.env.name} has no verl-agent environment (it has {list(VERL_ENV_FAMILIES)}); "
            "backend.environment=gaca serves it"
        )
    check_hook_options(run)  # no option the hooks would ignore


def check_hook_options(run: RunConfig) -> None:
    """Refuse a ``backend=verl`` run config that verl cannot run as the CPU backend would (an estimator
    without a verl name, constrained decoding of an environment gaca serves) or whose
    ``backend.overrides`` set options the hooks would ignore (before any job or MLflow run exists); the
    message names the run config's key to use."""
    method = run.algorithm.method
    offered = verl_names()
    if method not in offered:
        raise ValueError(
            f"algorithm.method={method} has no verl implementation (its estimator spec sets no verl_name); "
            f"backend=verl runs {sorted(offered)}, or run it with backend=cpu"
        )
    # verl-agent's own environments never read model.decoding (Table 1's block sets it for the CPU
    # backend); a family gaca serves would be decoded otherwise than the run config says
    if run.model.decoding != "free" and verl_environment(run) == "gaca":
        raise ValueError(
            f"model.decoding={run.model.decoding}: verl's rollout samples from the whole vocabulary; "
            "use model.decoding=free with backend=verl and gaca's environments (backend.environment=gaca)"
        )
    try:
        check_overrides(verl_overrides(run, "check", 1))
    except ValueError as error:
        raise ValueError(f"backend.overrides: {error}") from None
