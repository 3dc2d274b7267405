"""docs/extending.md, done exactly as written: its code blocks added to a copy of the repository, and
packed as a plugin next to this one. Either way the new estimator matches its loop reference (the
project's own equivalence test picks it up), trains a tiny run, and is a row of the detector block."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "extending.md"
NAME, LABEL = "gaca_clip", "GACA-clip"
BLOCK = re.compile(r"^```\w+ (file|append)=(\S+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
TINY = [  # a few seconds: no behaviour cloning, one task of two rollouts, a 4-step horizon
    "trainer=quick",
    "trainer.iterations=2",
    "trainer.tasks_per_iteration=1",
    "trainer.group_size=2",
    "trainer.init=scratch",
    "trainer.eval_every=2",
    "trainer.num_eval_tasks=2",
    "trainer.transcripts=0",
    "trainer.threads=1",
    "env.horizon=4",
]
CHECK = """
import json, sys
import gaca
from gaca.estimators import AdvantageConfig, compute_advantages
from gaca.compose.blocks import expand, load_block
from analysis.runs.blocks import get_block

runs = expand(load_block("detector"), [])
block = get_block("detector")
print(json.dumps({
    "gaca": gaca.__file__,
    "runs": [run for run in runs if "algorithm=%(name)s" in run],
    "rows": [[v.name, v.label, v.overrides.get("algorithm.method", "gaca")] for v in block.variants],
}))
"""


def doc_blocks() -> list[tuple[str, str, str]]:
    """(``file`` or ``append``, path, text) of every marked code block of docs/extending.md."""
    return BLOCK.findall(DOC.read_text())


def block(path: str) -> str:
    return next(text for _, where, text in doc_blocks() if where == path)


def environment(*paths: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "MLFLOW_RUN_ID")}
    env.update(PYTHONPATH=os.pathsep.join([*map(str, paths), *sys.path]), HF_HUB_OFFLINE="1")
    return env


def run(args: list[str], env: dict[str, str], cwd: Path) -> str:
    done = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def in_repository(tmp: Path) -> Path:
    """A copy of the repository with the doc's blocks written into it."""
    repo = tmp / "repo"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for part in ("gaca", "analysis", "conf", "sweeps", "tests/estimators"):
        shutil.copytree(ROOT / part, repo / part, ignore=ignore)
    for part in ("pyproject.toml", "tests/conftest.py"):
        shutil.copy(ROOT / part, repo / part)
    for how, path, text in doc_blocks():
        if path.startswith(("gaca/", "conf/", "sweeps/")):
            with (repo / path).open("a" if how == "append" else "w") as file:
                file.write(text)
    return repo


def as_plugin(tmp: Path) -> Path:
    """The doc's plugin package as pip installs it: its files, and its entry point's dist-info."""
    site = tmp / "site"
    package = site / "gaca_clip_estimator"
    (package / "conf" / "algorithm").mkdir(parents=True)
    (package / "__init__.py").write_text(block(f"gaca/estimators/methods/{NAME}.py"))
    (package / "conf" / "__init__.py").write_text("")
    (package / "conf" / "algorithm" / f"{NAME}.yaml").write_text(block(f"conf/algorithm/{NAME}.yaml"))
    (site / "hydra_plugins").mkdir()
    (site / "hydra_plugins" / "gaca_clip_searchpath.py").write_text(block("hydra_plugins/gaca_clip_searchpath.py"))
    pyproject = block("pyproject.toml")
    table = pyproject[pyproject.index('[project.entry-points."gaca.plugins"]') :].split("\n\n")[0]
    entry_points = ["[gaca.plugins]", *(line.replace('"', "") for line in table.splitlines()[1:])]
    info = site / "gaca_clip-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: gaca-clip\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("\n".join(entry_points) + "\n")
    return site


@pytest.fixture(scope="module", params=["in_repository", "as_plugin"])
def installed(request, tmp_path_factory):
    """(environment, working folder, folder of the equivalence test) with the doc's estimator added one way."""
    tmp = tmp_path_factory.mktemp(request.param)
    if request.param == "in_repository":
        repo = in_repository(tmp)
        return environment(repo), repo, repo
    return environment(as_plugin(tmp)), tmp, ROOT


def test_the_doc_estimator_matches_its_loop_reference(installed):
    env, cwd, tests = installed
    test = tests / "tests" / "estimators" / "test_equivalence.py"
    out = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test), "-k", NAME], env, tests)
    assert re.search(r"\b2 passed", out), out  # that it has a reference, and that it matches it


def test_the_doc_estimator_trains_a_tiny_run(installed):
    env, cwd, _ = installed
    uri = f"sqlite:///{cwd / 'mlflow.db'}"
    run([sys.executable, "-m", "gaca.cli", "train", f"algorithm={NAME}", *TINY, f"tracking.uri={uri}"], env, cwd)
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    (done,) = client.search_runs([client.get_experiment_by_name("gaca").experiment_id])
    assert done.info.status == "FINISHED" and done.data.params["algorithm.method"] == NAME
    assert "diag/lambda_mean" in done.data.metrics  # gated: the gate's diagnostics are logged
    assert done.data.metrics["diag/lambda_mean"] <= 0.75


