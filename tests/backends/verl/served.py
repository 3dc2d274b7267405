"""Run configs of ``backend=verl_cpu`` with gaca's environments served to verl-agent (the served-environment tests)."""

from __future__ import annotations

from pathlib import Path

from hydra import compose, initialize_config_dir

from gaca.backends.config import RunConfig
from gaca.train import CONF_DIR, validate


def served_run(tmp_path: Path, *overrides: str, python: str | None = None) -> RunConfig:
    """The validated run of ``backend=verl_cpu`` writing under ``tmp_path``, its trainer's Python
    ``python`` (None: ``tmp_path/python``, which need not exist), then ``overrides``."""
    with initialize_config_dir(str(CONF_DIR), version_base=None):
        cfg = compose(
            "train",
            overrides=[
                "backend=verl_cpu",
                f"output_dir={tmp_path / 'runs'}",
                f"backend.python={python or tmp_path / 'python'}",
                *overrides,
            ],
        )
    run, _ = validate(cfg)
    return run
