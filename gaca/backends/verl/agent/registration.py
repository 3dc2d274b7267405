"""gaca's estimators in verl's advantage-estimator registry, and the hook that lends them the batch.

verl's ``ray_trainer.compute_advantage`` hands a registered estimator only
``token_level_rewards``, ``response_mask``, ``config`` and ``index``. The hook wraps that function
(the legacy trainer looks it up at call time) so that the whole DataProto is visible, through a
context variable, to the registered estimator that verl's own dispatch then calls.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextvars import ContextVar
from types import ModuleType
from typing import TYPE_CHECKING, Any

import torch

from gaca.backends.verl.agent.advantage import DIAGNOSTICS_KEY, diagnostics, token_level_advantages
from gaca.backends.verl.agent.batch import V1_HINT
from gaca.backends.verl.agent.options import ESTIMATOR_METHODS

if TYPE_CHECKING:
    from verl import DataProto

_BATCH: ContextVar[DataProto | None] = ContextVar("gaca_verl_batch", default=None)


def _registered_estimator(name: str) -> Callable[..., tuple[torch.Tensor, torch.Tensor]]:
    def estimator(
        token_level_rewards: torch.Tensor,
        response_mask: torch.Tensor,
        config: Any = None,
        index: Any = None,
        **_other_inputs: Any,  # reward_baselines etc., which verl passes when present
    ) -> tuple[torch.Tensor, torch.Tensor]:
        data = _BATCH.get()
        if data is None or not _same_tensor(data.batch.get("token_level_rewards"), token_level_rewards):
            raise RuntimeError(
                f"algorithm.adv_estimator={name!r} needs the whole batch (trajectory ids, anchor observations, "
                "step rewards), which reaches it only through verl.trainer.ppo.ray_trainer.compute_advantage "
                f"with gaca's plugin loaded (`import verl` loads it). {V1_HINT}; other trainers call "
                "gaca.backends.verl.compute_batch_advantages(data, name, algorithm_config) themselves."
            )
        advantages, output = token_level_advantages(data, name, config)
        data.meta_info[DIAGNOSTICS_KEY] = diagnostics(output)
        return advantages, advantages

    estimator.__name__ = estimator.__qualname__ = f"{name}_advantage"
    estimator.__doc__ = (
        f"verl estimator {name!r}: gaca.compute_advantages(method={ESTIMATOR_METHODS[name]!r}) on the batch "
        "held by the hook, broadcast over response_mask; returns (advantages, returns) [B, L], equal."
    )
    return estimator


ADV_ESTIMATORS: dict[str, Callable[..., tuple[torch.Tensor, torch.Tensor]]] = {
    name: _registered_estimator(name) for name in ESTIMATOR_METHODS
}
"""verl's ``algorithm.adv_estimator`` name -> the function registered with verl under it (``gaca``'s own
estimators by ``algorithm.method`` are ``gaca.estimators.registry.ESTIMATORS``)."""


def register_estimators(core_algos: ModuleType) -> None:
    """Register ``gaca``, ``gigpo`` and ``gaca_grpo`` with verl's ``register_adv_est``.

    Idempotent. Registers nothing if any of the names already belongs to another estimator.

    Raises:
        ValueError: naming each clashing name and its current owner.
    """
    clashes = {}
    for name, estimator in ADV_ESTIMATORS.items():
        try:
            owner = core_algos.get_adv_estimator_fn(name)
        except ValueError:  # not registered
            continue
        if owner is not estimator:
            clashes[name] = f"{getattr(owner, '__module__', '?')}.{getattr(owner, '__qualname__', owner)}"
    if clashes:
        owners = ", ".join(f"{name!r} (registered by {owner})" for name, owner in clashes.items())
        raise ValueError(
            f"gaca cannot register its advantage estimators: verl's registry already has {owners}. "
            "Uninstall the other plugin, or keep verl from loading one of the two with "
            "VERL_USE_EXTERNAL_PLUGINS=<comma-separated plugin names to load> (or =none)."
        )
    for name, estimator in ADV_ESTIMATORS.items():
        core_algos.register_adv_est(name)(estimator)


def install_batch_hook(ray_trainer: Any) -> None:
    """Wrap ``ray_trainer.compute_advantage`` so that registered estimators can see the batch. Idempotent."""
    original = ray_trainer.compute_advantage
    if getattr(original, "holds_batch_for_gaca", False):
        return

    @functools.wraps(original)
    def compute_advantage(data: DataProto, *args: Any, **kwargs: Any) -> DataProto:
        token = _BATCH.set(data)
        try:
            return original(data, *args, **kwargs)
        finally:
            _BATCH.reset(token)

    compute_advantage.holds_batch_for_gaca = True  # type: ignore[attr-defined]
    ray_trainer.compute_advantage = compute_advantage


def _same_tensor(held: torch.Tensor | None, given: torch.Tensor) -> bool:
    return held is given or (
        isinstance(held, torch.Tensor) and held.shape == given.shape and held.data_ptr() == given.data_ptr()
    )
