"""A run's identity: a stable hash of what determines its result, and nothing else."""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any, Mapping

from gaca.policy.config import MODEL_PRESETS, SIZE_FIELDS, ModelConfig

# Where a run is logged, written or dispatched does not change what it computes.
NOT_IDENTITY = ("tracking", "output_dir", "resume", "block", "hydra", "launcher")
NOT_IDENTITY_TRAINER = ("estimated_cpu_minutes", "estimated_gpu_hours", "transcripts", "preset")
KEYLESS_THREADS = 1
"""torch's thread count changes results in their last bits (FACTS.md), so it is part of a run's identity;
one thread, every sweep job's default, drops out so that one-thread runs keep the keys they always had
(and so does every count of a verl run).
``gaca.trainer.entry.validate`` writes the count a run will use in place of null (torch's default)."""
NOT_IDENTITY_MODEL = ("device",)
NOT_IDENTITY_ENV = ("cache_dir",)  # where generated ALFWorld games are cached; games_dir (which games) stays
# How a verl job is placed and started (GPUs, folders, the trainer command) does not change what it computes.
NOT_IDENTITY_BACKEND = (
    "gpus_per_node", "nnodes", "tensor_parallel_size", "micro_batch_size_per_gpu",
    "log_prob_micro_batch_size_per_gpu", "data_dir", "verl_agent_dir", "trainer_command", "env_vars",
)
DEFAULT_BACKEND = "cpu"


def canonical_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """The config with identity-free keys dropped and equivalent estimator settings made equal.

    When the criticality is constant (``detector=uniform``, or the modulation off) the gate is
    lambda0 everywhere, so the detector, alpha_c and the random seed do not matter: the uniform
    control, a lambda0-sweep entry and "modulation 0" are one configuration and run once. The
    gate parameters do not matter for grpo or gigpo either.
    """
    canonical = {k: copy.deepcopy(v) for k, v in config.items() if k not in NOT_IDENTITY}
    for key in NOT_IDENTITY_TRAINER:
        canonical.get("trainer", {}).pop(key, None)
    on_cpu = canonical.get("backend", {}).get("name", DEFAULT_BACKEND) == DEFAULT_BACKEND
    if "threads" in canonical.get("trainer", {}) and (not on_cpu or canonical["trainer"]["threads"] == KEYLESS_THREADS):
        canonical["trainer"].pop("threads")  # a verl job computes on GPUs: torch's CPU threads do not matter
    for key in NOT_IDENTITY_MODEL:
        canonical.get("model", {}).pop(key, None)
    model = canonical.get("model")
    if isinstance(model, dict) and model.get("name") in MODEL_PRESETS:
        # Sizes left to the preset are the preset's: a preset that changes size changes the key.
        sized = ModelConfig.from_dict(model)
        model.update({field: getattr(sized, field) for field in SIZE_FIELDS})
    for key in NOT_IDENTITY_ENV:
        canonical.get("env", {}).pop(key, None)
    env = canonical.get("env")
    if isinstance(env, dict) and isinstance(env.get("knobs"), dict):
        # Knobs left null are the difficulty preset's: spelling one out keeps the key.
        env["knobs"] = _resolved_knobs(env)
    # The default backend drops out entirely, so runs keep the keys they had before backends existed.
    if canonical.get("backend", {}).get("name", DEFAULT_BACKEND) == DEFAULT_BACKEND:
        canonical.pop("backend", None)
    for key in NOT_IDENTITY_BACKEND:
        canonical.get("backend", {}).pop(key, None)
    algorithm = canonical.get("algorithm")
    if isinstance(algorithm, dict):
        method = algorithm.get("method")
        gate = ("lambda0", "alpha_lambda", "beta_lambda", "alpha_c", "detector", "seed")
        if method == "grpo":
            for key in gate + ("gamma", "step_weight", "singleton_fallback"):
                algorithm.pop(key, None)
        elif method == "gigpo":
            for key in gate:
                algorithm.pop(key, None)
        elif algorithm.get("detector") == "uniform" or algorithm.get("alpha_lambda") == algorithm.get("beta_lambda") == 0:
            algorithm.update(detector="uniform", alpha_lambda=0.0, beta_lambda=0.0, alpha_c=1.0)
            algorithm.pop("seed", None)
        elif algorithm.get("detector") != "random":
            algorithm.pop("seed", None)
    return canonical


def _resolved_knobs(env: Mapping[str, Any]) -> dict[str, Any]:
    """The env's knobs with null values replaced by its difficulty preset's (as given when unresolvable)."""
    from dataclasses import asdict

    import gaca.envs  # noqa: F401  (registers the families)
    from gaca.envs.families import FAMILIES

    knobs = {key: value for key, value in env["knobs"].items() if value is not None}
    try:
        resolved = asdict(FAMILIES.get(env.get("name")).resolve_knobs(env.get("difficulty"), knobs))
    except (KeyError, ValueError, TypeError):
        return dict(env["knobs"])
    return {key: list(value) if isinstance(value, tuple) else value for key, value in resolved.items()}


def run_key(config: Mapping[str, Any]) -> str:
    """16 hex digits of SHA-256 over the canonical config as sorted JSON."""
    text = json.dumps(_normalize(canonical_config(config)), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _normalize(value: Any) -> Any:
    """Ints and floats that are equal hash equally (0 and 0.0 from YAML)."""
    if isinstance(value, dict):
        return {k: _normalize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_normalize(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value
