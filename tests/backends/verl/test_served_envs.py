"""gaca's families as verl-agent's environment manager, the CPU job's settings and the checks before a
verl job starts; none of it needs verl-agent (the end-to-end runs are in test_verl_agent_cpu.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from gaca.backends.cpu.loop import PURPOSE_TASKS, seed_for
from gaca.backends.verl.agent import cpu_patches
from gaca.backends.verl.agent.env_manager import RUN_CONFIG_VARIABLE, ServedEnvironments
from gaca.backends.verl.launcher.checkout import MARKERS, checkout_problem
from gaca.backends.verl.launcher.job import CPU_ADDED, CPU_SETTINGS, THREAD_VARIABLES, build_job, served_files
from gaca.backends.verl.launcher.policy_export import CHAT_TEMPLATE, export_starting_policy
from gaca.backends.verl.launcher.preflight import TrainerUnavailable, check_trainer
from gaca.backends.verl.launcher.task_files import TRAIN_FILE, VAL_FILE, write_task_files
from gaca.envs import make_family
from gaca.policy.model import Policy

from .served import served_run

pytestmark = pytest.mark.usefixtures("fresh_hydra")
REPO = Path(__file__).resolve().parents[3]
SMALL = [
    "trainer=quick",
    "trainer.init=scratch",
    "trainer.tasks_per_iteration=3",
    "trainer.group_size=2",
    "trainer.num_eval_tasks=2",
    "trainer.eval_episodes_per_task=2",
    "env.difficulty=easy",
]


@pytest.fixture
def exported(tmp_path: Path):
    run = served_run(tmp_path, *SMALL)
    return run, export_starting_policy(run, tmp_path / "policy")


def test_training_rollouts_play_the_cpu_backends_tasks_group_by_group(exported):
    run, folder = exported
    envs = ServedEnvironments(run, make_family(run.env), True, str(folder))
    envs.iteration = 3
    expected = np.random.default_rng(seed_for(run.seed, 3, PURPOSE_TASKS)).choice(
        make_family(run.env).train_task_ids, size=3, replace=False
    )
    observations, infos = envs.reset()
    assert [i["task_id"] for i in infos] == [int(t) for t in expected for _ in range(2)]
    assert len(observations["text"]) == len(observations["anchor"]) == 6
    assert observations["anchor"][0] == observations["anchor"][1]  # a group starts in one state


def test_steps_give_the_environment_reward_without_the_penalty_and_flag_invalid_actions(exported):
    run, folder = exported
    family = make_family(run.env)
    envs = ServedEnvironments(run, family, False, str(folder))
    observations, _ = envs.reset()
    assert len(envs) == 4  # 2 held-out tasks x 2 episodes
    first = envs.observations[0].admissible[0]
    # a word-level decoding (tokens joined by spaces) of an admissible command, and an inadmissible one
    actions = [" ".join(first.split()), "dance wildly", first, first]
    _, rewards, dones, infos = envs.step(actions)
    direct = family.make(envs.episodes[1].task_id)
    direct.reset()
    assert direct.step("dance wildly").reward == pytest.approx(-run.env.invalid_penalty)
    assert rewards[1] == pytest.approx(0.0) and infos[1]["is_action_valid"] is False
    assert infos[0]["is_action_valid"] is True and envs.episodes[0].history == [
        (observations["text"][0].split("your observation is : ")[1].split(" admissible actions")[0], first)
    ]
    assert envs.episodes[1].total_return == pytest.approx(-run.env.invalid_penalty)  # as the CPU backend counts it
    assert dones.dtype == bool and len(rewards) == 4
    outcomes = envs.outcomes_csv(5).splitlines()
    assert outcomes[0] == "iteration,task_id,episode,success,return,length"
    assert [line.split(",")[:3] for line in outcomes[1:]] == [
        ["5", "0", "0"],
        ["5", "0", "1"],
        ["5", "1", "0"],
        ["5", "1", "1"],
    ]


def test_the_exported_policy_is_the_cpu_backends_with_a_pass_through_chat_template(exported):
    run, folder = exported
    loaded = Policy.load(folder)
    assert loaded.tokenizer.chat_template == CHAT_TEMPLATE
    text = "you are an expert agent . your action :"
    rendered = loaded.tokenizer.apply_chat_template(
        [{"role": "user", "content": text}], tokenize=False, add_generation_prompt=True
    )
    assert rendered == text
    config = json.loads((folder / "config.json").read_text())
    assert config["torch_dtype"] == "float32" and "rope_theta" in config
    assert json.loads((folder / "tokenizer_config.json").read_text())["tokenizer_class"] == "PreTrainedTokenizerFast"


def test_the_export_clones_on_the_runs_threads(tmp_path: Path):
    # A sweep job's clone runs in the launching process: on trainer.threads (the job's cores), as the CPU
    # backend's run does, not on every core of the node.
    import torch

    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        export_starting_policy(served_run(tmp_path, *SMALL, "trainer.threads=1"), tmp_path / "policy")
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_a_cpu_job_runs_its_processes_on_the_runs_threads(tmp_path: Path):
    given = build_job(served_run(tmp_path, *SMALL, "trainer.threads=1"), "k", "sqlite:///m.db", "r")
    assert {name: given.env[name] for name in THREAD_VARIABLES} == {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    mine = build_job(
        served_run(tmp_path, *SMALL, "trainer.threads=1", "+backend.env_vars.OMP_NUM_THREADS='3'"),
        "k",
        "sqlite:///m.db",
        "r",
    )
    assert mine.env["OMP_NUM_THREADS"] == "3"  # backend.env_vars wins


def test_task_files_hold_one_batch_each(tmp_path: Path):
    import pandas as pd

    write_task_files(tmp_path, 3, 8)
    assert len(pd.read_parquet(tmp_path / TRAIN_FILE)) == 3 and len(pd.read_parquet(tmp_path / VAL_FILE)) == 8
    assert sorted(p.name for p in tmp_path.iterdir()) == [VAL_FILE, TRAIN_FILE]


def test_a_cpu_job_sets_the_cpu_values_the_patches_and_the_served_environment(tmp_path: Path):
    run = served_run(tmp_path, *SMALL)
    job = build_job(run, "k", "sqlite:///m.db", "r")
    given = dict(o.lstrip("+").split("=", 1) for o in job.overrides)
    for key, value in (*CPU_SETTINGS, *CPU_ADDED):
        assert given[key] == (str(value).lower() if isinstance(value, bool) else str(value)), key
    assert given["env.env_name"] == "gaca/errand" and given["data.truncation"] == "left"
    assert given["data.val_batch_size"] == "4" and given["data.max_prompt_length"] == str(run.model.max_prompt_tokens)
    assert given["actor_rollout_ref.model.path"] == str(served_files(run, "k").policy)
    assert job.command[0] == str(tmp_path / "python")
    assert job.env[cpu_patches.CPU_FLAG] == "1" and job.env["PYTHONPATH"].startswith(str(cpu_patches.SITE_DIR))
    assert job.env["CUDA_VISIBLE_DEVICES"] == "0"
    assert json.loads(job.env[RUN_CONFIG_VARIABLE])["env"]["name"] == "errand"
    gpu = build_job(run, "k", "sqlite:///m.db", "r", cpu=False)
    assert cpu_patches.CPU_FLAG not in gpu.env and not any(o.startswith("++ray_init") for o in gpu.overrides)


def test_the_patches_leave_a_machine_with_cuda_alone():
    class Cuda:
        @staticmethod
        def is_available():
            return True

    class FakeTorch:
        cuda = Cuda

    cpu_patches.patch_torch(FakeTorch)  # touches nothing: no distributed, no cpu namespace to patch
    assert not hasattr(FakeTorch, cpu_patches.PATCHED)


def test_a_missing_trainer_python_or_checkout_is_one_line_before_any_run(tmp_path: Path):
    run = served_run(tmp_path, *SMALL)
    job = build_job(run, "k", "sqlite:///m.db", None)
    with pytest.raises(TrainerUnavailable, match=r"^backend.python=.*python is not an executable on this machine"):
        check_trainer(run, job)
    run = served_run(tmp_path, *SMALL, f"backend.verl_agent_dir={tmp_path}")
    with pytest.raises(TrainerUnavailable, match=rf"backend.verl_agent_dir: {tmp_path} is not a verl-agent checkout"):
        check_trainer(run, build_job(run, "k", "sqlite:///m.db", None))


def test_setup_script_refuses_a_folder_that_is_not_verl_agent(tmp_path: Path):
    (tmp_path / "verl").mkdir()
    done = subprocess.run(
        ["bash", str(REPO / "scripts" / "setup-verl-agent.sh"), str(tmp_path), str(tmp_path / "venv")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert (
        done.stderr.strip() == f"setup-verl-agent: {tmp_path} is not a verl-agent checkout (no {MARKERS[0]}); "
        "give the folder of a clone of verl-agent"
    )
    assert not (tmp_path / "venv").exists()
    assert checkout_problem(tmp_path / "nothing") == f"{tmp_path / 'nothing'} is not a folder"


@pytest.mark.verl
@pytest.mark.parametrize("method", ["gaca", "gigpo", "grpo"])
def test_the_served_rows_give_the_cpu_backends_advantages_within_1e_6(exported, method: str):
    """One rollout through the served environments, laid out as verl-agent's rollout loop lays it out
    (time order per step, rewards without the penalty, is_action_valid), and the same episodes' rows as
    the CPU backend collects them (rewards with the penalty): the adapter's advantages equal
    compute_advantages' on the CPU rows."""
    pytest.importorskip("verl")
    import torch
    from omegaconf import OmegaConf
    from verl import DataProto

    from gaca.backends.verl.agent.advantage import token_level_advantages
    from gaca.backends.verl.agent.batch import add_step_index
    from gaca.estimators import compute_advantages, mean_token_nll
    from gaca.estimators.registry import verl_names

    run, folder = exported
    envs = ServedEnvironments(run, make_family(run.env), True, str(folder))
    envs.iteration = 1
    observations, _ = envs.reset()
    rng = np.random.default_rng(0)
    rows: dict[str, list] = {k: [] for k in ("uid", "traj_uid", "anchor_obs", "rewards", "is_action_valid")}
    cpu: dict[str, list] = {k: [] for k in ("group", "traj", "step", "reward", "anchor", "invalid")}
    for t in range(6):
        alive = list(envs.envs.alive)
        actions = [rng.choice([*o.admissible[:3], "dance"]) for o in envs.observations]
        anchors = observations["anchor"]
        observations, rewards, _, infos = envs.step(actions)
        for k in range(len(actions)):
            if not alive[k]:
                continue  # verl-agent's inactive rows are dropped before the advantage step
            rows["uid"].append(f"u{k // run.trainer.group_size}")
            rows["traj_uid"].append(f"t{k}")
            rows["anchor_obs"].append(anchors[k])
            rows["rewards"].append(float(rewards[k]))
            rows["is_action_valid"].append(bool(infos[k]["is_action_valid"]))
            invalid = not infos[k]["is_action_valid"]
            cpu["group"].append(k // run.trainer.group_size)
            cpu["traj"].append(k)
            cpu["step"].append(t)
            cpu["reward"].append(float(rewards[k]) - (run.env.invalid_penalty if invalid else 0.0))
            cpu["anchor"].append(anchors[k])
            cpu["invalid"].append(invalid)
    order = np.argsort(np.array(rows["traj_uid"]), kind="stable")  # rows per trajectory in time order
    size, width = len(order), 4
    logprobs = -torch.from_numpy(rng.gamma(1.0, 1.0, size=(size, width))).float()
    mask = torch.ones(size, width, dtype=torch.long)
    data = DataProto.from_dict(
        tensors={"old_log_probs": logprobs, "response_mask": mask},
        non_tensors={
            key: np.array([values[i] for i in order], dtype=bool if key == "is_action_valid" else object)
            for key, values in rows.items()
        },
    )
    add_step_index(data, global_step=1)
    name = verl_names()[method]
    options = {key: value for key, value in run.algorithm.to_dict().items() if key != "method"}
    algorithm = OmegaConf.create({"gaca": {**options, "invalid_action_penalty": run.env.invalid_penalty}})
    verl_advantages, _ = token_level_advantages(data, name, algorithm)
    config = run.algorithm.__class__.from_dict({**run.algorithm.to_dict(), "method": method})
    reference = compute_advantages(
        group=[cpu["group"][i] for i in order],
        traj=[cpu["traj"][i] for i in order],
        step=[cpu["step"][i] for i in order],
        reward=[cpu["reward"][i] for i in order],
        anchor=[cpu["anchor"][i] for i in order],
        nll=mean_token_nll(logprobs, mask),
        invalid=[cpu["invalid"][i] for i in order],
        invalid_penalty=run.env.invalid_penalty,
        config=config,
    )
    assert any(cpu["invalid"]) and not all(cpu["invalid"])  # the penalty's bookkeeping is exercised
    torch.testing.assert_close(verl_advantages[:, 0], reference.advantages.float(), atol=1e-6, rtol=0)
