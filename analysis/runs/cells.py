"""Which runs fill which table cell, and the score each contributes (the selection protocol).

``screen`` decides, run by run, whether a run can be used and gives a reason when it cannot;
``select`` applies the selection protocol (final evaluation or best-so-far, the same for every
method); ``results`` gathers one ``CellResult`` per cell: one run per seed, never averaging a
partial set silently (``CellResult.complete`` says whether every seed its blocks ran is there);
``compare`` estimates the difference of two cells, paired by seed and task where they share seeds,
with a t interval.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.runs.blocks import (
    PRESET_KEY,
    Block,
    ConfigKey,
    Variant,
    canonical_config,
    default_key,
    report_blocks,
    setting,
)
from analysis.runs.collect import DIAGNOSTIC_METRICS, EVAL_METRIC, FINAL_METRIC, PARAM_PREFIX, auc_by_run, run_config
from analysis.runs.where import mismatches
from analysis.stats import basic, comparison
from analysis.stats.comparison import Comparison

SELECTIONS = ("final", "best")
MEASURES = ("final", "auc")
"""What a cell scores per seed: the selected evaluation success, or the area under the evaluation
curve (mean success over all evaluations of the run)."""
OUTSIDE = "not in the requested tables"
"""The reason given to a valid run that no requested cell asks for (another block, env or scale)."""


@dataclass(frozen=True)
class CellKey:
    """A table cell: one estimator configuration in one environment at one scale."""

    config: ConfigKey
    env: str
    scale: str


@dataclass(frozen=True)
class CellResult:
    """The runs of one cell, one per seed, and their selected evaluation success."""

    key: CellKey
    run_ids: tuple[str, ...]
    seeds: tuple[int, ...]
    success: np.ndarray
    """Selected success rate per seed, in [0, 1], in the order of ``seeds``."""
    task_success: tuple[pd.Series, ...] | None
    """Per seed, each evaluation task's success at the selected iteration (index: task id; the
    mean over the task's episodes when it has several); None when a seed's outcomes are missing
    (intervals then resample seeds only)."""
    auc: np.ndarray | None = None
    """Area under the evaluation curve per seed (mean ``eval/success_rate`` over the run's
    evaluations), NaN where a run has no curve; None: not read."""
    expected: tuple[int, ...] = ()
    """The seeds the cell's blocks ran (``Plan.expected_seeds``); the cell is partial without one."""

    @property
    def n(self) -> int:
        return len(self.seeds)

    @property
    def expected_seeds(self) -> int:
        return len(set(self.expected) | set(self.seeds))

    @property
    def missing_seeds(self) -> tuple[int, ...]:
        return tuple(sorted(set(self.expected) - set(self.seeds)))

    @property
    def complete(self) -> bool:
        return self.n > 0 and not self.missing_seeds

    @property
    def mean(self) -> float:
        return basic.mean_std(self.success)[0]

    @property
    def std(self) -> float:
        return basic.mean_std(self.success)[1]

    def values(self, measure: str = "final") -> np.ndarray:
        """Per seed: the selected success (``final``) or the area under the curve (``auc``)."""
        if measure == "final":
            return self.success
        if measure == "auc":
            return np.full(self.n, np.nan) if self.auc is None else self.auc
        raise ValueError(f"measure must be one of {list(MEASURES)}, got {measure!r}")

    def levels(self, measure: str = "final") -> tuple[basic.Level, ...]:
        """The seed level of the cell's mean, and its task level where per-task outcomes exist."""
        seed = basic.seed_level(self.values(measure))
        if measure == "final" and self.task_success is not None:
            return seed, basic.task_level([s.to_numpy() for s in self.task_success])
        return (seed,)

    def interval(self, measure: str = "final", confidence: float = basic.CONFIDENCE) -> tuple[float, float]:
        """The t interval of the mean over seeds (n - 1 degrees of freedom), never narrower than
        the task-level one, as a difference's (``basic.half_width``): the percentile bootstrap over
        seeds and tasks covered 81-97% with 3 seeds (tests/analysis/test_coverage.py). Clipped to
        [0, 1]: both measures are success rates. NaN with one seed."""
        values = self.values(measure)
        if self.n == 0 or np.isnan(values).any():
            return math.nan, math.nan
        half = basic.half_width(self.levels(measure), self.n, confidence)
        if math.isnan(half):  # max/min would clip NaN bounds to [0, 1]
            return math.nan, math.nan
        mean = float(values.mean())
        return max(0.0, mean - half), min(1.0, mean + half)


def empty_result(key: CellKey, expected: tuple[int, ...] = ()) -> CellResult:
    return CellResult(key, (), (), np.zeros(0), None, np.zeros(0), expected)


