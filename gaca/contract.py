"""The tracking contract: what every run records in MLflow, and which configs are the same run.

The trainer, the verl job wrapper, sweeps, the analysis and the synthetic runs of the tests all
import their names from here. Importable without torch or MLflow.

- Store: ``MLFLOW_TRACKING_URI``, else ``sqlite:///mlflow.db`` in the working folder.
- Tags: ``TAGS``. Params: the whole resolved config, ``flatten``-ed to dotted keys (``algorithm.lambda0``);
  ``parse_param`` and ``unflatten`` read them back.
- Metrics (step = iteration; ``METRICS``): one ``log_batch`` per iteration, the evaluation's at
  step 0 (before training) and at each evaluation, ``final/eval_success_rate`` at the end.
- Artifacts: ``CONFIG_ARTIFACT``, ``outcomes_artifact(i)`` per evaluation, ``transcripts_artifact(i)``,
  and for a gated estimator ``CRITICALITY_HISTOGRAM`` over ``CRITICALITY_BINS``.
- Identity: ``canonical(config)``; a FINISHED run with the same key is skipped, an unfinished one
  resumed into the same MLflow run.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import numpy as np

# --- metrics ---------------------------------------------------------------------------------
TRAIN_SUCCESS_RATE = "train/success_rate"
TRAIN_RETURN_MEAN = "train/return_mean"
TRAIN_EPISODE_LENGTH = "train/episode_length"
TRAIN_INVALID_ACTION_RATE = "train/invalid_action_rate"
TRAIN_LR = "train/lr"
LOSS_POLICY = "loss/policy"
LOSS_KL = "loss/kl"
LOSS_CLIP_FRAC = "loss/clip_frac"
LOSS_ENTROPY = "loss/entropy"
LOSS_GRAD_NORM = "loss/grad_norm"
EVAL_SUCCESS_RATE = "eval/success_rate"
EVAL_RETURN_MEAN = "eval/return_mean"
EVAL_EPISODE_LENGTH = "eval/episode_length"
FINAL_EVAL_SUCCESS_RATE = "final/eval_success_rate"
INIT_PRIOR_ACCURACY = "init/prior_accuracy"
DIAG_CRITICALITY_STD = "diag/criticality_std"
DIAG_LAMBDA_MEAN = "diag/lambda_mean"
DIAG_LAMBDA_STD = "diag/lambda_std"
DIAG_CLAMP_FRAC = "diag/clamp_frac"
DIAG_NONSINGLETON_FRAC = "diag/nonsingleton_frac"
DIAG_ZERO_ADV_FRAC = "diag/zero_adv_frac"
DIAG_MIXED_GROUP_FRAC = "diag/mixed_group_frac"
DIAG_STEP_EPISODE_CORR = "diag/step_episode_corr"
DIAG_LENGTH_FRAC = "diag/length_frac"
DIAG_C_LENGTH_CORR = "diag/c_length_corr"
PERF_ITERATION_S = "perf/iteration_s"
PERF_ENV_S = "perf/env_s"
PERF_GENERATION_S = "perf/generation_s"
PERF_UPDATE_S = "perf/update_s"
PERF_ESTIMATOR_S = "perf/estimator_s"
PERF_ENV_STEPS_PER_S = "perf/env_steps_per_s"
PERF_TOKENS_PER_S = "perf/tokens_per_s"
PERF_TRAIN_TOKENS_PER_S = "perf/train_tokens_per_s"
PERF_LOGPROB_S = "perf/logprob_s"
PERF_RAY_S = "perf/ray_s"

METRICS: Mapping[str, str] = {
    TRAIN_SUCCESS_RATE: "share of the iteration's training episodes that succeeded",
    TRAIN_RETURN_MEAN: "mean undiscounted return of the training episodes",
    TRAIN_EPISODE_LENGTH: "mean length in steps of the training episodes",
    TRAIN_INVALID_ACTION_RATE: "share of the batch's steps whose action was invalid",
    TRAIN_LR: "the learning rate of the iteration's update",
    LOSS_POLICY: "clipped PPO surrogate loss (Eq. 1), mean over the update's minibatches",
    LOSS_KL: "low_var_kl to the frozen reference policy",
    LOSS_CLIP_FRAC: "share of tokens whose ratio was clipped",
    LOSS_ENTROPY: "mean token entropy of the policy",
    LOSS_GRAD_NORM: "gradient norm before clipping",
    EVAL_SUCCESS_RATE: "share of held-out episodes that succeeded (step 0: before training)",
    EVAL_RETURN_MEAN: "mean return of the held-out episodes",
    EVAL_EPISODE_LENGTH: "mean length of the held-out episodes",
    FINAL_EVAL_SUCCESS_RATE: "the evaluation success after the last iteration (step = iterations)",
    INIT_PRIOR_ACCURACY: (
        "the starting policy's mean probability of the right option at the family's prior choices of the "
        "held-out tasks, lowest over pivots (step 0; families with a prior stage only)"
    ),
    DIAG_CRITICALITY_STD: "std of c over the batch: the criticality spread (gated estimators)",
    DIAG_LAMBDA_MEAN: "mean of the gate lambda (gated estimators)",
    DIAG_LAMBDA_STD: "std of the gate lambda (gated estimators)",
    DIAG_CLAMP_FRAC: "share of steps with lambda at 0 or 1 (gated estimators)",
    DIAG_NONSINGLETON_FRAC: "share of steps in a non-singleton anchor group (step-level estimators)",
    DIAG_ZERO_ADV_FRAC: "share of step rows whose advantage is 0 (|A_t| < 1e-9): rows that teach nothing",
    DIAG_MIXED_GROUP_FRAC: "share of prompt groups whose rollouts neither all succeed nor all fail",
    DIAG_STEP_EPISODE_CORR: "corr(A^S, A^E) over the rows where either is non-zero (0 without spread)",
    DIAG_LENGTH_FRAC: "mean episode length over the horizon (1: every episode was cut)",
    DIAG_C_LENGTH_CORR: "corr(c, response length in tokens) over the batch (gated; 0 without spread)",
    PERF_ITERATION_S: "wall-clock seconds of the iteration",
    PERF_ENV_S: "seconds spent in the environments",
    PERF_GENERATION_S: "seconds spent generating actions",
    PERF_UPDATE_S: "seconds of the PPO update",
    PERF_ESTIMATOR_S: "seconds of the advantage estimator",
    PERF_ENV_STEPS_PER_S: "environment steps per second of environment time",
    PERF_TOKENS_PER_S: "generated tokens per second of generation time",
    PERF_TRAIN_TOKENS_PER_S: "tokens per second of update time",
    PERF_LOGPROB_S: "seconds recomputing the rollout's log-probabilities (old and reference policy) before the update",
    PERF_RAY_S: "seconds of the calls to remote workers beyond the workers' own time (transfers, scheduling)",
}
"""Every metric a run logs, with its meaning; analysis and users depend on these names."""
REMOTE_WORKER_METRICS = (PERF_LOGPROB_S, PERF_RAY_S)
"""Logged only by a trainer that recomputes log-probabilities in a pass of their own and calls remote workers
(verl-agent's, ``gaca.backends.verl.agent.timing``); the CPU backend computes them inside its update (``perf/update_s``)
and calls none."""

DIAGNOSTIC_METRICS = (DIAG_CRITICALITY_STD, DIAG_LAMBDA_MEAN, DIAG_LAMBDA_STD, DIAG_CLAMP_FRAC, DIAG_NONSINGLETON_FRAC)
"""The estimator's own diagnostics (``AdvantageOutput.diagnostics`` under ``diag/``; the paper's Table 7)."""
SIGNAL_METRICS = (
    DIAG_ZERO_ADV_FRAC,
    DIAG_MIXED_GROUP_FRAC,
    DIAG_STEP_EPISODE_CORR,
    DIAG_LENGTH_FRAC,
    DIAG_C_LENGTH_CORR,
)
"""Where a batch's learning signal is (``gaca.backends.cpu.signal``; docs/testbed.md)."""
EVAL_METRICS = (EVAL_SUCCESS_RATE, EVAL_RETURN_MEAN, EVAL_EPISODE_LENGTH)
"""Logged at step 0 and at every evaluation."""
PROGRESS_METRICS = (PERF_ITERATION_S, EVAL_SUCCESS_RATE)
"""Every logged step carries one of these (step 0: the evaluation only): a resumed run reads its last step from them."""


