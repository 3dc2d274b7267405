import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import pytest
import torch

from gaca.policy.bc import (
    bc_cache_key,
    behaviour_clone,
    cached_policy,
    choice_probabilities,
    collect_demos,
    load_cached_policy,
    save_cached_policy,
)
from gaca.policy.config import ModelConfig
from gaca.policy.generation import generate
from gaca.policy.model import Policy
from gaca.policy.prompt import build_prompt

TARGETS = [
    "go to cabinet 12",
    "open drawer 3",
    "take mug 1 from countertop 2",
    "search[red cotton t-shirt]",
    "click[b07abc]",
    "buy now",
    "examine apple 1",
    "put knife 1 in fridge 1",
]


def test_cloning_say_x_reaches_full_accuracy(make_policy):
    policy = make_policy(decoding="free", seed=1)
    prompts = [build_prompt(f"say {target}", "you are in the kitchen .", [], None, 2) for target in TARGETS]
    losses = behaviour_clone(policy, list(zip(prompts, TARGETS)) * 4, steps=80, lr=1e-2, batch_size=16, seed=0)
    assert losses[-1] < 0.05 * losses[0]
    # Free decoding must spell every target unaided (brackets restored through the admissible lists).
    assert generate(policy, prompts, [TARGETS] * len(TARGETS), temperature=0.0).actions == TARGETS
    constrained = Policy(policy.model, policy.tokenizer, replace(policy.config, decoding="constrained"))
    assert generate(constrained, prompts, [TARGETS] * len(TARGETS), temperature=0.0).actions == TARGETS


@dataclass
class FakeObservation:
    task: str
    text: str
    admissible: tuple[str, ...]


@dataclass
class FakeResult:
    observation: FakeObservation
    done: bool


class CountingEnv:
    """Walk to position 3 by 'step forward'; 'wait' does nothing."""

    def __init__(self, task_id: int) -> None:
        self.task_id = task_id

    def observe(self) -> FakeObservation:
        return FakeObservation(f"reach {3 + self.task_id}", f"you are at {self.position} .", ("step forward", "wait"))

    def reset(self) -> FakeObservation:
        self.position = 0
        return self.observe()

    def step(self, action: str) -> FakeResult:
        self.position += action == "step forward"
        return FakeResult(self.observe(), self.position == 3 + self.task_id)

    def expert_action(self) -> str:
        return "step forward"


def test_cloning_goes_on_while_more_says_so_up_to_max_steps(make_policy):
    prompts = [build_prompt(f"say {target}", "you are in the kitchen .", [], None, 2) for target in TARGETS]
    demos = list(zip(prompts, TARGETS))
    asked = []

    answers = iter([True, True, False])

    def more():
        asked.append(1)
        return next(answers)

    losses = behaviour_clone(
        make_policy(seed=1), demos, steps=10, lr=1e-2, batch_size=4, seed=0, more=more, more_steps=5, max_steps=100
    )
    assert len(losses) == 20 and len(asked) == 3
    capped = behaviour_clone(
        make_policy(seed=1),
        demos,
        steps=10,
        lr=1e-2,
        batch_size=4,
        seed=0,
        more=lambda: True,
        more_steps=5,
        max_steps=17,
    )
    assert len(capped) == 17
    assert capped[:10] == behaviour_clone(
        make_policy(seed=1), demos, steps=10, lr=1e-2, batch_size=4, seed=0
    )  # same first steps
    assert (
        len(
            behaviour_clone(
                make_policy(seed=1), demos, steps=10, lr=1e-2, batch_size=4, seed=0, more=lambda: True, max_steps=0
            )
        )
        == 10
    )


def test_choice_probabilities_are_the_softmax_of_the_options_sequence_logprobs(make_policy):
    policy = make_policy(decoding="free", seed=1)
    prompts = [build_prompt(f"say {target}", "you are in the kitchen .", [], None, 2) for target in TARGETS[:3]]
    options = [(TARGETS[0], TARGETS[1]), (TARGETS[1], TARGETS[0]), (TARGETS[2], TARGETS[3], TARGETS[4])]
    p = choice_probabilities(policy, prompts, options, chunk=2)
    with torch.no_grad():
        from gaca.policy.logprobs import sequence_logprobs

        def score(prompt, option):
            lp, _, mask = sequence_logprobs(
                policy.model, policy.encode_prompts([prompt]), policy.encode_actions([option])
            )
            return float((lp * mask).sum())

    for i, row in enumerate(options):
        scores = torch.tensor([score(prompts[i], o) for o in row])
        assert p[i] == pytest.approx(float(torch.softmax(scores, 0)[0]), abs=1e-5)
    cloned = make_policy(decoding="free", seed=1)
    behaviour_clone(cloned, list(zip(prompts, TARGETS[:3])) * 4, steps=60, lr=1e-2, batch_size=12, seed=0)
    assert (choice_probabilities(cloned, prompts, options) > 0.9).all()


