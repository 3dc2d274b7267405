"""`gaca sweep` and `gaca status` without launching: validation first, dry runs, states from MLflow."""

from __future__ import annotations

import fcntl
import re
from pathlib import Path

from mlflow.tracking import MlflowClient

from gaca.backends.config import TrainerConfig
from gaca.compose.blocks import expand, load_block, load_blocks
from gaca.compose.session import HydraSession
from gaca.orchestration import execute, status, sweep
from gaca.orchestration.job import LOCK_FILE
from gaca.orchestration.plan import plan_runs

from .conftest import TINY

DETECTOR = str(Path(__file__).parent / "blocks" / "detector.yaml")
"""The detector block as these tests were written for it: a row added to ``sweeps/detector.yaml`` leaves them true."""


def test_one_invalid_run_launches_nothing_and_writes_nothing(workspace: Path, capsys):
    code = sweep.main([DETECTOR, "seed=0", "algorithm.alpha_c=0.5,1.5"])

    assert code == 2
    err = capsys.readouterr().err
    rows = len(expand(load_block(DETECTOR), ["seed=0"]))  # every row at alpha_c 1.5
    assert f"{rows} invalid run(s); nothing was launched" in err
    assert "algorithm.alpha_c=1.5" in err and "alpha_c must be in [0, 1]" in err
    assert not (workspace / "mlflow.db").exists() and not (workspace / "multirun").exists()


def test_an_unknown_key_or_launcher_is_refused_before_anything_runs(workspace: Path, capsys):
    assert sweep.main([DETECTOR, "trainer.iteratons=3"]) == 2
    assert "trainer.iteratons" in capsys.readouterr().err
    assert sweep.main([DETECTOR, "launcher=kubernetes"]) == 2
    assert "unknown launcher 'kubernetes'; known: local, slurm" in capsys.readouterr().err
    assert not (workspace / "mlflow.db").exists()