def diagnostic_metric(name: str) -> str:
    """``criticality_std`` (a key of ``AdvantageOutput.diagnostics``) -> ``diag/criticality_std``."""
    return f"diag/{name}"


# --- tags --------------------------------------------------------------------------------------
TAG_RUN_KEY = "gaca.run_key"
TAG_BLOCK = "gaca.block"
TAG_METHOD = "gaca.method"
TAG_ENV = "gaca.env"
TAG_SEED = "gaca.seed"
TAG_SCALE = "gaca.scale"
TAG_BACKEND = "gaca.backend"
TAG_GIT_COMMIT = "gaca.git_commit"
TAG_EXTENDED_FROM = "gaca.extended_from"
TAG_STUDY = "gaca.study"
TAG_TRIAL = "gaca.trial"
TAG_TRIAL_STATE = "gaca.trial_state"
TAG_SEQUENTIAL = "gaca.sequential"
"""Prefix: ``gaca.sequential.<block>`` holds the look schedule of that block's sequential design."""

TAGS: Mapping[str, str] = {
    TAG_RUN_KEY: "16 hex digits of SHA-256 over canonical(config) (gaca.tracking.identity.run_key)",
    TAG_BLOCK: "the sweep block that launched the run (adhoc for a single run)",
    TAG_METHOD: "algorithm.method",
    TAG_ENV: "env.name",
    TAG_SEED: "seed",
    TAG_SCALE: "the model preset, or the checkpoint's folder name for model=path",
    TAG_BACKEND: "backend.name: cpu or verl",
    TAG_GIT_COMMIT: "the commit of the checkout the run ran from",
    TAG_EXTENDED_FROM: "RUN_ID@M: the run began from iteration M's checkpoint of that finished shorter run of the "
    "same configuration, its curves up to M copied (gaca.backends.cpu.extension)",
    TAG_STUDY: "search trials only: the Optuna study",
    TAG_TRIAL: "search trials only: the trial number",
    TAG_TRIAL_STATE: "search trials only: the trial's state as told to Optuna",
    TAG_SEQUENTIAL: "prefix; gaca.sequential.BLOCK: the look schedule of `gaca sweep BLOCK --until-decided` "
    "(analysis.stats.sequential.Schedule.tag); also an experiment tag, the design the block was started with",
}
"""Every tag a run may carry, with its meaning."""