@pytest.mark.parametrize("installed", ["in_repository"], indirect=True)  # a plugin joins no block file
def test_the_doc_estimator_is_a_row_of_the_detector_block(installed):
    env, cwd, _ = installed
    found = json.loads(run([sys.executable, "-c", CHECK % {"name": NAME}], env, cwd))
    assert Path(found["gaca"]).is_relative_to(cwd)
    assert sorted(found["runs"]) == [[f"seed={seed}", f"algorithm={NAME}"] for seed in (0, 1, 2)]
    (row,) = [row for row in found["rows"] if row[2] == NAME]
    assert LABEL in row[1], row  # labelled from the estimator's spec, not as a second "entropy" row
    assert len({label for _, label, _ in found["rows"]}) == len(found["rows"]), found["rows"]


SETTING = {"env": "household", "scale": "tiny", "preset": "quick", "tasks": 16}
STORE_ROWS = {
    # (method, config overrides) -> final success of seeds 0, 1, 2: Table 1's methods, the detector
    # block's rows and three lambda0 weights, so that Tables 1, 2 and 7 all have cells
    ("grpo", ()): [0.5, 0.5625, 0.625],
    ("gigpo", ()): [0.6875, 0.75, 0.8125],
    ("gaca", ()): [0.875, 0.9375, 1.0],
    ("gaca", (("algorithm.detector", "uniform"),)): [0.8125, 0.875, 0.875],
    ("gaca", (("algorithm.detector", "random"),)): [0.6875, 0.75, 0.8125],
    ("gaca", (("algorithm.lambda0", 0.0), ("algorithm.alpha_lambda", 0.0), ("algorithm.beta_lambda", 0.0))): [
        0.625,
        0.6875,
        0.75,
    ],
}
"""Synthetic finals: what the tables show does not matter here, only that adding a row changes nothing else."""
FAST_BLOCK_TESTS = (
    "tests/test_architecture.py",
    "tests/orchestration/test_sweep_cli.py",
    "tests/orchestration/test_blocks.py",
    "tests/orchestration/test_plan.py",
    *(
        f"tests/analysis/test_{name}.py"
        for name in ("blocks", "claims", "compare", "figures", "report", "rows", "sequential", "tables")
    ),
)
"""The fast tests that read the block files (sweeps/*.yaml: they import the block modules, through
the blocks, the plan or the report's blocks) or the import graph; the other analysis tests build
their own cells and never see a block's rows."""


def synthetic_store(folder: Path) -> str:
    from mlflow.tracking import MlflowClient

    from analysis.benches.synthetic import SyntheticRun, log_runs

    uri = f"sqlite:///{folder / 'mlflow.db'}"
    runs = [
        SyntheticRun(method=method, seed=seed, overrides=dict(overrides), final_success=success, **SETTING)
        for (method, overrides), finals in STORE_ROWS.items()
        for seed, success in enumerate(finals)
    ]
    log_runs(MlflowClient(uri), "gaca", runs)
    return uri


def report_tables(env: dict[str, str], cwd: Path, uri: str, out: Path) -> dict[str, list[str]]:
    run([sys.executable, "-m", "gaca.cli", "report", "--no-pdf", "--tracking-uri", uri, "--out", str(out)], env, cwd)
    return {path.name: path.read_text().splitlines() for path in sorted((out / "tables").glob("*.tex"))}


@pytest.mark.slow
def test_a_row_added_to_the_detector_block_changes_nothing_else(tmp_path: Path):
    """docs/extending.md steps 1-3 in a copy of the repository: the block's dry run lists the new runs,
    the fast tests that read the block files stay green, and the report's tables equal the unchanged
    tree's except for the new row of Table 2."""
    repo = in_repository(tmp_path)
    for part in ("tests", "docs"):
        shutil.rmtree(repo / part, ignore_errors=True)
        shutil.copytree(ROOT / part, repo / part, ignore=shutil.ignore_patterns("__pycache__"))
    changed, unchanged = environment(repo), environment(ROOT)

    dry_run = [
        sys.executable,
        "-m",
        "gaca.cli",
        "sweep",
        "detector",
        "--dry-run",
        f"tracking.uri=sqlite:///{tmp_path}/x.db",
    ]
    dry, plain = run(dry_run, changed, repo), run(dry_run, unchanged, ROOT)
    assert dry.count("to run") == plain.count("to run") + 3 and f"algorithm={NAME}" in dry, dry

    tests = run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow", *FAST_BLOCK_TESTS],
        changed,
        repo,
    )
    assert re.search(r"\d+ passed", tests) and "failed" not in tests, tests[-2000:]

    uri = synthetic_store(tmp_path)
    old = report_tables(unchanged, ROOT, uri, tmp_path / "old")
    new = report_tables(changed, repo, uri, tmp_path / "new")
    assert set(old) == set(new) and "table2_ablations.tex" in new
    for name in old:
        added = [line for line in new[name] if line not in old[name]]
        assert [line for line in old[name] if line not in new[name]] == [], name
        assert all(LABEL in line for line in added), (name, added)
        assert bool(added) == (name == "table2_ablations.tex"), (name, added)