def test_expert_demos_follow_the_expert_with_history():
    demos = collect_demos(CountingEnv, [0, 1], noise=0.0, config=ModelConfig(history_length=1), max_steps=10)
    assert [action for _, action in demos] == ["step forward"] * 7
    assert "now at step 1" in demos[0][0] and "prior" not in demos[0][0]
    assert "[ observation 2 : you are at 1 . action 2 : step forward ]" in demos[2][0]
    assert demos[2][0].endswith("your task is to : reach 3 . your action :")


def test_noise_takes_random_admissible_actions_and_is_seeded():
    config = ModelConfig(show_admissible=True)
    noisy = collect_demos(CountingEnv, [0] * 5, noise=1.0, config=config, max_steps=4, seed=3)
    assert len(noisy) <= 20 and {action for _, action in noisy} == {"step forward", "wait"}
    assert "admissible actions : [ step forward , wait ]" in noisy[0][0]
    assert noisy == collect_demos(CountingEnv, [0] * 5, noise=1.0, config=config, max_steps=4, seed=3)
    with pytest.raises(ValueError, match="noise"):
        collect_demos(CountingEnv, [0], noise=1.5, config=config, max_steps=4)


def test_cache_key_is_canonical():
    assert bc_cache_key({"a": 1, "b": [1, 2]}) == bc_cache_key({"b": [1, 2], "a": 1})
    assert bc_cache_key({"a": 1}) != bc_cache_key({"a": 2})
    assert len(bc_cache_key({})) == 64


def test_cached_policy_builds_once_and_publishes_atomically(make_policy, tmp_path):
    built = []

    def build():
        built.append(1)
        return make_policy(seed=5)

    first = cached_policy(tmp_path, {"noise": 0.3}, build)
    second = cached_policy(tmp_path, {"noise": 0.3}, build)
    assert len(built) == 1
    key = bc_cache_key({"noise": 0.3})
    assert sorted(p.name for p in tmp_path.iterdir()) == [key, f"{key}.lock"]
    prompt = ["you see a mug . your action :"]
    assert generate(first, prompt, [["go to cabinet 1", "open drawer 2"]], 0.0) == generate(
        second, prompt, [["go to cabinet 1", "open drawer 2"]], 0.0
    )
    # A second publisher of the same key keeps the first copy and leaves no staging directory behind.
    save_cached_policy(make_policy(seed=6), tmp_path, key)
    assert len(list(tmp_path.iterdir())) == 2
    assert load_cached_policy(tmp_path, "missing") is None


def test_concurrent_callers_build_once(make_policy, tmp_path):
    """Two sweep jobs of one seed: the second waits on the builder's lock, then loads its copy."""
    built = []

    def build():
        built.append(1)
        time.sleep(0.5)  # the other caller arrives while this one builds
        return make_policy(seed=5)

    with ThreadPoolExecutor(2) as pool:
        policies = list(pool.map(lambda _: cached_policy(tmp_path, {"noise": 0.3}, build), range(2)))
    assert len(built) == 1
    first, second = (dict(p.model.named_parameters()) for p in policies)
    assert all(torch.equal(first[name], second[name]) for name in first)


def test_a_second_caller_says_it_waits_for_the_build_another_holds(tmp_path, make_policy):
    import fcntl
    import threading

    from gaca.policy.bc import bc_cache_key, cached_policy

    config = {"what": "a start"}
    waited = []
    lock = open(tmp_path / f"{bc_cache_key(config)}.lock", "a")  # another job building it
    fcntl.flock(lock, fcntl.LOCK_EX)
    built = []
    caller = threading.Thread(
        target=lambda: built.append(
            cached_policy(tmp_path, config, lambda: make_policy(seed=1), waiting=lambda: waited.append(1))
        )
    )
    caller.start()
    caller.join(timeout=2)
    assert waited == [1] and caller.is_alive()  # told the user, then waited
    lock.close()  # the other job's build ended (without saving: this caller builds)
    caller.join(timeout=60)
    assert not caller.is_alive() and len(built) == 1