# --- artifacts ---------------------------------------------------------------------------------
CONFIG_ARTIFACT = "config.yaml"
CRITICALITY_HISTOGRAM = "diag/criticality_hist.csv"
CRITICALITY_BINS = np.append(np.linspace(0.0, 4.0, 41), np.inf)
"""Bins of ``CRITICALITY_HISTOGRAM``: 40 bins of 0.1 over [0, 4), then one overflow bin [4, inf)."""
OUTCOME_FILE_COLUMNS = ("iteration", "task_id", "episode", "success", "return", "length")
"""Columns of an ``outcomes_artifact``: one row per evaluation episode (k rows per task)."""


def outcomes_artifact(iteration: int) -> str:
    return f"eval/outcomes_{iteration:05d}.csv"


def transcripts_artifact(iteration: int) -> str:
    return f"transcripts/eval_{iteration:05d}.txt"


# --- params ------------------------------------------------------------------------------------
MAX_PARAM_LENGTH = 6000
"""MLflow's limit on a param value; longer values are cut."""


def flatten(config: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """Nested config -> the run's params, ``{"trainer.lr": "0.001", ...}`` (MLflow params are strings)."""
    flat: dict[str, str] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(flatten(value, f"{name}."))
        else:
            flat[name] = str(value)[:MAX_PARAM_LENGTH]
    return flat


def unflatten(params: Mapping[str, object]) -> dict[str, Any]:
    """Dotted params -> the nested config, ``{"trainer.lr": 0.001}`` -> ``{"trainer": {"lr": 0.001}}``."""
    nested: dict[str, Any] = {}
    for key, value in params.items():
        set_dotted(nested, key, value)
    return nested


def set_dotted(config: dict[str, Any], key: str, value: object) -> None:
    """Set ``config["trainer"]["lr"] = value`` for ``key = "trainer.lr"``, creating missing levels."""
    *parents, leaf = key.split(".")
    node = config
    for parent in parents:
        node = node.setdefault(parent, {})
    node[leaf] = value


def parse_param(text: str | None) -> object:
    """A param as logged (a string) -> the int, float, bool or None it was logged from; other text as is."""
    if text is None:
        return None
    stripped = text.strip()
    if stripped.lower() in ("none", "null", ""):
        return None
    if stripped.lower() in ("true", "false"):
        return stripped.lower() == "true"
    for cast in (int, float):
        try:
            return cast(stripped)
        except ValueError:
            pass
    return text


# --- seeds -------------------------------------------------------------------------------------
SEEDS = (0, 1, 2)
"""The seeds the paper averages and the sweeps run unless told otherwise (``gaca sweep BLOCK
seed=0,1,2,3,4`` runs more). The report never assumes this count: a cell's n follows the runs found."""

# --- identity ----------------------------------------------------------------------------------
NOT_IDENTITY = ("tracking", "output_dir", "resume", "extend", "block", "hydra", "launcher")
"""Where a run is logged, written or dispatched does not change what it computes."""
NOT_IDENTITY_TRAINER = ("estimated_cpu_minutes", "estimated_gpu_hours", "transcripts", "preset")
NOT_IDENTITY_MODEL = ("device",)
NOT_IDENTITY_ENV = ("cache_dir",)
"""Where generated ALFWorld games are cached; games_dir (which games) stays."""
NOT_IDENTITY_BACKEND = (
    "gpus_per_node",
    "nnodes",
    "tensor_parallel_size",
    "micro_batch_size_per_gpu",
    "log_prob_micro_batch_size_per_gpu",
    "data_dir",
    "verl_agent_dir",
    "trainer_command",
    "env_vars",
    "python",
    "device",
)
"""How a verl job is placed and started (GPUs, folders, the trainer command) does not change what it computes."""
KEYLESS_THREADS = 1
"""torch's thread count changes results in their last bits (docs/dependencies.md), so it is part of a run's identity;
one thread, every sweep job's default, drops out so that one-thread runs keep the keys they always had
(and so does every count of a verl run). ``gaca.compose.validate`` writes the count a run will
use in place of null (torch's default)."""
KEYLESS_TRAINER: dict[str, object] = {"update": "every_row", "last_layer": "every_position", "compile": False}
"""CPU trainer options added after runs existed, at the value that computes what those runs computed:
there they drop out of the canonical config, so those runs keep their keys; any other value changes
results (in their last bits at least) and is part of the key. A verl job computes with verl's own
update, so for it they drop out at every value."""
KEYLESS_KNOBS: dict[str, object] = {"indirect": 0}
"""Env knobs added after runs existed, at the value that generates the tasks those runs saw: there
they drop out of the canonical config's resolved knobs, so those runs keep their keys."""
DEFAULT_BACKEND = "cpu"
"""Drops out of the canonical config, so runs keep the keys they had before backends existed."""


def canonical(config: Mapping[str, Any]) -> dict[str, Any]:
    """What determines a run's result: ``config`` (nested, as composed) with identity-free keys
    dropped and equivalent settings spelled one way. Equal canonical configs are one run (one
    ``gaca.run_key``) and, seeds aside, one table cell.

    The estimator keeps only the fields its registry spec reads (``gaca.estimators.registry.reads``):
    GRPO's lambda0 does not change a GRPO run, and a gate that is lambda0 everywhere (the uniform
    detector, or the modulation off) is one configuration whatever its detector. Model sizes left
    to a preset are the preset's, and env knobs left null the difficulty's, so that spelling a
    default out keeps the key.
    """
    from gaca.estimators.registry import reads

    result = {key: copy.deepcopy(value) for key, value in config.items() if key not in NOT_IDENTITY}
    for key in NOT_IDENTITY_TRAINER:
        result.get("trainer", {}).pop(key, None)
    on_cpu = result.get("backend", {}).get("name", DEFAULT_BACKEND) == DEFAULT_BACKEND
    if "threads" in result.get("trainer", {}) and (not on_cpu or result["trainer"]["threads"] == KEYLESS_THREADS):
        result["trainer"].pop("threads")  # a verl job computes on GPUs: torch's CPU threads do not matter
    for key, keyless in KEYLESS_TRAINER.items():
        if key in result.get("trainer", {}) and (not on_cpu or result["trainer"][key] == keyless):
            result["trainer"].pop(key)
    for key in NOT_IDENTITY_MODEL:
        result.get("model", {}).pop(key, None)
    model = result.get("model")
    if isinstance(model, dict) and model.get("name") is not None:
        model.update(_preset_sizes(model))
    for key in NOT_IDENTITY_ENV:
        result.get("env", {}).pop(key, None)
    env = result.get("env")
    if isinstance(env, dict) and isinstance(env.get("knobs"), dict):
        env["knobs"] = resolved_knobs(env)
    if on_cpu:
        result.pop("backend", None)
    for key in NOT_IDENTITY_BACKEND:
        result.get("backend", {}).pop(key, None)
    algorithm = result.get("algorithm")
    if isinstance(algorithm, dict) and "method" in algorithm:
        result["algorithm"] = reads(algorithm)
    return result


def normalize(value: Any) -> Any:
    """Ints and floats that are equal compare and hash equally (0 and 0.0 from YAML); tuples are lists."""
    if isinstance(value, Mapping):
        return {k: normalize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [normalize(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _preset_sizes(model: Mapping[str, Any]) -> dict[str, Any]:
    """Sizes left to a model preset are the preset's: a preset that changes size changes the key."""
    from gaca.policy.config import MODEL_PRESETS, SIZE_FIELDS, ModelConfig

    if model["name"] not in MODEL_PRESETS:
        return {}
    sized = ModelConfig.from_dict(model)
    return {field: getattr(sized, field) for field in SIZE_FIELDS}


def resolved_knobs(env: Mapping[str, Any]) -> dict[str, Any]:
    """The env's knobs with null values replaced by its difficulty preset's (as given when unresolvable)."""
    from dataclasses import asdict

    import gaca.envs  # noqa: F401  (registers the families)
    from gaca.envs.families import FAMILIES

    knobs = {key: value for key, value in env["knobs"].items() if value is not None}
    try:
        resolved = asdict(FAMILIES.get(env["name"]).resolve_knobs(env["difficulty"], knobs))
    except (KeyError, ValueError, TypeError):
        return dict(env["knobs"])
    return {
        key: list(value) if isinstance(value, tuple) else value
        for key, value in resolved.items()
        if key not in KEYLESS_KNOBS or value != KEYLESS_KNOBS[key]
    }