def screen(
    runs: pd.DataFrame,
    wanted: Collection[CellKey],
    preset: str | None = None,
    where: Mapping[str, object] | None = None,
) -> pd.DataFrame:
    """``runs`` (from ``collect.load_runs``, newest first) with ``cell`` and ``reason`` columns.

    ``reason`` is None for a run that may fill a cell, else why not, in this order: not a gaca
    training run, unfinished, a missing tag or param, a duplicate of a newer FINISHED run with the
    same ``gaca.run_key``, outside the requested cells, or another configuration: a config that
    differs from the rest of its environment and scale in anything but the estimator and the seed
    (the most common one there wins, and ``preset`` when given), listed with the keys that differ;
    ``where`` (``analysis.runs.where``) pins params before the most common setting is chosen.
    """
    ledger = runs.copy()
    identified = [_identify(row) for row in ledger.to_dict("records")]
    ledger["cell"] = [cell for cell, _, _ in identified]
    ledger["setting"] = [config for _, config, _ in identified]
    ledger["reason"] = [reason for _, _, reason in identified]

    candidates = ledger["reason"].isna()
    newest = ledger.loc[candidates].drop_duplicates("run_key")
    winner = dict(zip(newest["run_key"], newest["run_id"]))
    duplicate = candidates & ~ledger["run_id"].isin(newest["run_id"])
    ledger.loc[duplicate, "reason"] = [
        f"duplicate: same gaca.run_key as newer run {winner[key]}" for key in ledger.loc[duplicate, "run_key"]
    ]

    wanted = set(wanted)
    outside = ledger["reason"].isna() & ~ledger["cell"].isin(wanted)
    ledger.loc[outside, "reason"] = OUTSIDE

    if where:
        pinned = ledger["reason"].isna()
        reasons = mismatches(ledger.loc[pinned], where)
        off = reasons.notna()
        ledger.loc[reasons.index[off], "reason"] = [f"{OTHER_CONFIGURATION}: {r} (--where)" for r in reasons[off]]
    _screen_protocol(ledger, preset)
    return ledger


def _identify(run: Mapping[str, object]) -> tuple[CellKey | None, ConfigKey | None, str | None]:
    """The run's cell, the rest of its identity (``blocks.setting``), or why it has none."""
    if _absent(run.get("run_key")):
        return None, None, "not a gaca training run: no gaca.run_key tag"
    if run["status"] != "FINISHED":
        return None, None, f"unfinished: status {run['status']}"
    for column in ("method", "env", "scale", "seed"):
        if _absent(run.get(column)):
            return None, None, f"missing tag: gaca.{column}"
    try:
        config = run_config(run)
        key, rest = canonical_config(config), tuple(sorted(setting(config).items()))
    except KeyError as missing:
        return None, None, f"missing param: {missing.args[0]}"
    except ValueError as error:
        return None, None, f"invalid config: {error}"
    return CellKey(key, str(run["env"]), str(run["scale"])), rest, None


def _absent(value: object) -> bool:
    """None, NaN (pandas' filler for a missing tag) or an empty string."""
    return value is None or value == "" or (isinstance(value, float) and np.isnan(value))


OTHER_CONFIGURATION = "other configuration"


def _difference(config: ConfigKey, usual: ConfigKey) -> str:
    """``trainer.lr=0.5 (not 0.001)``: the keys in which a run's setting differs from the usual one."""
    mine, theirs = dict(config), dict(usual)
    return ", ".join(
        f"{key}={mine.get(key, 'absent')} (not {theirs.get(key, 'absent')})"
        for key in sorted(set(mine) | set(theirs))
        if mine.get(key, "absent") != theirs.get(key, "absent")
    )


def _screen_protocol(ledger: pd.DataFrame, preset: str | None) -> None:
    """Per environment and scale, the runs whose setting is not the most common one (among the runs
    of ``preset`` when given) get ``OTHER_CONFIGURATION`` with the keys that differ."""
    candidates = ledger.loc[ledger["reason"].isna()]
    if candidates.empty:
        return
    if preset is not None:
        presets = candidates.get(PARAM_PREFIX + PRESET_KEY, pd.Series(index=candidates.index)).astype(str)
        other = presets[presets != preset]
        ledger.loc[other.index, "reason"] = [f"{OTHER_CONFIGURATION}: {PRESET_KEY}={p} (not {preset})" for p in other]
        candidates = candidates.loc[presets == preset]
    settings = candidates["env"].astype(str) + "/" + candidates["scale"].astype(str)
    for _, members in candidates["setting"].groupby(settings):
        counts = members.value_counts(sort=False)
        chosen = counts.index[int(np.argmax(counts.to_numpy()))]  # most runs; ties: the newest run's
        other = members[[config != chosen for config in members]]
        ledger.loc[other.index, "reason"] = [f"{OTHER_CONFIGURATION}: {_difference(c, chosen)}" for c in other]


