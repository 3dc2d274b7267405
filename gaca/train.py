"""`gaca train [overrides]`: compose conf/train.yaml with Hydra (``gaca.compose``), validate, train."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from gaca.backends import BACKENDS
from gaca.compose import CONF_DIR, ConfigError, compose, validate


def check_places(run) -> None:
    """What a run writes to must be usable before it starts: its output folder (ConfigError) and its
    MLflow store (``StoreUnavailable``: a server that does not answer, a read-only SQLite folder)."""
    from gaca.tracking.store import check_store, configured_tracking_uri, unwritable

    problem = unwritable(Path(run.output_dir))
    if problem:
        raise ConfigError(
            f"output_dir={run.output_dir} cannot be written ({problem}); set output_dir=<a writable folder>"
        )
    check_store(configured_tracking_uri(run.tracking.uri))


def train_task(cfg: DictConfig) -> float | None:
    """The Hydra task function of ``gaca train``: validate, then ``train_validated``."""
    return train_validated(*validate(cfg))


def train_validated(run, resolved: dict[str, Any]) -> float | None:
    """Train a validated run on its backend and say how it went; returns the final eval success."""
    from gaca.tracking.secrets import redact_uri
    from gaca.tracking.store import resolve_tracking_uri

    check_places(run)
    result = BACKENDS.get(run.backend.name)(run, resolved)
    uri = resolve_tracking_uri(run.tracking.uri)
    if result.skipped:
        print(
            f"gaca train: run {result.run_key} was already finished (MLflow run {result.run_id} in {redact_uri(uri)})"
        )
    else:
        curve = ", ".join(f"{i}: {s:.2f}" for i, s in result.curve or [])
        print(f"gaca train: run {result.run_key} finished; eval success by iteration {{{curve}}}")
        print(
            f"  MLflow run {result.run_id} in experiment {run.tracking.experiment!r} at {redact_uri(uri)} (browse: "
            "gaca mlflow)"
        )
    return result.final_eval_success


HYDRA_SETTINGS = {
    # Hydra's own logging setup writes <job>.log into the working folder (and fails in a read-only
    # one); gaca prints what it has to say, and third-party loggers keep Python's defaults.
    "hydra/job_logging": "none",
    "hydra.help.app_name": "'gaca train'",
    "hydra.help.header": (
        "'gaca train: train one run. Overrides in Hydra syntax: gaca train algorithm=gigpo env=shop seed=1'"
    ),
    "hydra.help.footer": (
        "'Config groups and keys are in conf/ (README: Commands). Hydra options: gaca train --hydra-help'"
    ),
}
"""Overrides ``gaca train`` gives Hydra unless the command line sets the key itself."""
HYDRA_FLAGS = (
    "-h",
    "--help",
    "--hydra-help",
    "--info",
    "-c",
    "--cfg",
    "-p",
    "--package",
    "--resolve",
    "-m",
    "--multirun",
    "--shell-completion",
    "-sc",
    "--config-path",
    "-cp",
    "--config-name",
    "-cn",
    "--config-dir",
    "-cd",
    "--run",
    "-r",
)


def explain_override_error(error: Exception, overrides: list[str]) -> str:
    """Hydra's composition error as one line; for a key that does not exist, the closest known key."""
    import difflib
    import itertools
    import re

    text = f"{error}\n{error.__cause__ or ''}"
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    match = re.search(r"Could not override '([^']+)'", text) or re.search(r"full_key: (\S+)", text)
    if match is None or "not in struct" not in text:
        at = next((i for i, line in enumerate(lines) if line.startswith("Available options")), None)
        listed = itertools.takewhile(lambda line: not line.endswith(":"), lines[at + 1 :]) if at is not None else []
        options = [f"{lines[at]} {', '.join(listed)}"] if at is not None else []
        return "; ".join(lines[:1] + options) if lines else type(error).__name__
    key = match[1]
    known = known_keys([o for o in overrides if o.split("=", 1)[0].lstrip("+~") != key])
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]}?" if close else "see `gaca train --cfg job` for every key"
    return f"unknown key {key}: {hint} (a new key needs a leading +, e.g. +{key}=...)"


def known_keys(overrides: list[str]) -> list[str]:
    """Every dotted key of the config composed with ``overrides`` (group choices pick which keys exist)."""
    from gaca.contract import flatten

    def keys(cfg: Any) -> list[str]:
        tree: dict[str, Any] = OmegaConf.to_container(cfg, resolve=False)  # type: ignore[assignment]  # a dict node
        return list(flatten(tree))

    try:
        return keys(compose(overrides))
    except Exception:
        return keys(compose([]))


def check_overrides(argv: list[str]) -> str | None:
    """Why the overrides of a plain ``gaca train`` do not compose (one line), or None. Hydra would
    print a multi-line error with the offending value in it and no suggestion."""
    if any(arg.split("=", 1)[0] in HYDRA_FLAGS for arg in argv):
        return None
    overrides = [arg for arg in argv if not arg.lstrip("+~").startswith("hydra")]
    try:
        compose(overrides)
    except Exception as error:  # Hydra's composition and parse errors have no common base
        return explain_override_error(error, overrides)
    finally:
        from hydra.core.global_hydra import GlobalHydra

        GlobalHydra.instance().clear()
    return None


def main(argv: list[str]) -> int:
    import os

    import hydra

    from gaca.tracking.secrets import redact_text
    from gaca.tracking.store import StoreUnavailable

    debug = os.environ.get("GACA_DEBUG") == "1"
    problem = check_overrides(argv)
    if problem:
        print(f"gaca train: invalid override: {redact_text(str(problem))}", file=sys.stderr)
        return 2

    @hydra.main(config_path=str(CONF_DIR), config_name="train", version_base=None)
    def app(cfg: DictConfig) -> float | None:
        try:
            return train_task(cfg)
        except ConfigError as error:
            print(f"gaca train: invalid config: {redact_text(str(error))}", file=sys.stderr)
            sys.exit(2)
        except StoreUnavailable as error:
            print(f"gaca train: {redact_text(str(error))}", file=sys.stderr)
            sys.exit(1)
        except Exception as error:
            if debug:
                raise
            print(
                f"gaca train: {type(error).__name__}: {redact_text(str(error))} (gaca --debug train ... shows the "
                "traceback)",
                file=sys.stderr,
            )
            sys.exit(1)

    given = {arg.split("=", 1)[0].lstrip("+~") for arg in argv}
    settings = [f"{key}={value}" for key, value in HYDRA_SETTINGS.items() if key not in given]
    sys.argv = ["gaca train", *settings, *argv]
    app()
    return 0
