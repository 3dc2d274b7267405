"""The report reads real (tiny) training runs: Table 1's cells equal the runs' logged final success."""

import re

import pandas as pd
import pytest
from hydra import compose, initialize_config_dir
from mlflow.tracking import MlflowClient

from analysis.report import main as report_main
from gaca.backends.cpu.loop import train
from gaca.bench.testbed import CONSTRAINED
from gaca.compose import CONF_DIR, validate

pytestmark = pytest.mark.slow

# A briefly cloned policy on small pick-and-place rooms: seconds per run, and some episodes succeed.
TINY = [
    *CONSTRAINED,  # household draws a layout per task: the tiny policy decodes among its commands
    "env=household",
    "trainer=quick",
    "trainer.iterations=2",
    "trainer.tasks_per_iteration=2",
    "trainer.group_size=2",
    "trainer.eval_every=2",
    "trainer.num_eval_tasks=16",
    "trainer.eval_episodes_per_task=2",
    "trainer.bc.episodes=32",
    "trainer.bc.noise=0.0",
    "trainer.bc.steps=40",
    "env.horizon=15",
    "env.num_train_tasks=32",
    "env.knobs.task_types=[pick_and_place]",
    "env.knobs.num_receptacles=3",
    "env.knobs.closed_fraction=0.0",
    "model.max_prompt_tokens=40",
]


def test_table1_cells_equal_trained_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    finals = {}
    for method in ("grpo", "gigpo", "gaca"):
        with initialize_config_dir(str(CONF_DIR), version_base=None):
            run, resolved = validate(compose("train", overrides=[*TINY, f"algorithm={method}", "block=main"]))
        finals[method] = train(run, resolved, quiet=True).final_eval_success

    assert any(finals.values()), finals  # deterministic on CPU: the cells are not all zero
    out = tmp_path / "reports"
    assert report_main(["main", "--out", str(out), "--tracking-uri", uri, "--no-pdf"]) == 0
    table = (out / "tables" / "table1_main.tex").read_text()
    row = next(line for line in table.splitlines() if line.lower().startswith("household"))
    cells = re.findall(r"\$(?:\\mathbf\{)?([0-9.]+)", row)
    # One seed each: each cell is that run's final success in percent. The runs found set n, so no
    # cell is partial, and the gain is paired by seed and evaluation task (no mark).
    for method, value in zip(("grpo", "gigpo", "gaca"), cells):
        assert float(value) == pytest.approx(100 * finals[method], abs=0.01), (method, row)
    assert "n=" not in row
    assert f"& ${100 * (finals['gaca'] - finals['gigpo']):+.2f}$ &" in row
    client = MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name("gaca").experiment_id])
    assert len(runs) == 3
    # The outcome files have an episode column and two rows per task; the report averaged them.
    outcomes = pd.read_csv(client.download_artifacts(runs[0].info.run_id, "eval/outcomes_00002.csv", str(tmp_path)))
    assert "episode" in outcomes and outcomes.groupby("task_id").size().eq(2).all()