def select(ledger: pd.DataFrame, curves: pd.DataFrame, selection: str) -> pd.DataFrame:
    """Apply the selection protocol to the screened runs: adds ``score`` and ``iteration``.

    final: ``final/eval_success_rate`` at the last evaluation; best: the highest
    ``eval/success_rate`` over training, at its first iteration. A run without the metric the
    protocol needs gets a reason. Then one run per (cell, seed) is kept, the newest: equivalent
    spellings of one configuration (e.g. detector uniform and modulation 0) share a cell.
    """
    if selection not in SELECTIONS:
        raise ValueError(f"selection must be one of {list(SELECTIONS)}, got {selection!r}")
    ledger = ledger.copy()
    evaluations = curves.loc[curves["metric"] == EVAL_METRIC]
    last_step = evaluations.groupby("run_id")["step"].max()
    best = evaluations.sort_values(["run_id", "value", "step"], ascending=[True, False, True]).drop_duplicates("run_id")
    best = best.set_index("run_id")
    if selection == "final":
        ledger["score"] = ledger["final"]
        # The final metric belongs to the last planned iteration; outcomes of an earlier one
        # (an evaluation that was never logged) would not match it, so none are read then.
        last = ledger["run_id"].map(last_step)
        planned = pd.to_numeric(
            ledger.get(PARAM_PREFIX + "trainer.iterations", pd.Series(index=ledger.index)), errors="coerce"
        )
        ledger["iteration"] = last.where(planned.isna() | (last == planned))
        missing = f"missing metric: {FINAL_METRIC}"
    else:
        ledger["score"] = ledger["run_id"].map(best["value"])
        ledger["iteration"] = ledger["run_id"].map(best["step"])
        missing = f"missing metric: {EVAL_METRIC} history"

    candidates = ledger["reason"].isna()
    score = pd.to_numeric(ledger["score"], errors="coerce")
    ledger.loc[candidates & score.isna(), "reason"] = missing
    invalid = candidates & score.notna() & ~score.between(0.0, 1.0)
    ledger.loc[invalid, "reason"] = [f"invalid metric: success {value} outside [0, 1]" for value in score[invalid]]

    candidates = ledger["reason"].isna()
    kept = ledger.loc[candidates].drop_duplicates(["cell", "seed"])  # newest first
    winner = {(row.cell, row.seed): row.run_id for row in kept.itertuples(index=False)}
    equivalent = candidates & ~ledger["run_id"].isin(kept["run_id"])
    ledger.loc[equivalent, "reason"] = [
        f"duplicate: same configuration and seed as newer run {winner[(row.cell, row.seed)]}"
        for row in ledger.loc[equivalent].itertuples(index=False)
    ]
    return ledger


def used(ledger: pd.DataFrame) -> pd.DataFrame:
    return ledger.loc[ledger["reason"].isna()]


def results(
    ledger: pd.DataFrame, outcomes: pd.DataFrame, curves: pd.DataFrame, plan: Plan
) -> dict[CellKey, CellResult]:
    """One ``CellResult`` per cell the plan wants, from the used runs of ``select``'s ledger (seeds
    ascending); a cell without runs gets an empty result. ``outcomes`` is ``collect.load_outcomes``'s
    frame (one row per episode; a task's episodes are averaged), ``curves`` ``collect.load_curves``'."""
    runs = used(ledger).sort_values("seed")
    per_task = {
        run_id: frame.groupby("task_id")["success"].mean().astype(float) for run_id, frame in outcomes.groupby("run_id")
    }
    auc = auc_by_run(curves)
    found: dict[CellKey, CellResult] = {}
    for cell, members in runs.groupby("cell", sort=False):
        run_ids = tuple(members["run_id"])
        tasks = tuple(per_task.get(run_id) for run_id in run_ids)
        found[cell] = CellResult(
            key=cell,
            run_ids=run_ids,
            seeds=tuple(int(seed) for seed in members["seed"]),
            success=members["score"].to_numpy(dtype=float),
            task_success=None if any(t is None or t.empty for t in tasks) else tasks,
            auc=np.array([auc.get(run_id, np.nan) for run_id in run_ids], dtype=float),
        )
    expected = plan.expected_seeds({key: result.seeds for key, result in found.items()})
    return {
        key: dataclasses.replace(found[key], expected=expected[key])
        if key in found
        else empty_result(key, expected[key])
        for key in plan.wanted()
    }


