"""Which runs fill which table cell, and the score each contributes (the selection protocol).

``screen`` decides, run by run, whether a run can be used and gives a reason when it cannot;
``select`` applies the selection protocol (final evaluation or best-so-far, the same for every
method); ``results`` gathers one ``CellResult`` per cell: one run per seed, never averaging a
partial set silently (``CellResult.complete`` says whether every expected seed is there).
"""

from __future__ import annotations

import functools
import zlib
from dataclasses import dataclass
from typing import Collection, Mapping

import numpy as np
import pandas as pd

from analysis import stats
from analysis.blocks import PROTOCOL_KEYS, SEEDS, Block, ConfigKey, Variant, canonical_config
from analysis.collect import DIAGNOSTIC_METRICS, EVAL_METRIC, FINAL_METRIC, PARAM_PREFIX, run_config

SELECTIONS = ("final", "best")
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
    task_success: tuple[np.ndarray, ...] | None
    """Per seed, the 0/1 outcome of each evaluation task at the selected iteration; None when a
    seed's outcomes are missing (intervals then resample seeds only)."""
    expected_seeds: int = len(SEEDS)

    @property
    def n(self) -> int:
        return len(self.seeds)

    @property
    def complete(self) -> bool:
        return self.n >= self.expected_seeds

    @property
    def mean(self) -> float:
        return stats.mean_std(self.success)[0]

    @property
    def std(self) -> float:
        return stats.mean_std(self.success)[1]

    @functools.cached_property
    def draws(self) -> np.ndarray:
        """Bootstrap draws of the mean success (seeds, then tasks); seeded by the cell and computed
        once, so every table and claim shows the same interval."""
        rng = np.random.default_rng(zlib.crc32(repr((self.key, self.run_ids)).encode()))
        if self.n == 0:
            return np.full(stats.RESAMPLES, np.nan)
        if self.task_success is not None:
            return stats.task_bootstrap(self.task_success, rng)
        return stats.seed_bootstrap(self.success, rng)

    def interval(self) -> tuple[float, float]:
        return stats.percentile_interval(self.draws)


def empty_result(key: CellKey) -> CellResult:
    return CellResult(key, (), (), np.zeros(0), None)


def screen(runs: pd.DataFrame, wanted: Collection[CellKey], preset: str | None = None) -> pd.DataFrame:
    """``runs`` (from ``collect.load_runs``, newest first) with ``cell`` and ``reason`` columns.

    ``reason`` is None for a run that may fill a cell, else why not, in this order: not a gaca
    training run, unfinished, a missing tag or param, a duplicate of a newer FINISHED run with the
    same ``gaca.run_key``, outside the requested cells, or a training protocol that differs from
    the rest of its setting (the most common one in the setting wins, or ``preset`` when given).
    """
    ledger = runs.copy()
    identified = [_identify(row) for row in ledger.to_dict("records")]
    ledger["cell"] = [cell for cell, _ in identified]
    ledger["reason"] = [reason for _, reason in identified]

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

    _screen_protocol(ledger, preset)
    return ledger


def _identify(run: Mapping[str, object]) -> tuple[CellKey | None, str | None]:
    if _absent(run.get("run_key")):
        return None, "not a gaca training run: no gaca.run_key tag"
    if run["status"] != "FINISHED":
        return None, f"unfinished: status {run['status']}"
    for column in ("method", "env", "scale", "seed"):
        if _absent(run.get(column)):
            return None, f"missing tag: gaca.{column}"
    try:
        config = canonical_config(run_config(run))
    except KeyError as missing:
        return None, f"missing param: {missing.args[0]}"
    return CellKey(config, str(run["env"]), str(run["scale"])), None


def _absent(value: object) -> bool:
    """None, NaN (pandas' filler for a missing tag) or an empty string."""
    return value is None or value == "" or (isinstance(value, float) and np.isnan(value))


def _protocol(run: Mapping[str, object]) -> tuple[object, ...]:
    return tuple(run.get(PARAM_PREFIX + key) for key in PROTOCOL_KEYS)


def _difference(protocol: tuple[object, ...], usual: tuple[object, ...]) -> str:
    """``trainer.preset=paper (not quick)``: the protocol params in which a run differs."""
    return ", ".join(
        f"{key}={value} (not {expected})"
        for key, value, expected in zip(PROTOCOL_KEYS, protocol, usual)
        if value != expected
    )


