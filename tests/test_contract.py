"""The tracking contract: importable without torch, and the one rule of identity for runs and cells."""

import subprocess
import sys

from analysis.runs.blocks import DEFAULT_CONFIG, canonical_config, setting
from gaca import contract
from gaca.compose import compose, resolve
from gaca.tracking.identity import run_key


def test_the_contract_identity_and_the_analysis_grid_import_without_torch():
    code = "import sys, gaca.contract, gaca.tracking.identity, analysis.runs.blocks; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_every_metric_and_tag_is_prefixed_and_explained():
    assert all(
        name.split("/")[0] in ("train", "loss", "eval", "final", "init", "diag", "perf") for name in contract.METRICS
    )
    assert all(meaning for meaning in contract.METRICS.values())
    assert all(name.startswith("gaca.") and meaning for name, meaning in contract.TAGS.items())
    assert set(contract.DIAGNOSTIC_METRICS + contract.SIGNAL_METRICS + contract.EVAL_METRICS) <= set(contract.METRICS)


def flat(config):
    return {key: contract.parse_param(value) for key, value in contract.flatten(config).items()}


def test_a_run_and_its_table_cell_follow_one_canonical_config():
    default = resolve(compose([]))
    other = resolve(compose(["trainer.lr=0.5", "trainer.group_size=2"]))
    uniform = resolve(compose(["algorithm.detector=uniform"]))
    spelled = resolve(compose(["algorithm.alpha_lambda=0", "algorithm.beta_lambda=0", "algorithm.alpha_c=0.7"]))
    assert run_key(default) != run_key(other)
    assert canonical_config(flat(default)) == canonical_config(flat(other))  # the same estimator ...
    assert setting(flat(default)) != setting(flat(other))  # ... in another setting: never the default cell
    assert run_key(uniform) == run_key(spelled)
    assert canonical_config(flat(uniform)) == canonical_config(flat(spelled))
    assert canonical_config(flat(default)) == canonical_config(DEFAULT_CONFIG)


def test_an_env_knob_added_later_keeps_earlier_runs_keys_at_its_old_value():
    default = resolve(compose([]))
    assert run_key(resolve(compose(["env.knobs.indirect=0"]))) == run_key(default)
    assert run_key(resolve(compose(["env.knobs.indirect=1"]))) != run_key(default)


def test_params_are_written_flat_and_read_back():
    config = {"algorithm": {"lambda0": 0.5, "detector": "entropy"}, "trainer": {"threads": None, "bc": {"steps": 250}}}
    params = contract.flatten(config)
    assert params == {
        "algorithm.lambda0": "0.5",
        "algorithm.detector": "entropy",
        "trainer.threads": "None",
        "trainer.bc.steps": "250",
    }
    assert contract.unflatten({key: contract.parse_param(value) for key, value in params.items()}) == config
    assert contract.parse_param("3") == 3 and isinstance(contract.parse_param("3"), int)
    assert contract.parse_param("True") is True and contract.parse_param("1e-06") == 1e-06