def pairs(a: CellResult, b: CellResult) -> list[tuple[int, int]]:
    """Index pairs (into ``a.seeds``, ``b.seeds``) of the seeds two cells share, when they are in
    the same environment and scale (same starting policy, task order and evaluation tasks per
    seed); empty otherwise."""
    if (a.key.env, a.key.scale) != (b.key.env, b.key.scale):
        return []
    return [(i, b.seeds.index(seed)) for i, seed in enumerate(a.seeds) if seed in b.seeds]


def _task_differences(a: CellResult, b: CellResult, shared: Sequence[tuple[int, int]]) -> list[np.ndarray] | None:
    """Per shared seed, a's minus b's success on each evaluation task; None unless both have every
    seed's outcomes on the same tasks."""
    if a.task_success is None or b.task_success is None:
        return None
    differences = []
    for i, j in shared:
        tasks_a, tasks_b = a.task_success[i], b.task_success[j]
        if not tasks_a.index.sort_values().equals(tasks_b.index.sort_values()):
            return None
        differences.append((tasks_a - tasks_b.reindex(tasks_a.index)).to_numpy(dtype=float))
    return differences


def compare(a: CellResult, b: CellResult, measure: str = "final") -> Comparison | None:
    """Mean ``measure`` of ``a`` minus ``b`` with its t interval (``basic.half_width``); None if either
    is empty or lacks the measure.

    Cells that share seeds in one setting are paired: the difference is taken seed by seed (and
    task by task where both have per-task outcomes on the same tasks, for ``final``), with the
    seed level of the per-seed differences (n - 1 degrees of freedom) and, task by task, the task
    level of the per-task differences. Other cells (another env or scale, no seed in common) are
    ``UNPAIRED``: Welch's combination of the two cells' levels. One seed (shared, or in the smaller
    cell) gives no interval.
    """
    values_a, values_b = a.values(measure), b.values(measure)
    if a.n == 0 or b.n == 0 or np.isnan(values_a).any() or np.isnan(values_b).any():
        return None
    shared = sorted(pairs(a, b), key=lambda pair: a.seeds[pair[0]])
    if shared:
        per_task = _task_differences(a, b, shared) if measure == "final" else None
        result = comparison.paired(values_a, values_b, shared, per_task)
    else:
        in_order_a, in_order_b = values_a[np.argsort(a.seeds)], values_b[np.argsort(b.seeds)]
        result = comparison.unpaired(in_order_a, a.levels(measure), in_order_b, b.levels(measure))
    return dataclasses.replace(result, cells=(a.key, b.key))


@dataclass(frozen=True)
class Plan:
    """What a report shows: the requested blocks, and the environment and scale they are read at."""

    blocks: tuple[Block, ...]
    env: str | None = None
    """Only this environment (None: each block's own; for the ablations ``ablations_at``)."""
    scale: str | None = None
    """Only this scale (None: each block's own; for the ablations ``ablations_at``)."""
    ablations_at: tuple[str, str] | None = None
    """(env, scale) the ablation blocks are read at when neither env nor scale is given: where
    their runs are (``ablation_setting``); None: the blocks' declared setting."""

    def settings(self, block: Block) -> list[tuple[str, str]]:
        if block is not report_blocks().main and self.ablations_at and not (self.env or self.scale):
            return [self.ablations_at]
        environments = (self.env,) if self.env else block.environments
        scales = (self.scale,) if self.scale else block.scales
        return [(env, scale) for env in environments for scale in scales]

    def cell(self, variant: Variant, env: str, scale: str) -> CellKey:
        return CellKey(variant.key(), env, scale)

    def wanted(self) -> set[CellKey]:
        return {
            self.cell(variant, env, scale)
            for block in self.blocks
            for env, scale in self.settings(block)
            for variant in block.variants
        }

    def expected_seeds(self, found: Mapping[CellKey, Sequence[int]]) -> dict[CellKey, tuple[int, ...]]:
        """Per wanted cell, the seeds its blocks ran, from the seeds ``found`` in each cell.

        A block at a setting ran the seeds of its cells that no other requested block shows (all
        of its cells when every one is shared): GACA's default is in every ablation, so seeds that
        one block added to it do not make another block's rows partial. A cell expects the union
        over the blocks that show it. Nothing is assumed about how many seeds there should be.
        """
        expected: dict[CellKey, set[int]] = {key: set() for key in self.wanted()}
        owners: dict[CellKey, set[str]] = {}
        for block in self.blocks:
            for variant, env, scale in self._rows(block):
                owners.setdefault(self.cell(variant, env, scale), set()).add(block.name)
        for block in self.blocks:
            for env, scale in self.settings(block):
                keys = [self.cell(variant, env, scale) for variant in block.variants]
                own = [key for key in keys if len(owners[key]) == 1] or keys
                seeds = set().union(*(set(found.get(key, ())) for key in own))
                for key in keys:
                    expected[key] |= seeds
        return {key: tuple(sorted(seeds)) for key, seeds in expected.items()}

    def _rows(self, block: Block) -> list[tuple[Variant, str, str]]:
        return [(variant, env, scale) for env, scale in self.settings(block) for variant in block.variants]

    def names(self, key: CellKey) -> list[str]:
        """``block/variant`` names of every requested row that shows ``key``."""
        return [
            f"{block.name}/{variant.name}"
            for block in self.blocks
            for env, scale in self.settings(block)
            for variant in block.variants
            if self.cell(variant, env, scale) == key
        ]


