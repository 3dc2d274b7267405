"""The same start on both paths: a served prompt's ids, the response ids sampled under a fixed seed and the
parsed action are the CPU backend's when verl-agent's own rollout code produces them.

The first tests need no verl-agent: the pieces gaca owns (the response parser both paths share, the
served environments' training metrics). The last runs verl-agent's ``TrajectoryCollector`` and
``HFRollout`` in its own environment (``rollout_probe.py``) and skips without a checkout.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from gaca import contract
from gaca.backends.verl.agent.env_manager import ServedEnvironments, SpecialTokensKept
from gaca.backends.verl.launcher.policy_export import export_starting_policy
from gaca.envs import make_family
from gaca.policy.generation import generate, response_action
from gaca.policy.model import Policy
from gaca.policy.prompt import observation_prompt

from .served import served_run

pytestmark = pytest.mark.usefixtures("fresh_hydra")
CHECKOUT = os.environ.get("GACA_VERL_AGENT")
PYTHON = os.environ.get("GACA_VERL_PYTHON")
PROBE = Path(__file__).with_name("rollout_probe.py")
SEED = 7
SERVED = ["trainer=quick", "trainer.num_eval_tasks=4", "trainer.eval_episodes_per_task=2", "env.difficulty=easy"]
QUICK_CLONE = [  # a behaviour clone in seconds: enough for positions to matter to the policy
    "trainer.init=bc",
    "trainer.bc.episodes=32",
    "trainer.bc.steps=80",
    "trainer.bc.prior_steps=0",
    "trainer.bc.prior_max_steps=0",
]


def cpu_rollout_step(run, folder: Path, temperature: float) -> dict[str, list]:
    """The first evaluation step on the CPU backend: its prompts' ids, responses and actions."""
    envs = ServedEnvironments(run, make_family(run.env), False, str(folder))
    envs.reset()
    policy = Policy.load(folder)
    prompts = [observation_prompt(o, [], policy.config) for o in envs.observations]
    admissible = [o.admissible for o in envs.observations]
    generation = generate(policy, prompts, admissible, temperature, policy.generator(SEED))
    return {"prompt_ids": generation.prompt_ids, "response_ids": generation.response_ids, "actions": generation.actions}


def test_the_served_environments_parse_every_response_as_the_cpu_backend(tmp_path):
    """Responses with and without eos, padded as verl's rollout pads them, decoded as its loop decodes them
    (special tokens kept while gaca's environments are served): the action is ``response_action``'s."""
    run = served_run(tmp_path, *SERVED, "trainer.init=scratch", python=PYTHON)
    folder = export_starting_policy(run, tmp_path / "policy")
    envs = ServedEnvironments(run, make_family(run.env), False, str(folder))
    envs.reset()
    policy = Policy.load(folder)
    tokenizer = SpecialTokensKept(policy.tokenizer)
    limit, eos, pad = run.model.max_response_tokens, policy.eos_token_id, policy.tokenizer.pad_token_id
    rng = np.random.default_rng(0)
    cases = 0
    for observation in envs.observations:
        trie = policy.command_trie(observation.admissible)
        command_ids = policy.encode_actions(observation.admissible[:3])
        random_ids = [list(rng.integers(4, len(policy.tokenizer), size=n)) for n in (3, limit)]
        responses = [
            *command_ids,  # a command and its eos
            *[ids[:-1] + [int(rng.integers(4, len(policy.tokenizer)))] * (limit - len(ids) + 1) for ids in command_ids],
            [*command_ids[0][:-1]],  # a command without eos: cut at the limit on the CPU backend
            *[ids + [eos] for ids in random_ids[:1]],
            random_ids[1],
        ]
        for response in responses:
            response = [int(token) for token in response][:limit]
            padded = response + [pad] * (limit - len(response))
            text = tokenizer.batch_decode([padded], skip_special_tokens=True)[0]
            assert envs.command(text, observation) == response_action(response, trie, policy.tokenizer), text
            cases += 1
    assert cases == 9 * len(envs.observations)
    first = envs.observations[0]
    with_eos = policy.encode_actions([first.admissible[0]])[0]
    text = tokenizer.batch_decode([with_eos + [pad] * 3])[0]
    assert envs.command(text, first) == first.admissible[0]


def test_the_served_training_metrics_count_the_penalty_and_the_invalid_steps(tmp_path):
    run = served_run(
        tmp_path,
        *SERVED,
        "trainer.init=scratch",
        "trainer.tasks_per_iteration=2",
        "trainer.group_size=2",
        python=PYTHON,
    )
    folder = export_starting_policy(run, tmp_path / "policy")
    envs = ServedEnvironments(run, make_family(run.env), True, str(folder))
    envs.reset()
    for invalid in ([1, 2], [2]):  # each episode's own first admissible command, or a made-up one
        envs.step(["dance wildly" if k in invalid else o.admissible[0] for k, o in enumerate(envs.observations)])
    metrics = envs.rollout_metrics()
    penalty = run.env.invalid_penalty
    lengths = [e.length for e in envs.episodes]
    assert metrics[contract.TRAIN_INVALID_ACTION_RATE] == pytest.approx(3 / sum(lengths))
    returns = [e.total_return for e in envs.episodes]
    assert returns[2] == pytest.approx(-2 * penalty)  # two invalid steps, nothing won in two steps
    assert metrics[contract.TRAIN_RETURN_MEAN] == pytest.approx(np.mean(returns))
    assert metrics[contract.DIAG_LENGTH_FRAC] == pytest.approx(np.mean(lengths) / envs.family.horizon)
    assert metrics[contract.DIAG_MIXED_GROUP_FRAC] == pytest.approx(
        np.mean([envs.episodes[0].won != envs.episodes[1].won, envs.episodes[2].won != envs.episodes[3].won])
    )


@pytest.mark.slow
@pytest.mark.skipif(
    not (CHECKOUT and PYTHON),
    reason="set GACA_VERL_AGENT=<verl-agent checkout> and GACA_VERL_PYTHON=<VENV>/bin/python "
    "(bash scripts/setup-verl-agent.sh <checkout> <VENV>) to roll out through verl-agent's code",
)
@pytest.mark.parametrize("temperature", [1.0, 0.4])
def test_a_served_step_rolls_out_through_verl_agent_as_on_the_cpu_backend(tmp_path, temperature):
    run = served_run(tmp_path, *SERVED, *QUICK_CLONE, python=PYTHON)
    folder = export_starting_policy(run, tmp_path / "policy")
    served = {key: value for key, value in run.to_dict().items() if key != "tracking"}

    def probe(hooks: bool) -> dict[str, list]:
        done = subprocess.run(
            [str(PYTHON), str(PROBE), json.dumps(served), str(folder), str(temperature), str(SEED), str(int(hooks))],
            cwd=CHECKOUT,
            env={**os.environ, "PYTHONPATH": str(CHECKOUT)},
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    torch.manual_seed(0)
    cpu = cpu_rollout_step(run, folder, temperature)
    verl = probe(hooks=True)
    assert verl["prompt_ids"] == cpu["prompt_ids"]
    assert verl["response_ids"] == cpu["response_ids"]
    assert verl["actions"] == cpu["actions"]
    unhooked = probe(hooks=False)  # verl-agent as it is: the generated tokens' positions are wrong
    assert unhooked["prompt_ids"] == cpu["prompt_ids"] and unhooked["response_ids"] != cpu["response_ids"]