def test_dry_run_lists_the_runs_and_the_cpu_minutes(workspace: Path, capsys):
    assert sweep.main([DETECTOR, "--dry-run"]) == 0

    out = capsys.readouterr().out
    runs = len(expand(load_block(DETECTOR), []))
    assert out.count("to run") == runs + 1 and "algorithm.detector=random" in out
    per_run = TrainerConfig().estimated_cpu_minutes  # the default preset's (the YAML equals the dataclass)
    assert f"to launch: {runs} runs, about {runs * per_run:.1f} CPU minutes ({per_run:.2f} per run)" in out
    jobs = re.search(r"of wall time at (\d+) jobs at once", out)  # the local launcher: one job per core
    assert jobs, out
    waves = -(-runs // int(jobs[1]))  # equal runs in waves of at most that many: a last partial wave counts whole
    assert f"about {waves * per_run:.0f} min of wall time at {jobs[1]} jobs at once" in out
    assert "dry run: nothing launched" in out
    assert not (workspace / "mlflow.db").exists() and not (workspace / "multirun").exists()


def test_dry_run_of_the_paper_preset_counts_gpu_hours(workspace: Path, capsys):
    paths = "model.path=/models/Qwen2.5-1.5B-Instruct,/models/Qwen2.5-7B-Instruct"
    assert sweep.main(["main", "--dry-run", "trainer=paper", "model=path", paths, "launcher=slurm"]) == 0

    out = capsys.readouterr().out
    runs = len(expand(load_block("main"), ["trainer=paper", "model=path", paths]))
    assert f"to launch: {runs} runs, about {runs * 24.0:.1f} GPU hours (24.00 per run)" in out
    assert "model.path=/models/Qwen2.5-7B-Instruct" in out


def test_dry_run_and_status_read_each_runs_state_from_mlflow(workspace: Path, capsys):
    """Finished runs are skipped; failed and interrupted ones resume; one a live job holds is left alone."""
    blocks = load_blocks(DETECTOR)
    session = HydraSession("local", [], [blocks[0].search_path], workspace, job_name="test")
    runs = plan_runs(blocks, ["seed=0", *TINY], session.compose)
    uri = f"sqlite:///{workspace / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = client.create_experiment("gaca")
    for run, final_status in zip(runs, ["FINISHED", "FAILED", "RUNNING"]):
        record = client.create_run(experiment, tags={"gaca.run_key": run.key, "gaca.block": "detector"})
        if final_status != "RUNNING":
            client.set_terminated(record.info.run_id, final_status)

    assert sweep.main([DETECTOR, "seed=0", *TINY, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert [state_column(line) for line in out.splitlines() if line[:1].isdigit()] == [
        "skip (done)",
        "failed before",
        "interrupted",
    ], out
    assert "to launch: 2 runs" in out

    lock = runs[2].checkpoint_dir / LOCK_FILE
    lock.parent.mkdir(parents=True)
    with open(lock, "a") as held:  # a live job trains the third run
        fcntl.flock(held, fcntl.LOCK_EX)
        assert status.main([DETECTOR, "seed=0", *TINY]) == 0
    out = capsys.readouterr().out
    assert block_counts(out)["detector"] == {
        "runs": "3",
        "done": "1",
        "running": "1",
        "interrupted": "0",
        "failed": "1",
        "missing": "0",
        "queued": "0",
    }, out

    # Another sweep claimed the failed run (it will relaunch it): queued, not failed.
    from gaca.orchestration.run_claims import Claims

    claims = Claims()
    assert claims.take(runs[1]) is None
    assert status.main([DETECTOR, "seed=0", *TINY]) == 0
    counts = block_counts(capsys.readouterr().out)["detector"]
    assert (counts["failed"], counts["queued"]) == ("0", "1"), counts


def state_column(line: str) -> str:
    """The state cell of a `gaca sweep` table row (#, block, run key, state, run)."""
    return re.split(r"\s{2,}", line.strip())[3]


def block_counts(out: str) -> dict[str, dict[str, str]]:
    """`gaca status`'s block table as {block: {column: cell}}."""
    lines = out.splitlines()
    header_at = next(i for i, line in enumerate(lines) if line.startswith("block "))
    header = lines[header_at].split()[:8]
    counts = {}
    for line in lines[header_at + 2 :]:
        if not line.strip():
            break
        cells = line.split()
        counts[cells[0]] = dict(zip(header[1:], cells[1:8]))
    return counts


def test_jobs_start_round_robin_over_their_starting_policies(workspace: Path):
    """The detector block's plan is seed-major; launched that way, its first two jobs would share seed 0's
    behaviour clone and one would idle on the cache lock while the other builds it."""
    blocks = load_blocks(DETECTOR)
    session = HydraSession("local", [], [blocks[0].search_path], workspace, job_name="test")
    runs = plan_runs(blocks, [], session.compose)
    assert [(run.config.seed, run.config.algorithm.detector) for run in runs[:2]] == [(0, "entropy"), (0, "uniform")]

    order = [(run.config.seed, run.config.algorithm.detector) for run in execute.launch_order(runs)]

    assert order == [(seed, detector) for detector in ("entropy", "uniform", "random") for seed in (0, 1, 2)]
    scratch = plan_runs(blocks, ["trainer.init=scratch", "seed=0"], session.compose)
    assert execute.launch_order(scratch) == scratch  # one starting policy: plan order


def test_a_longer_budget_extends_the_finished_runs_and_the_plan_says_so(workspace: Path, capsys):
    entropy = [DETECTOR, "seed=0", "algorithm.detector=entropy", *TINY]
    assert sweep.main([*entropy, "trainer.iterations=3"]) == 0
    capsys.readouterr()
    assert sweep.main([*entropy, "--dry-run"]) == 0  # TINY: 6 iterations
    out = capsys.readouterr().out
    assert "to run (from 3)" in out
    assert "to launch: 1 runs, about 0.5 CPU minutes (0.50 per run)" in out  # quick: 1.0 a run, half of it left
    assert sweep.main([*entropy, "extend=false", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "(from 3)" not in out and "about 1.0 CPU minutes" in out
    assert sweep.main(entropy) == 0
    client = MlflowClient(f"sqlite:///{workspace / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("gaca").experiment_id])
    by_iterations = {r.data.params["trainer.iterations"]: r for r in runs}
    assert set(by_iterations) == {"3", "6"} and all(r.info.status == "FINISHED" for r in runs)
    assert by_iterations["6"].data.tags["gaca.extended_from"] == f"{by_iterations['3'].info.run_id}@3"
    steps = [m.step for m in client.get_metric_history(by_iterations["6"].info.run_id, "train/success_rate")]
    assert steps == [1, 2, 3, 4, 5, 6]