def ablation_setting(runs: pd.DataFrame) -> tuple[str, str] | None:
    """The (env, scale) that most usable runs of ablation-only configurations (every ablation row
    but GACA's default) were logged in: the ablation sweeps run in the training config's default
    environment unless told otherwise, so the report follows the runs rather than a name. Ties go
    to the blocks' declared setting; None when there is no such run."""
    ledger = screen(runs, wanted=())
    default = default_key()
    ablation_only = {variant.key() for block in report_blocks().ablations for variant in block.variants} - {default}
    ablation = ledger["cell"].map(lambda cell: cell is not None and cell.config in ablation_only)
    usable = ledger.loc[(ledger["reason"] == OUTSIDE) & ablation]
    if usable.empty:
        return None
    counts = usable.groupby([usable["env"].astype(str), usable["scale"].astype(str)]).size()
    declared = (report_blocks().ablation_environment, report_blocks().ablation_scale)
    best = counts.max()
    return declared if counts.get(declared, 0) == best else counts[counts == best].index[0]


def diagnostics(cells: Collection[CellResult], curves: pd.DataFrame) -> pd.DataFrame:
    """Per run of ``cells``, each ``diag/*`` metric averaged over the iterations it was logged at
    (the paper's "logged throughout training"): ``env, scale, run_id, seed, metric, value``."""
    members = pd.DataFrame(
        [
            (cell.key.env, cell.key.scale, run_id, seed)
            for cell in cells
            for run_id, seed in zip(cell.run_ids, cell.seeds)
        ],
        columns=["env", "scale", "run_id", "seed"],
    )
    logged = curves.loc[curves["metric"].isin(DIAGNOSTIC_METRICS)]
    averages = logged.groupby(["run_id", "metric"], as_index=False)["value"].mean()
    return members.merge(averages, on="run_id", how="inner")


def mean_curve(
    cell: CellResult, curves: pd.DataFrame, metric: str = EVAL_METRIC, bounds: tuple[float, float] | None = (0.0, 1.0)
) -> pd.DataFrame:
    """The cell's ``metric`` against iteration over its seeds: ``step, mean, std, low, high, n``
    (``low``/``high``: the 95% t interval of the mean, clipped to ``bounds``, the metric's range: a
    success rate's by default; NaN with one seed).

    Only iterations that every seed evaluated are kept, so the mean is never over a partial set.
    """
    logged = curves.loc[(curves["metric"] == metric) & curves["run_id"].isin(cell.run_ids)]
    by_step = logged.pivot_table(index="step", columns="run_id", values="value", aggfunc="last")
    if by_step.shape[1] < cell.n:  # a seed never logged it: no mean over a partial set
        by_step = by_step.iloc[0:0]
    by_step = by_step.dropna()
    mean = by_step.mean(axis=1).to_numpy()
    std = by_step.std(axis=1, ddof=1).to_numpy() if cell.n > 1 else np.full(len(by_step), np.nan)
    half = basic.mean_half_width(std, cell.n)
    low, high = mean - half, mean + half
    if bounds is not None:
        low, high = np.clip(low, *bounds), np.clip(high, *bounds)
    return pd.DataFrame(
        {
            "step": by_step.index.to_numpy(),
            "mean": mean,
            "std": std,
            "low": low,
            "high": high,
            "n": cell.n,
        }
    )


def iterations_to_reach(curve: pd.DataFrame, target: float) -> float:
    """First iteration at which a mean curve reaches ``target`` (NaN if it never does)."""
    reached = curve.loc[curve["mean"] >= target - 1e-9, "step"]
    return float(reached.iloc[0]) if not reached.empty else float("nan")
