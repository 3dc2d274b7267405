"""The CPU trainer's starting policy: the seeded random init, or its behaviour clone from noisy
planner demonstrations followed by the family's prior stage, cached by what makes it
(``RunConfig.starting_policy``; this module's source is part of that key, the loop's is not)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from gaca.backends.config import RunConfig
from gaca.backends.cpu.progress import STARTING_EVERY, starting
from gaca.backends.cpu.seeds import PURPOSE_TASKS, seed_for
from gaca.envs import EnvFamily, PriorChoice
from gaca.policy.bc import behaviour_clone, cached_policy, choice_probabilities, collect_demos
from gaca.policy.model import Policy
from gaca.policy.prompt import observation_prompt

PRIOR_CHECK_TASKS = 256
"""Training tasks whose prior choices decide whether the prior stage goes on (``trainer.bc.prior_max_steps``)."""
PRIOR_TOLERANCE = 0.05
"""The prior stage stops once every pivot is right at least ``prior_accuracy`` minus this."""


def initial_policy(run: RunConfig, family: EnvFamily, cache_dir: Path) -> Policy:
    """The starting policy: the seeded random init, or its behaviour clone (cached by config)."""
    vocabulary = sorted(family.vocabulary())
    key = run.starting_policy()
    if key is None:
        return Policy.create(run.model, vocabulary, seed=run.seed)

    def build() -> Policy:
        policy = Policy.create(run.model, vocabulary, seed=run.seed)
        bc = run.trainer.bc
        prior = family.prior_demonstrations() if bc.prior_steps else []
        most = max(bc.prior_steps, bc.prior_max_steps)
        updates = f"{bc.prior_steps}" if most == bc.prior_steps else f"{bc.prior_steps}-{most}"
        print(
            f"gaca train: building the starting policy: {bc.episodes} demonstrations, {bc.steps} cloning updates"
            + (f", then the prior stage ({updates} updates)" if prior else "")
            + f"; cached for later runs under {Path(cache_dir).resolve()}",
            file=sys.stderr,
            flush=True,
        )
        rng = np.random.default_rng(seed_for(run.seed, 0, PURPOSE_TASKS))
        tasks = rng.choice(family.train_task_ids, size=bc.episodes, replace=bc.episodes > len(family.train_task_ids))
        demos = collect_demos(
            family.make,
            [int(t) for t in tasks],
            noise=bc.noise,
            config=run.model,
            max_steps=family.horizon,
            seed=run.seed,
        )
        behaviour_clone(
            policy,
            demos,
            bc.steps,
            bc.lr,
            bc.batch_size,
            run.seed,
            report=lambda done, planned: starting(f"cloning {done}/{planned} updates"),
            report_every=STARTING_EVERY,
        )
        if (
            prior
        ):  # the walk's demonstrations stay in the data: trained on first actions alone, the clone forgets the walk
            prompts = [(choice_prompt(choice, run), action) for choice, action in prior]
            check = family.prior_choices(family.train_task_ids[:PRIOR_CHECK_TASKS])
            losses = behaviour_clone(
                policy,
                prompts + demos,
                bc.prior_steps,
                bc.prior_lr,
                bc.batch_size,
                run.seed,
                more=lambda: prior_accuracy(policy, check, run) < family.prior_accuracy - PRIOR_TOLERANCE,
                max_steps=bc.prior_max_steps,
                report=lambda done, _: starting(f"the prior stage, {done}/{updates} updates"),
                report_every=STARTING_EVERY,
            )
            reached = prior_accuracy(policy, check, run)
            print(
                f"gaca train: prior stage: {len(losses)} updates, right {reached:.2f} of the time at the weakest pivot "
                f"(target {family.prior_accuracy:.2f})",
                file=sys.stderr,
            )
        return policy

    return cached_policy(cache_dir, key, build, waiting=lambda: starting("waiting for another job that builds it"))


def choice_prompt(choice: PriorChoice, run: RunConfig) -> str:
    return observation_prompt(choice.observation, list(choice.history), run.model)


def prior_accuracy(policy: Policy, choices: list[PriorChoice], run: RunConfig) -> float:
    """How often ``policy`` is right at ``choices``: the mean probability of the right option among the
    choice's options, lowest over the pivots (errand: the object, the end of the route)."""
    probabilities = choice_probabilities(
        policy, [choice_prompt(c, run) for c in choices], [(c.right, *c.wrong) for c in choices]
    )
    pivots = sorted({c.pivot for c in choices})
    return min(float(np.mean([p for p, c in zip(probabilities, choices) if c.pivot == pivot])) for pivot in pivots)
