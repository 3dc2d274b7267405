"""Redaction of URIs' credentials and secret-looking variables, on hand-written cases."""

from __future__ import annotations

import pytest

from gaca.tracking.secrets import looks_secret, redact_config, redact_params, redact_text, redact_uri, split_userinfo
from gaca.tracking.store import resolve_tracking_uri


@pytest.mark.parametrize(
    ("uri", "shown"),
    [
        ("http://alice:s3cretPW@127.0.0.1:5055", "http://alice:***@127.0.0.1:5055"),
        ("https://tok3n@host/path", "https://***@host/path"),
        ("postgresql://user:p%40ss@db:5432/mlflow", "postgresql://user:***@db:5432/mlflow"),
        ("http://127.0.0.1:5000", "http://127.0.0.1:5000"),
        ("tracking.uri=http\\://alice\\:pw@h\\:1", "tracking.uri=http\\://alice\\:***@h\\:1"),  # as Hydra escapes it
        ("sqlite:////tmp/mlflow.db", "sqlite:////tmp/mlflow.db"),
    ],
)
def test_a_uris_password_is_masked_and_nothing_else_changes(uri, shown):
    assert redact_uri(uri) == shown


def test_text_masks_uris_and_secret_variables_in_every_form_they_are_printed():
    text = (
        "tracking.uri='http://alice:s3cretPW@h:1' +backend.env_vars.WANDB_API_KEY=k3y\n"
        "  HF_TOKEN=hf_abc \\\n"
        "  GACA_RUN_KEY=0123456789abcdef \\\n"
        "env_vars:\n  AWS_SECRET_ACCESS_KEY: 'x y'\n"
        "backend.env_vars must map names to strings, got {'MY_PASSWORD': 98765}"
    )
    shown = redact_text(text)
    for secret in ("s3cretPW", "k3y", "hf_abc", "x y", "98765"):
        assert secret not in shown
    assert "http://alice:***@h:1" in shown and "WANDB_API_KEY=***" in shown and "HF_TOKEN=***" in shown
    assert "GACA_RUN_KEY=0123456789abcdef" in shown  # a run key is no secret
    assert "AWS_SECRET_ACCESS_KEY: '***'" in shown and "{'MY_PASSWORD': ***}" in shown


def test_configs_and_params_mask_secret_keys_and_uris():
    config = {
        "tracking": {"uri": "http://alice:pw@h", "experiment": "gaca"},
        "backend": {"env_vars": {"wandb_api_key": "k", "NCCL_DEBUG": "WARN"}, "max_response_length": 512},
    }
    assert redact_config(config) == {
        "tracking": {"uri": "http://alice:***@h", "experiment": "gaca"},
        "backend": {"env_vars": {"wandb_api_key": "***", "NCCL_DEBUG": "WARN"}, "max_response_length": 512},
    }
    params = {"tracking.uri": "http://alice:pw@h", "backend.env_vars.HF_TOKEN": "t", "trainer.lr": "0.001"}
    assert redact_params(params) == {
        "tracking.uri": "http://alice:***@h",
        "backend.env_vars.HF_TOKEN": "***",
        "trainer.lr": "0.001",
    }
    assert not looks_secret("gaca.run_key") and not looks_secret("model.max_prompt_tokens")


def test_credentials_move_to_mlflows_variables_and_a_masked_uri_uses_them(monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_USERNAME", raising=False)
    monkeypatch.delenv("MLFLOW_TRACKING_PASSWORD", raising=False)
    assert split_userinfo("http://alice:pw@h:1/x") == ("http://h:1/x", "alice", "pw")
    assert resolve_tracking_uri("http://alice:p%40ss@h:1") == "http://h:1"
    import os

    assert (os.environ["MLFLOW_TRACKING_USERNAME"], os.environ["MLFLOW_TRACKING_PASSWORD"]) == ("alice", "p@ss")
    assert resolve_tracking_uri("http://alice:***@h:1") == "http://h:1"  # what a job receives
    assert os.environ["MLFLOW_TRACKING_PASSWORD"] == "p@ss"


def test_secret_env_vars_leave_a_job_s_overrides_for_the_environment():
    from omegaconf import OmegaConf

    from gaca.tracking.secrets import through_environment

    environ: dict[str, str] = {}
    overrides = [
        "+backend.env_vars.WANDB_API_KEY=k3y1",
        "seed=1",
        "+backend.env_vars.DATA_HOME=/data",
        "+backend.env_vars={HF_TOKEN: 'tok en', LANG: C}",
    ]
    first = through_environment(overrides, environ)
    second = through_environment(["+backend.env_vars.WANDB_API_KEY=other"], environ)
    text = " ".join(first + second)
    assert "k3y" not in text and "tok en" not in text and "other" not in text
    assert first[1:3] == overrides[1:3]  # nothing else changes
    assert environ == {
        "GACA_SECRET_WANDB_API_KEY": "k3y1",
        "GACA_SECRET_HF_TOKEN": "tok en",
        "GACA_SECRET_WANDB_API_KEY_2": "other",
    }
    # what a job composes from them resolves to the values again
    import os

    os.environ.update(environ)
    try:
        config = OmegaConf.create({"a": first[0].split("=", 1)[1], "b": second[0].split("=", 1)[1]})
        assert OmegaConf.to_container(config, resolve=True) == {"a": "k3y1", "b": "other"}
    finally:
        for name in environ:
            os.environ.pop(name)
