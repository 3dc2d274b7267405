"""The vectorized estimator equals the per-row loop reference on random batches (hypothesis).

Every estimator and detector that the project or an installed plugin registers is checked against
its reference (``EstimatorSpec.reference``, ``DetectorSpec.reference``), parametrized from the
registry: a new registration is tested without touching this file, and one without a reference
fails here unless its spec says why it has none.
"""

import dataclasses
import itertools

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gaca import AdvantageConfig, compute_advantages
from gaca.estimators.reference import reference_advantages
from gaca.estimators.registry import DETECTORS, ESTIMATORS

PENALTY = 0.1


def shipped(registry):
    """The names registered by gaca or an installed plugin (not the throwaway entries of other test modules)."""
    return [name for name in registry.in_order() if not registry.get(name).__module__.startswith("tests.")]


METHODS = [m for m in shipped(ESTIMATORS) if ESTIMATORS.spec(m).reference is not None]
FOLLOWED_DETECTORS = [d for d in shipped(DETECTORS) if DETECTORS.spec(d).reference or DETECTORS.spec(d).constant]
"""The detectors the reference computes: those with a reference, and the constant ones."""


@st.composite
def step_batches(draw):
    """Rows of 1-3 prompt groups x 1-4 trajectories x 1-7 steps, shuffled.

    Anchors come from a small per-group alphabet so they recur across trajectories and time;
    steps may carry the invalid-action penalty (flagged invalid); the last step may carry the 0/1
    success, on an invalid step too.
    """
    rows = []
    for g in range(draw(st.integers(1, 3))):
        alphabet = draw(st.integers(1, 4))
        for k in range(draw(st.integers(1, 4))):
            length = draw(st.integers(1, 7))
            success = draw(st.booleans())
            for t in range(length):
                invalid = draw(st.integers(0, 4)) == 0
                reward = -PENALTY if invalid else 0.0
                if t == length - 1 and success:
                    reward += 1.0
                anchor = f"g{g % 2}-obs{draw(st.integers(0, alphabet - 1))}"  # same text in two groups
                # float32 values, as a policy's NLLs are: the estimators compute in float32 and the loop
                # references in float64, so a value float32 rounds (7.9e-213 to 0) would put the two on
                # opposite sides of a tie or a threshold, which no real batch can.
                nll = draw(st.one_of(st.just(0.0), st.floats(0.0, 5.0, width=32, allow_subnormal=False)))
                rows.append((f"task{g}", f"traj{g}.{k}", t, reward, anchor, nll, invalid))
    order = draw(st.permutations(range(len(rows))))
    return [rows[i] for i in order]


@st.composite
def configs(draw, detectors=tuple(FOLLOWED_DETECTORS), methods=tuple(METHODS)):
    return AdvantageConfig(
        method=draw(st.sampled_from(methods)),
        gamma=draw(st.sampled_from([0.95, 1.0, 0.5])),
        norm=draw(st.sampled_from(["mean_std", "mean"])),
        step_weight=draw(st.sampled_from([1.0, 0.5, 2.0])),
        lambda0=draw(st.floats(0.0, 1.0)),
        alpha_lambda=draw(st.floats(0.0, 2.0)),
        beta_lambda=draw(st.floats(0.0, 2.0)),
        alpha_c=draw(st.sampled_from([1.0, 0.7, 0.5, 0.0])),
        detector=draw(st.sampled_from(detectors)),
        singleton_fallback=draw(st.sampled_from(["prompt_group", "zero"])),
        conventions=draw(st.sampled_from(["spec", "verl_agent"])),
    )


def columns(rows, flags=False):
    """The estimator's inputs; with ``flags`` the per-row invalid flags and the penalty too."""
    group, traj, step, reward, anchor, nll, invalid = (list(c) for c in zip(*rows))
    batch = dict(group=group, traj=traj, step=step, reward=reward, anchor=anchor, nll=nll)
    return batch | (dict(invalid=invalid, invalid_penalty=PENALTY) if flags else {})


