"""The plugin's options: verl's ``algorithm`` node, ``algorithm.gaca.*``, to typed configs.

verl-agent's own estimators read some options that gaca's estimators carry under another name
(``TRAINER_OPTIONS``): ``algorithm.gamma``, ``algorithm.gigpo.step_advantage_w`` and
``algorithm.gigpo.mode`` (GiGPO), ``algorithm.norm_adv_by_std_in_grpo`` (GRPO). None is ignored:
where ``algorithm.gaca.<field>`` is not given, the verl-agent option sets it; where both are given
they must agree, else the run is refused naming the ``algorithm.gaca.*`` key to use. Options gaca
has no equivalent of (similarity-based anchor groups, the KL penalty inside the reward) are refused
when they are on. ``check_trainer_config`` also compares the actor's invalid-action penalty, which
is outside the ``algorithm`` node.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from omegaconf import OmegaConf

from gaca.estimators.config import AdvantageConfig
from gaca.estimators.registry import ESTIMATORS, EstimatorSpec, verl_names

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


@dataclass(frozen=True)
class TrainerOption:
    """An option of verl-agent's trainer that its own estimator reads and gaca's hooks would not."""

    key: str
    """Its dotted key in verl-agent's config (``verl/trainer/config/ppo_trainer.yaml``)."""
    default: Any
    """Its value there (verl-agent 796ed31)."""
    applies: Callable[[EstimatorSpec], bool]
    """Whether verl-agent's counterpart of the estimator (its GiGPO or its GRPO) reads it."""
    field: str | None = None
    """The ``algorithm.gaca`` option that means exactly the same; None: gaca has none."""
    values: Mapping[Any, Any] | None = None
    """verl-agent's value -> the field's value, where they are spelt differently; None: the same."""
    refused: str = ""
    """Without ``field``: why the option cannot be honoured when it differs from ``default``."""

    def to_gaca(self, value: Any) -> Any:
        if self.values is None:
            return value
        if value not in self.values:
            raise ValueError(f"{self.key}={value!r} is not one of verl-agent's values {sorted(self.values, key=str)}")
        return self.values[value]

    def from_gaca(self, value: Any) -> Any:
        """The verl-agent value meaning the field's ``value`` (``value`` itself where none does)."""
        if self.values is None:
            return value
        return next((key for key, mapped in self.values.items() if mapped == value), value)


def _gigpo_family(spec: EstimatorSpec) -> bool:
    return spec.needs_anchors  # verl-agent's GiGPO is the estimator with anchor-state groups


TRAINER_OPTIONS: tuple[TrainerOption, ...] = (
    TrainerOption("algorithm.gamma", 1.0, lambda spec: "gamma" in spec.reads, "gamma"),
    TrainerOption("algorithm.gigpo.step_advantage_w", 1.0, lambda spec: "step_weight" in spec.reads, "step_weight"),
    TrainerOption(
        "algorithm.gigpo.mode", "mean_norm", _gigpo_family, "norm", {"mean_std_norm": "mean_std", "mean_norm": "mean"}
    ),
    TrainerOption(
        "algorithm.norm_adv_by_std_in_grpo",
        True,
        lambda spec: not _gigpo_family(spec),
        "norm",
        {True: "mean_std", False: "mean"},
    ),
    TrainerOption(
        "algorithm.gigpo.enable_similarity",
        False,
        _gigpo_family,
        refused="gaca's anchor groups are exact matches of the anchor observation and no algorithm.gaca "
        "option groups similar ones: set it to false",
    ),
    TrainerOption(
        "algorithm.use_kl_in_reward",
        False,
        lambda spec: True,
        refused="gaca's estimators read the step rewards (non_tensor_batch['rewards']), not the "
        "KL-penalised token_level_rewards: set it to false and use the KL loss "
        "(actor_rollout_ref.actor.use_kl_loss, kl_loss_coef; trainer.kl_coef in a run config)",
    ),
)
"""Every option verl-agent's GiGPO and GRPO read (``compute_advantage`` in its ray_trainer.py)
besides the estimator's name; ``algorithm.gigpo.similarity_thresh`` counts only with
``enable_similarity``."""


