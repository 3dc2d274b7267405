"""The plugin's options: verl's ``algorithm`` node, ``algorithm.gaca.*``, to typed configs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from omegaconf import OmegaConf

from gaca.estimators.config import AdvantageConfig
from gaca.estimators.registry import verl_names

ESTIMATOR_METHODS: dict[str, str] = {name: method for method, name in verl_names().items()}
"""verl's ``algorithm.adv_estimator`` name -> ``AdvantageConfig.method`` (the estimators' registry
specs: ``gaca_grpo`` is the paper's episode-level GRPO over step rows; ``grpo`` stays verl's own)."""


@dataclass(frozen=True)
class RewardOptions:
    """How the per-step reward r_t is read from the batch (not estimator options)."""

    invalid_action_penalty: float = 0.1
    """Subtracted from ``rewards`` on rows whose ``is_action_valid`` is False (verl-agent's
    ``invalid_action_penalty_coef``); 0 turns it off. Rows are unpenalised without that field."""

    def __post_init__(self) -> None:
        value = self.invalid_action_penalty
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
            raise ValueError(f"algorithm.gaca.invalid_action_penalty must be a finite number >= 0, got {value!r}")


ESTIMATOR_OPTIONS = tuple(option.name for option in fields(AdvantageConfig))
REWARD_OPTIONS = tuple(option.name for option in fields(RewardOptions))


def plugin_options(algorithm: Any, estimator: str) -> tuple[AdvantageConfig, RewardOptions]:
    """The estimator and reward options of ``algorithm.adv_estimator=estimator``.

    Args:
        algorithm: verl's ``algorithm`` config (a DictConfig, a mapping or None); options are read
            from its ``gaca`` node, e.g. ``+algorithm.gaca.lambda0=0.25`` on the command line.
        estimator: a key of ``ESTIMATOR_METHODS``; it sets ``AdvantageConfig.method``.

    Raises:
        ValueError: for an unknown estimator name, an unknown key under ``algorithm.gaca`` (listing
            the allowed ones), a ``method`` that contradicts the estimator name, or a bad value
            (naming ``algorithm.gaca.<field>``).
    """
    if estimator not in ESTIMATOR_METHODS:
        raise ValueError(f"unknown gaca estimator {estimator!r}; known: {sorted(ESTIMATOR_METHODS)}")
    method = ESTIMATOR_METHODS[estimator]
    values = _gaca_node(algorithm)
    unknown = sorted(set(values) - set(ESTIMATOR_OPTIONS) - set(REWARD_OPTIONS))
    if unknown:
        raise ValueError(
            f"unknown option(s) {', '.join('algorithm.gaca.' + key for key in unknown)}; "
            f"allowed: {', '.join(sorted(ESTIMATOR_OPTIONS + REWARD_OPTIONS))}"
        )
    if values.get("method", method) != method:
        raise ValueError(
            f"algorithm.gaca.method={values['method']!r} contradicts algorithm.adv_estimator={estimator!r} "
            f"(method {method!r}); choose the method through adv_estimator ({sorted(ESTIMATOR_METHODS)})"
        )
    estimator_values = {key: value for key, value in values.items() if key in ESTIMATOR_OPTIONS}
    reward_values = {key: value for key, value in values.items() if key in REWARD_OPTIONS}
    try:
        config = AdvantageConfig(**{**estimator_values, "method": method})
    except ValueError as error:
        raise ValueError(str(error).replace("algorithm.", "algorithm.gaca.", 1)) from None
    return config, RewardOptions(**reward_values)


def _gaca_node(algorithm: Any) -> dict[str, Any]:
    node = None if algorithm is None else algorithm.get("gaca")
    if node is None:
        return {}
    if not isinstance(node, Mapping):
        raise ValueError(f"algorithm.gaca must be a mapping of options, got {node!r}")
    if OmegaConf.is_config(node):
        node = OmegaConf.to_container(node, resolve=True)
    return dict(node.items())