def assert_close(actual, expected):
    if expected is None:
        assert actual is None
        return
    np.testing.assert_allclose(actual.numpy(), np.asarray(expected), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("method", shipped(ESTIMATORS))
def test_every_estimator_has_a_loop_reference(method):
    spec = ESTIMATORS.spec(method)
    assert spec.reference is not None or spec.no_reference, (
        f"estimator {method!r} is registered without a loop reference: name one in its EstimatorSpec(reference=...) "
        "(docs/extending.md), or say in no_reference=... why it has none and test it otherwise"
    )


@pytest.mark.parametrize("detector", shipped(DETECTORS))
def test_every_detector_has_a_loop_reference(detector):
    spec = DETECTORS.spec(detector)
    assert spec.constant or spec.reference is not None or spec.no_reference, (
        f"detector {detector!r} is registered without a loop reference: name one in its "
        "DetectorSpec(reference=...), or say in no_reference=... why it has none and test it otherwise"
    )


@pytest.mark.parametrize("method", METHODS)
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=step_batches(), data=st.data())
def test_matches_loop_reference(method, rows, data):
    config = data.draw(configs(methods=(method,)))
    batch = columns(rows, flags=True)
    out = compute_advantages(config=config, **batch)
    expected = reference_advantages(config=config, **batch)
    for name in ("advantages", "episode", "step_level", "lam", "criticality"):
        assert_close(getattr(out, name), expected[name])
    assert all(np.isfinite(v) for v in out.diagnostics.values())


@settings(max_examples=100, deadline=None)
@given(rows=step_batches(), seed=st.integers(0, 2**31 - 1))
def test_random_detector_permutes_entropy_scores_within_trajectories(rows, seed):
    batch = columns(rows)
    entropy = compute_advantages(config=AdvantageConfig(detector="entropy"), **batch)
    shuffled = compute_advantages(config=AdvantageConfig(detector="random", seed=seed), **batch)
    again = compute_advantages(config=AdvantageConfig(detector="random", seed=seed), **batch)
    torch.testing.assert_close(shuffled.advantages, again.advantages, rtol=0, atol=0)
    traj = np.asarray(batch["traj"])
    for tau in set(batch["traj"]):
        rows_of_tau = np.flatnonzero(traj == tau)
        np.testing.assert_allclose(
            np.sort(shuffled.criticality.numpy()[rows_of_tau]),
            np.sort(entropy.criticality.numpy()[rows_of_tau]),
            rtol=1e-6,
        )
    # The weights follow the permuted scores through the same gate.
    cfg = AdvantageConfig()
    expected_lam = torch.where(
        shuffled.criticality >= 1,
        cfg.lambda0 * (1 + cfg.alpha_lambda * (shuffled.criticality - 1)),
        cfg.lambda0 * (1 - cfg.beta_lambda * (1 - shuffled.criticality)),
    ).clamp(0, 1)
    torch.testing.assert_close(shuffled.lam, expected_lam)


@settings(max_examples=150, deadline=None)
@given(
    rows=step_batches(),
    config=configs(detectors=tuple(shipped(DETECTORS))),
    position=st.integers(0, 300),
    as_array=st.booleans(),
)
def test_string_anchors_give_the_advantages_of_precoded_ids(rows, config, position, as_array):
    """Anchors as long observation strings (as a list, or the NumPy object array verl-agent hands over)
    and as integer ids coded beforehand define the same anchor groups: every output is identical, for
    every method. The strings share ~300 characters and differ only in a few at ``position``; each is
    a fresh object, so nothing can lean on object identity or a cached hash."""
    batch = columns(rows, flags=True)
    ids: dict[str, int] = {}
    precoded = batch | {"anchor": torch.tensor([ids.setdefault(a, len(ids)) for a in batch["anchor"]])}
    texts = ["o" * position + label + "." * (300 - position) for label in batch["anchor"]]
    strings = batch | {"anchor": np.array(texts, dtype=object) if as_array else texts}
    for method in shipped(ESTIMATORS):
        method_config = dataclasses.replace(config, method=method)
        from_ids = compute_advantages(config=method_config, **precoded)
        from_strings = compute_advantages(config=method_config, **strings)
        for name in ("advantages", "episode", "step_level", "lam", "criticality"):
            expected, actual = getattr(from_ids, name), getattr(from_strings, name)
            assert (actual is None) == (expected is None), name
            if expected is not None:
                torch.testing.assert_close(actual, expected, rtol=0, atol=0)
        assert from_strings.diagnostics == from_ids.diagnostics