def gigpo_options(config: AdvantageConfig) -> list[tuple[str, Any]]:
    """verl-agent's ``algorithm.gigpo.*`` values equal to ``config`` where its estimator has them
    (what verl-agent's own GiGPO would read; a job writes them so that both say the same)."""
    spec: EstimatorSpec = ESTIMATORS.spec(config.method)
    return [
        (option.key, option.from_gaca(getattr(config, option.field)))
        for option in TRAINER_OPTIONS
        if option.key.startswith("algorithm.gigpo.") and option.field and option.applies(spec)
    ]


PENALTY_SWITCH = "actor_rollout_ref.actor.use_invalid_action_penalty"
PENALTY_COEF = "actor_rollout_ref.actor.invalid_action_penalty_coef"
PENALTY_DEFAULTS = {PENALTY_SWITCH: True, PENALTY_COEF: 0.1}
"""verl-agent's invalid-action penalty (its actor section): its trainer subtracts it from the
token-level scores, which gaca's estimators do not read; ``algorithm.gaca.invalid_action_penalty``
must equal it."""


def plugin_options(algorithm: Any, estimator: str) -> tuple[AdvantageConfig, RewardOptions]:
    """The estimator and reward options of ``algorithm.adv_estimator=estimator``.

    Args:
        algorithm: verl's ``algorithm`` config (a DictConfig, a mapping or None); options are read
            from its ``gaca`` node, e.g. ``+algorithm.gaca.lambda0=0.25`` on the command line, and
            from ``TRAINER_OPTIONS`` where the ``gaca`` node does not set the field.
        estimator: a key of ``ESTIMATOR_METHODS``; it sets ``AdvantageConfig.method``.

    Raises:
        ValueError: for an unknown estimator name, an unknown key under ``algorithm.gaca`` (listing
            the allowed ones), a ``method`` that contradicts the estimator name, a bad value
            (naming ``algorithm.gaca.<field>``), a verl-agent option that contradicts its
            ``algorithm.gaca`` field or that gaca cannot honour (naming what to set instead).
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
    values = {**values, **_honoured(algorithm, estimator, values)}
    estimator_values = {key: value for key, value in values.items() if key in ESTIMATOR_OPTIONS}
    reward_values = {key: value for key, value in values.items() if key in REWARD_OPTIONS}
    try:
        config = AdvantageConfig(**{**estimator_values, "method": method})
    except ValueError as error:
        raise ValueError(str(error).replace("algorithm.", "algorithm.gaca.", 1)) from None
    return config, RewardOptions(**reward_values)


def _honoured(algorithm: Any, estimator: str, given: Mapping[str, Any]) -> dict[str, Any]:
    """The ``algorithm.gaca`` fields that ``TRAINER_OPTIONS`` set (those ``given`` lacks)."""
    spec: EstimatorSpec = ESTIMATORS.spec(ESTIMATOR_METHODS[estimator])
    honoured: dict[str, Any] = {}
    for option in TRAINER_OPTIONS:
        value = select(algorithm, option.key.removeprefix("algorithm."))
        if value is None or not option.applies(spec):
            continue
        if option.field is None:
            if value != option.default:
                raise ValueError(f"{option.key}={_text(value)} would be ignored by {estimator!r}: {option.refused}")
            continue
        mapped = option.to_gaca(value)
        field = f"algorithm.gaca.{option.field}"
        if option.field in given and given[option.field] != mapped:
            raise ValueError(
                f"{option.key}={_text(value)} contradicts {field}={_text(given[option.field])}, which {estimator!r} "
                f"reads: set {field}={_text(mapped)} (algorithm.{option.field} in a run config) or "
                f"{option.key}={_text(option.from_gaca(given[option.field]))}"
            )
        if option.field in honoured and honoured[option.field] != mapped:
            raise ValueError(f"{option.key}={_text(value)} contradicts another option of {field}; set {field}")
        honoured[option.field] = mapped
    return honoured


def check_trainer_config(config: Any) -> None:
    """Refuse a composed verl-agent config (its whole tree) whose options gaca's hooks would ignore.

    Nothing for an ``algorithm.adv_estimator`` that is not gaca's. Besides ``plugin_options``, the
    actor's invalid-action penalty must equal ``algorithm.gaca.invalid_action_penalty``.

    Raises:
        ValueError: one line, naming the option and the ``algorithm.gaca.*`` key to use.
    """
    estimator = select(config, "algorithm.adv_estimator")
    if estimator not in ESTIMATOR_METHODS:
        return
    _, rewards = plugin_options(select(config, "algorithm"), estimator)
    switch, coefficient = (_or_default(config, key) for key in (PENALTY_SWITCH, PENALTY_COEF))
    trainer_penalty = coefficient if switch else 0.0
    if trainer_penalty != rewards.invalid_action_penalty:
        raise ValueError(
            f"{PENALTY_SWITCH}={_text(switch)} {PENALTY_COEF}={_text(coefficient)} (verl-agent's invalid-action "
            f"penalty {trainer_penalty}) contradicts algorithm.gaca.invalid_action_penalty="
            f"{_text(rewards.invalid_action_penalty)}, which {estimator!r} applies: set "
            f"algorithm.gaca.invalid_action_penalty={_text(trainer_penalty)} (env.invalid_penalty in a run config)"
        )


CHECKED_KEYS = tuple(option.key for option in TRAINER_OPTIONS) + (PENALTY_SWITCH, PENALTY_COEF)


def check_overrides(overrides: list[str]) -> None:
    """``check_trainer_config`` on what ``overrides`` (a job's Hydra overrides, in order) make of
    verl-agent's defaults for the keys it checks; only those overrides are parsed.

    Raises:
        ValueError: as ``check_trainer_config``, or for an override of those keys Hydra cannot parse.
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser

    prefixes = ("algorithm.adv_estimator", "algorithm.gaca", *CHECKED_KEYS)
    relevant = [text for text in overrides if _override_key(text).startswith(prefixes)]
    try:
        parsed = OverridesParser.create().parse_overrides(relevant)
    except Exception as error:  # Hydra's grammar errors carry no common base class
        raise ValueError(f"cannot parse the overrides {relevant}: {error}") from None
    tree: dict[str, Any] = {}
    for key in CHECKED_KEYS:
        default = next((o.default for o in TRAINER_OPTIONS if o.key == key), PENALTY_DEFAULTS.get(key))
        _put(tree, key, default)
    for override in parsed:
        if override.is_delete():
            _put(tree, override.key_or_group, None)
        else:
            _put(tree, override.key_or_group, override.value())
    check_trainer_config(tree)


def compose_trainer_config(root: Any, overrides: list[str]) -> Any:
    """verl-agent's ``verl/trainer/config/ppo_trainer.yaml`` under checkout ``root`` composed with
    ``overrides`` through Hydra's compose API, as its ``main_ppo`` composes it; None without that file."""
    from pathlib import Path

    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    folder = Path(root) / "verl" / "trainer" / "config"
    if not (folder / "ppo_trainer.yaml").is_file():
        return None
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(str(folder.resolve()), version_base=None):
            return compose("ppo_trainer", overrides=list(overrides))
    finally:
        GlobalHydra.instance().clear()


def command_line_problem(root: Any, overrides: list[str]) -> str | None:
    """What ``check_trainer_config`` refuses in verl-agent's config at checkout ``root`` composed with
    the trainer's command line ``overrides``, in one line; None when nothing, without the config file,
    or for a command line with Hydra's own flags (``--config-name``, ``-m``: it is not composed here)."""
    if any(argument.startswith("-") for argument in overrides):
        return None
    try:
        config = compose_trainer_config(root, overrides)
        if config is not None:
            check_trainer_config(config)
    except Exception as error:  # a refused option, or an override Hydra cannot compose
        return " ".join(str(error).split())
    return None


def select(node: Any, dotted: str) -> Any:
    """``node.a.b`` for ``dotted='a.b'`` in a DictConfig, a mapping or an object; None where absent."""
    for part in dotted.split("."):
        if node is None:
            return None
        if isinstance(node, Mapping) or OmegaConf.is_dict(node):
            node = node.get(part)
        else:
            node = getattr(node, part, None)
    if OmegaConf.is_config(node):
        return OmegaConf.to_container(node, resolve=True)
    return node


def _or_default(config: Any, key: str) -> Any:
    value = select(config, key)
    return PENALTY_DEFAULTS[key] if value is None else value


def _override_key(text: str) -> str:
    return text.split("=", 1)[0].lstrip("+~")


def _put(tree: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    for part in parents:
        tree = tree.setdefault(part, {})
    tree[last] = value


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _gaca_node(algorithm: Any) -> dict[str, Any]:
    node = None if algorithm is None else select(algorithm, "gaca")
    if node is None:
        return {}
    if not isinstance(node, Mapping):
        raise ValueError(f"algorithm.gaca must be a mapping of options, got {node!r}")
    return dict(node.items())
