"""`gaca sweep main backend=verl ... --dry-run` through the real CLI: every job's exact command and
environment, the GPU hours, and nothing created."""

from __future__ import annotations

import re
import shlex
from collections import Counter
from pathlib import Path

import pytest

from gaca.backends.verl.launcher.job import RUN_ID_PENDING, build_job
from gaca.compose.blocks import expand, load_block
from gaca.tracking.identity import run_key

from .conftest import compose_run, gaca

pytestmark = pytest.mark.slow

MODELS = ("/models/Qwen2.5-1.5B-Instruct", "/models/Qwen2.5-7B-Instruct")
PAPER_SWEEP = ["backend=verl", "trainer=paper", "model=path", f"model.path={','.join(MODELS)}"]


def printed_jobs(stdout: str) -> dict[int, tuple[str, str, str]]:
    """Job number -> (run label, run key, its shell command) from the dry run's output."""
    pattern = re.compile(r"^verl job #(\d+) \((.*), run key ([0-9a-f]{16})\):\n((?:.*\\\n)*.*)$", re.MULTILINE)
    return {int(m[1]): (m[2], m[3], m[4]) for m in pattern.finditer(stdout)}


def parse_shell(command: str) -> tuple[str, dict[str, str], list[str]]:
    """(folder, environment, argv) of ``cd DIR && VAR=value ... argv``."""
    words = shlex.split(command.replace("\\\n", " "))
    assert words[0] == "cd" and words[2] == "&&"
    folder, rest = words[1], words[3:]
    if rest[:2] == ["ulimit", "-u"]:  # WebShop's process limit
        assert rest[3] == "&&"
        rest = rest[4:]
    env = {}
    while re.match(r"^[A-Z_][A-Z0-9_]*=", rest[0]):
        name, value = rest.pop(0).split("=", 1)
        env[name] = value
    return folder, env, rest


@pytest.mark.timeout(300)
def test_the_dry_run_prints_every_jobs_exact_command_and_the_gpu_hours(tmp_path: Path, monkeypatch):
    result = gaca(
        "sweep", "main", *PAPER_SWEEP, "launcher=slurm", "hydra.launcher.gpus_per_node=4", "--dry-run", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    jobs = printed_jobs(out)
    runs = len(expand(load_block("main"), list(PAPER_SWEEP)))  # 3 methods x 2 families x 2 models x 3 seeds today
    assert sorted(jobs) == list(range(runs))
    assert f"to launch: {runs} runs, about {runs * 24.0:.1f} GPU hours (24.00 per run)" in out
    assert "dry run: nothing launched" in out and "warning" not in out
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no store, no run folders, no job folders
    # each family on its recipe from the one command: 18 ALFWorld and 18 WebShop jobs, 6 of each per method
    assert Counter(re.findall(r"actor_rollout_ref\.actor\.ppo_mini_batch_size=(\d+)", out)) == {"256": 18, "64": 18}
    assert Counter(re.findall(r"\+\+algorithm\.gigpo\.mode=(\w+)", out)) == {"mean_std_norm": 12, "mean_norm": 12}
    assert Counter(re.findall(r"algorithm\.norm_adv_by_std_in_grpo=(\w+)", out)) == {"true": 24, "false": 12}
    assert out.count("ulimit -u 65536 &&") == 18 and out.count("VLLM_ATTENTION_BACKEND=XFORMERS") == 36

    monkeypatch.chdir(tmp_path)  # where the driver resolved the store and the checkpoint folders
    common = re.search(r"^every run: (.*)$", out, re.MULTILINE)  # the block's settings shared by all its runs
    for number in (0, 17, 35):
        label, key, command = jobs[number]
        run, resolved = compose_run(
            *PAPER_SWEEP[:3],
            *label.split(),
            *(common[1].split() if common else ()),
            *(o for o in PAPER_SWEEP[3:] if "," not in o),
        )
        assert run_key(resolved) == key
        expected = build_job(run, key, f"sqlite:///{tmp_path / 'mlflow.db'}", None, launcher_gpus=4)
        folder, env, argv = parse_shell(command)
        assert (folder, env, argv) == (expected.cwd, dict(expected.env), expected.argv)
        assert (f"ulimit -u {expected.max_user_processes} &&" in command) == (expected.max_user_processes is not None)
        assert env["MLFLOW_RUN_ID"] == RUN_ID_PENDING and env["GACA_RUN_KEY"] == key
        assert argv[1:3] == ["-m", "gaca.backends.verl.agent.main"]  # verl-agent's main_ppo behind gaca's hooks
        assert "trainer.n_gpus_per_node=4" in argv and "trainer.total_training_steps=150" in argv


@pytest.mark.timeout(300)
def test_a_slurm_dry_run_without_gpus_warns(tmp_path: Path):
    result = gaca(
        "sweep",
        "main",
        *PAPER_SWEEP[:3],
        f"model.path={MODELS[0]}",
        "seed=0",
        "env=household",
        "algorithm=gaca",
        "launcher=slurm",
        "--dry-run",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(printed_jobs(result.stdout)) == 1
    assert "warning: hydra.launcher.gpus_per_node is not set" in result.stdout
    assert "trainer.n_gpus_per_node=1" in result.stdout


@pytest.mark.timeout(300)
def test_a_slurm_dry_run_of_cpu_jobs_does_not_ask_for_gpus(tmp_path: Path):
    result = gaca(
        "sweep", "detector", "backend=verl_cpu", "trainer=short", "seed=0", "launcher=slurm", "--dry-run", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(printed_jobs(result.stdout)) == 3
    assert "gpus_per_node is not set" not in result.stdout