def test_random_detector_depends_on_the_seed():
    steps = 20
    batch = dict(
        group=[0] * steps,
        traj=[0] * steps,
        step=list(range(steps)),
        reward=[0.0] * (steps - 1) + [1.0],
        anchor=[f"s{t}" for t in range(steps)],
        nll=[0.1 * (t + 1) for t in range(steps)],
    )
    first = compute_advantages(config=AdvantageConfig(detector="random", seed=0), **batch).criticality
    second = compute_advantages(config=AdvantageConfig(detector="random", seed=1), **batch).criticality
    assert not torch.equal(first, second)
    torch.testing.assert_close(first.sort().values, second.sort().values)


@settings(max_examples=100, deadline=None)
@given(
    rows=step_batches(),
    detector=st.sampled_from(["entropy", "loo", "random"]),
    lambda0=st.floats(0, 1),
    conventions=st.sampled_from(["spec", "verl_agent"]),
)
def test_spec_special_cases(rows, detector, lambda0, conventions):
    batch = columns(rows, flags=True)

    def estimate(**options):
        return compute_advantages(config=AdvantageConfig(conventions=conventions, **options), **batch)

    def gaca(**overrides):
        return estimate(detector=detector, **overrides).advantages

    gigpo = estimate(method="gigpo")
    grpo = estimate(method="grpo").advantages
    off = dict(alpha_lambda=0.0, beta_lambda=0.0)
    # Modulation off equals the uniform detector at any lambda0.
    uniform = estimate(detector="uniform", lambda0=lambda0)
    torch.testing.assert_close(gaca(lambda0=lambda0, **off), uniform.advantages)
    torch.testing.assert_close(gaca(lambda0=0.5, **off), 0.5 * gigpo.advantages)
    torch.testing.assert_close(gaca(lambda0=0.0), grpo)
    weighted = estimate(lambda0=1.0, step_weight=0.7, detector=detector, **off)
    torch.testing.assert_close(weighted.advantages, 0.7 * gigpo.step_level)


def test_row_order_does_not_change_results():
    rng = np.random.default_rng(0)
    n_traj, length = 12, 9
    rows = [
        (
            k // 4,
            k,
            t,
            float(t == length - 1 and k % 3 == 0) - 0.1 * (t == 2),
            f"o{rng.integers(3)}",
            float(rng.random()),
            t == 2,
        )
        for k in range(n_traj)
        for t in range(length)
    ]
    batch = columns(rows, flags=True)
    permutation = rng.permutation(len(rows))
    shuffled = columns([rows[i] for i in permutation], flags=True)
    for detector, conventions in itertools.product(("entropy", "random", "loo"), ("spec", "verl_agent")):
        config = AdvantageConfig(detector=detector, seed=5, conventions=conventions)
        a = compute_advantages(config=config, **batch).advantages
        b = compute_advantages(config=config, **shuffled).advantages
        torch.testing.assert_close(a[permutation], b)


@pytest.mark.parametrize("kind", ["list", "numpy", "torch"])
def test_accepts_sequences_arrays_and_tensors(kind):
    group, traj, step = [0, 0, 1, 1], [(0, "x"), (0, "x"), (1, "y"), (1, "z")], [0, 1, 0, 0]
    reward, anchor, nll = [0.0, 1.0, 0.0, 1.0], ["s", "t", "s", "s"], [0.5, 1.0, 2.0, 0.0]
    expected = compute_advantages(group=group, traj=traj, step=step, reward=reward, anchor=anchor, nll=nll)
    convert = {"list": list, "numpy": np.asarray, "torch": torch.tensor}[kind]
    out = compute_advantages(
        group=convert(group),
        traj=traj,
        step=convert(step),
        reward=convert(reward),
        anchor=np.asarray(anchor) if kind != "list" else anchor,
        nll=convert(nll),
    )
    torch.testing.assert_close(out.advantages, expected.advantages)


def test_no_gradient_flows():
    nll = torch.tensor([0.5, 1.5, 1.0], requires_grad=True)
    out = compute_advantages(
        group=[0, 0, 0], traj=[0, 0, 1], step=[0, 1, 0], reward=[0.0, 1.0, 0.0], anchor=["a", "b", "a"], nll=nll
    )
    assert not out.advantages.requires_grad and not out.lam.requires_grad