def _screen_protocol(ledger: pd.DataFrame, preset: str | None) -> None:
    candidates = ledger.loc[ledger["reason"].isna()]
    if candidates.empty:
        return
    protocols = pd.Series([_protocol(row) for row in candidates.to_dict("records")], index=candidates.index)
    if preset is not None:
        other = protocols.map(lambda protocol: str(protocol[0]) != preset)
        ledger.loc[other[other].index, "reason"] = [
            f"other protocol: trainer.preset={p[0]} (not {preset})" for p in protocols[other]
        ]
        return
    settings = candidates["env"].astype(str) + "/" + candidates["scale"].astype(str)
    for _, members in protocols.groupby(settings):
        counts = members.value_counts(sort=False)
        chosen = counts.index[int(np.argmax(counts.to_numpy()))]  # most runs; ties: the newest run's
        other = members[[protocol != chosen for protocol in members]]
        ledger.loc[other.index, "reason"] = [f"other protocol: {_difference(p, chosen)}" for p in other]


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


def results(ledger: pd.DataFrame, outcomes: pd.DataFrame, wanted: Collection[CellKey]) -> dict[CellKey, CellResult]:
    """One ``CellResult`` per wanted cell from the used runs of ``select``'s ledger (seeds ascending);
    a cell without runs gets an empty result. ``outcomes`` is ``collect.load_outcomes``'s frame."""
    runs = used(ledger).sort_values("seed")
    per_task = {run_id: frame["success"].to_numpy(dtype=float) for run_id, frame in outcomes.groupby("run_id")}
    found: dict[CellKey, CellResult] = {}
    for cell, members in runs.groupby("cell", sort=False):
        run_ids = tuple(members["run_id"])
        tasks = tuple(per_task.get(run_id) for run_id in run_ids)
        found[cell] = CellResult(
            key=cell,
            run_ids=run_ids,
            seeds=tuple(int(seed) for seed in members["seed"]),
            success=members["score"].to_numpy(dtype=float),
            task_success=None if any(t is None or t.size == 0 for t in tasks) else tasks,
        )
    return {key: found.get(key, empty_result(key)) for key in wanted}


@dataclass(frozen=True)
class Comparison:
    """``a`` against ``b``: difference of mean success with its bootstrap interval, and P(a > b)."""

    estimate: float
    low: float
    high: float
    probability_of_improvement: float


def compare(a: CellResult, b: CellResult) -> Comparison | None:
    """Mean success of ``a`` minus ``b`` (success units), the 95% interval of that difference from
    independent bootstraps of the two cells, and P(a > b) over their seeds; None if either is empty."""
    if a.n == 0 or b.n == 0:
        return None
    low, high = stats.percentile_interval(a.draws - b.draws)
    return Comparison(a.mean - b.mean, low, high, stats.probability_of_improvement(a.success, b.success))


@dataclass(frozen=True)
class Plan:
    """What a report shows: the requested blocks, and the environment and scale they are read at."""

    blocks: tuple[Block, ...]
    env: str | None = None
    """Only this environment (None: each block's own, household for the ablations)."""
    scale: str | None = None
    """Only this scale (None: each block's own, tiny for the ablations)."""

    def settings(self, block: Block) -> list[tuple[str, str]]:
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

    def names(self, key: CellKey) -> list[str]:
        """``block/variant`` names of every requested row that shows ``key``."""
        return [
            f"{block.name}/{variant.name}"
            for block in self.blocks
            for env, scale in self.settings(block)
            for variant in block.variants
            if self.cell(variant, env, scale) == key
        ]


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


def mean_curve(cell: CellResult, curves: pd.DataFrame, metric: str = EVAL_METRIC) -> pd.DataFrame:
    """The cell's ``metric`` against iteration, mean and std over its seeds: ``step, mean, std, n``.

    Only iterations that every seed evaluated are kept, so the mean is never over a partial set.
    """
    logged = curves.loc[(curves["metric"] == metric) & curves["run_id"].isin(cell.run_ids)]
    by_step = logged.pivot_table(index="step", columns="run_id", values="value", aggfunc="last")
    if by_step.shape[1] < cell.n:  # a seed never logged it: no mean over a partial set
        by_step = by_step.iloc[0:0]
    by_step = by_step.dropna()
    return pd.DataFrame(
        {
            "step": by_step.index.to_numpy(),
            "mean": by_step.mean(axis=1).to_numpy(),
            "std": by_step.std(axis=1, ddof=1).to_numpy() if cell.n > 1 else np.full(len(by_step), np.nan),
            "n": cell.n,
        }
    )


def iterations_to_reach(curve: pd.DataFrame, target: float) -> float:
    """First iteration at which a mean curve reaches ``target`` (NaN if it never does)."""
    reached = curve.loc[curve["mean"] >= target - 1e-9, "step"]
    return float(reached.iloc[0]) if not reached.empty else float("nan")
