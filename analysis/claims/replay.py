"""The sequential design (``analysis.stats.sequential``) applied to a block's claims: its looks replayed on
the seeds the cells have, each comparison tested at each look (at alpha over its claim's number of
comparisons) until one shows a verdict.

A replay is a pure function of the cells and the stored ``Schedule``: ``gaca sweep BLOCK
--until-decided`` replays after every round to decide whether to go on, and ``gaca report``
replays to state the design and the adjusted verdicts, so both always agree. Look k uses each
cell's seeds below n_k (the rounds run seeds 0, 1, ..., n_k - 1). A comparison decided at a look
keeps that decision and that look's interval.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
import pandas as pd

from analysis.claims import checks
from analysis.claims.checks import INCONCLUSIVE, MISSING, VERDICTS, Claim, Evidence
from analysis.runs.blocks import Block
from analysis.runs.cells import CellKey, CellResult, Plan
from analysis.stats import sequential
from analysis.stats.comparison import Comparison
from analysis.stats.sequential import CONTINUE, Schedule


@dataclass(frozen=True)
class Tested:
    """One comparison of a claim as it stands: at the look that decided it, else the last look made."""

    claim: str
    name: str
    """``a − b``."""
    kind: str
    look: int
    """Index of the look it stands at."""
    decided: bool
    seeds: int
    estimate: float
    low: float
    high: float
    level: float
    """The level its tests are at: alpha over its claim's comparisons (the interval is at 1 - level)."""
    decision: str
    rows: tuple[str, ...] = ()
    """The block's rows (variant names) whose cells it compares."""
    test: str = "sign-flip shift"
    """The test whose interval is shown (``_label``)."""

    def line(self) -> str:
        where = f"decided at look {self.look + 1}" if self.decided else f"undecided after look {self.look + 1}"
        if math.isnan(self.low):
            shown = f"{100 * (1 - self.level):.3g}% interval: none"
        else:
            shown = (
                f"{100 * (1 - self.level):.3g}% interval [{100 * self.low:+.2f}, {100 * self.high:+.2f}] ({self.test})"
            )
        return (
            f"{self.name}: {100 * self.estimate:+.2f} pts, {shown} "
            f"(n={self.seeds}; {self.kind}) → {self.decision}, {where}"
        )


def cell_keys(comparison: Comparison) -> tuple[CellKey, ...]:
    """The keys of the cells a comparison read (``analysis.runs.cells.compare`` stores them)."""
    return cast("tuple[CellKey, ...]", comparison.cells)


def _label(schedule: Schedule) -> str:
    """What a design's interval is, for its lines."""
    return "betting" if schedule.test == sequential.TEST_BETTING else "group-sequential sign-flip, shift"


@dataclass(frozen=True)
class Replay:
    schedule: Schedule
    looks_made: int
    tested: list[Tested]
    claims: list[Claim]
    """The block's claims at the last look made, their verdicts the sequential ones."""
    seeds_per_cell: Mapping[str, int]

    @property
    def remaining(self) -> list[Tested]:
        return [t for t in self.tested if not t.decided]

    @property
    def finished(self) -> bool:
        """Every comparison decided, or the last look made for every one that is not (nothing
        tested yet: not finished)."""
        last = len(self.schedule.looks) - 1
        return bool(self.tested) and all(t.look == last for t in self.remaining)

    def needed_rows(self) -> set[str]:
        """The rows whose cells an undecided comparison reads: what the next round must run."""
        return {row for t in self.remaining for row in t.rows}

    def design_lines(self, block: str) -> list[str]:
        """What a report says about the design: looks made, the test, seeds per cell, and each
        comparison's decision with its look."""
        s = self.schedule
        decided = len(self.tested) - len(self.remaining)
        seeds = ", ".join(f"{name} {n}" for name, n in self.seeds_per_cell.items())
        lines = [
            f"Sequential design of {block}: looks after {', '.join(map(str, s.looks))} seeds, {s.describe()} "
            f"(alpha {s.alpha:g}, each of a claim's k comparisons at alpha / k), margin "
            f"±{100 * s.margin:g} pts; {self.looks_made} of {len(s.looks)} looks made; {decided} of "
            f"{len(self.tested)} comparisons decided{'' if self.remaining else ' (the block stopped)'}.",
            f"Seeds per cell: {seeds}.",
        ]
        return lines + [t.line() for t in self.tested]


def restrict(cell: CellResult, seeds: int) -> CellResult:
    """``cell`` with only its seeds below ``seeds``, expecting exactly those it has: whether a look
    is made is decided per comparison (``replay``), so a cell the rounds stopped running is not
    "partial" at a later look."""
    return _keep(cell, [i for i, seed in enumerate(cell.seeds) if seed < seeds])


def _keep(cell: CellResult, keep: list[int]) -> CellResult:
    """``cell`` with only its runs at indices ``keep``, expecting exactly their seeds."""
    tasks = None if cell.task_success is None else tuple(cell.task_success[i] for i in keep)
    auc = None if cell.auc is None else cell.auc[keep]
    kept = tuple(cell.seeds[i] for i in keep)
    return dataclasses.replace(
        cell,
        run_ids=tuple(cell.run_ids[i] for i in keep),
        seeds=kept,
        success=cell.success[keep],
        task_success=tasks,
        auc=auc,
        expected=kept,
    )


def replay(
    evidence: Evidence,
    functions: Sequence[Callable[[Evidence], Claim]],
    schedule: Schedule,
    names: Mapping[CellKey, str],
) -> Replay:
    """The looks of ``schedule`` replayed in order; ``functions`` make the block's claims
    (``checks.CLAIMS``), ``names`` are the block's cells with their row names.

    Look k is made for a comparison once both of its cells have seeds 0 .. n_k - 1 (a round cut
    short, or a cell whose comparisons were all decided and that the rounds stopped running, makes
    no look for it); a comparison decided at a look keeps that decision and that look's interval.
    """
    most = max((cell.n for key, cell in evidence.cells.items() if key in names), default=0)
    states: dict[tuple[str, str], Tested] = {}
    last: list[Claim] = []
    for k, n in enumerate(schedule.looks):
        if n > most:
            break
        restricted = dataclasses.replace(
            evidence, cells={key: restrict(cell, n) for key, cell in evidence.cells.items()}
        )
        claims_now = [function(restricted) for function in functions]
        made_here = False
        for claim in claims_now:
            level = sequential.claim_level(schedule.alpha, len(claim.comparisons))
            for (name, comparison), kind in zip(claim.comparisons, claim.kinds):
                key = (claim.statement, name)
                if key in states and states[key].decided:
                    continue
                if comparison.seeds < n:
                    continue  # this look is not made for it: a cell lacks some of seeds 0 .. n - 1
                made_here = True
                low, high = sequential.interval(comparison.differences, level, schedule)
                made = str(sequential.per_look(comparison.differences[None], kind, level, schedule, k + 1)[0, -1])
                if claim.verdict == MISSING:
                    made = CONTINUE
                states[key] = Tested(
                    claim.statement,
                    name,
                    kind,
                    k,
                    made != CONTINUE,
                    comparison.seeds,
                    comparison.estimate,
                    low,
                    high,
                    level,
                    made,
                    tuple(names[cell] for cell in cell_keys(comparison) if cell in names),
                    _label(schedule),
                )
        if made_here or not last:
            last = claims_now
    tested = list(states.values())
    looks_made = 1 + max((t.look for t in tested), default=-1)
    adjusted = [_adjust(claim, states) for claim in last]
    seeds = {name: int(evidence.cells[key].n) for key, name in names.items() if key in evidence.cells}
    return Replay(schedule, looks_made, tested, adjusted, seeds)


def _adjust(claim: Claim, states: Mapping[tuple[str, str], Tested]) -> Claim:
    """``claim`` with its verdict from the sequential decisions and a note per comparison."""
    if claim.verdict == MISSING or not claim.comparisons:
        return claim
    tested = [states.get((claim.statement, name)) for name, _ in claim.comparisons]
    verdict = checks.combine([INCONCLUSIVE if t is None else VERDICTS[t.decision] for t in tested])
    notes = [*claim.notes, "sequential verdict (the fixed-n intervals above are not what decides it):"]
    lines = [
        f"{name}: no look made (its cells never had the first look's seeds together)" if t is None else t.line()
        for (name, _), t in zip(claim.comparisons, tested)
    ]
    return dataclasses.replace(claim, verdict=verdict, notes=notes + lines)


def repeated_interval(schedule: Schedule, comparison: Comparison) -> tuple[float, float, float]:
    """``comparison``'s interval at the design's level over its paired seeds, by the design's test and
    looks (``sequential.interval``): (low, high, its level)."""
    return (*sequential.interval(comparison.differences, schedule.alpha, schedule), schedule.alpha)


STAND_IN_SUCCESS = (0.4, 0.5, 0.6)
"""The success of every stand-in cell of ``rows_compared``, seeds 0, 1, 2 (values without a meaning)."""


def rows_compared(
    plan: Plan, functions: Sequence[Callable[[Evidence], Claim]], names: Mapping[CellKey, str]
) -> set[str]:
    """The rows (of ``names``) whose cells the claims' comparisons read, found by making them on
    stand-in cells, before any run: which comparisons a claim makes depends on which cells exist,
    not on their values (the stand-ins decide nothing and are never shown)."""
    seeds = tuple(range(len(STAND_IN_SUCCESS)))
    stand_ins = {
        key: CellResult(key, tuple(f"stand-in-{seed}" for seed in seeds), seeds, np.array(STAND_IN_SUCCESS), None)
        for key in names
    }
    evidence = Evidence(plan, stand_ins, pd.DataFrame())
    return {
        names[cell]
        for function in functions
        for _, comparison in function(evidence).comparisons
        for cell in cell_keys(comparison)
        if cell in names
    }


def block_claim_names(block: str) -> dict[str, Callable[[Evidence], Claim]]:
    """The claims that a block's comparisons make (``checks.CLAIMS`` naming only that block), by name."""
    return {name: function for name, (needs, function) in checks.CLAIMS.items() if needs == (block,)}


def block_claims(block: str) -> list[Callable[[Evidence], Claim]]:
    return list(block_claim_names(block).values())


def decidable_blocks() -> list[str]:
    """The blocks whose claims make comparisons (``block_claims`` is not empty)."""
    return sorted({needs[0] for needs, _ in checks.CLAIMS.values() if len(needs) == 1})


@dataclass(frozen=True)
class Designed:
    """What a block's runs say about its design: the design (None: none, or several), the cells
    without the runs that existed before it, and the notes a report gives."""

    schedule: Schedule | None
    results: Mapping[CellKey, CellResult]
    notes: list[str]


def designed(plan: Plan, block: Block, results: Mapping[CellKey, CellResult], ledger: pd.DataFrame) -> Designed:
    """The design the used runs of ``block``'s cells carry (``gaca.sequential.<block>``).

    The design is recorded before the block's first round, so its first tagged run marks when it
    existed. A run of the block's cells without the tag that started later (made by another block's
    rounds, or a plain sweep) is read like the others: the rounds run seeds 0, 1, ... in order and
    the replay is the whole procedure. One that started earlier existed before the design (a design
    chosen after seeing it could be chosen for it): it is left out of the decisions and listed.
    Runs that carry different designs leave the block to the fixed-n verdicts, noted."""
    used = ledger.loc[ledger["reason"].isna()]
    env, scale = plan.settings(block)[0]
    names = {plan.cell(variant, env, scale): variant.name for variant in block.variants}
    members = used.loc[used["cell"].isin(list(names))]
    tags = [d.get(block.name) if isinstance(d, dict) else None for d in members.get("sequential", [])]
    found = {tag for tag in tags if tag}
    if len(found) != 1:
        note = f"{block.name}: its runs carry {len(found)} sequential designs; its claims use the fixed-n verdicts"
        return Designed(None, results, [note] if found else [])
    tagged = np.array([bool(tag) for tag in tags], dtype=bool)
    before = members.loc[~tagged & (members["start_time"] < members.loc[tagged, "start_time"].min()).to_numpy()]
    notes = []
    if not before.empty:
        listed = ", ".join(f"{names[cell]} seed {seed}" for cell, seed in zip(before["cell"], before["seed"]))
        notes.append(
            f"{block.name}: {len(before)} run(s) of its cells existed before its design and are not read into its "
            f"decisions: {listed}"
        )
    dropped = set(before["run_id"])
    kept = {
        key: _keep(cell, [i for i, run_id in enumerate(cell.run_ids) if run_id not in dropped])
        for key, cell in results.items()
    }
    return Designed(Schedule.from_tag(found.pop()), kept, notes)


def designs(
    plan: Plan, results: Mapping[CellKey, CellResult], ledger: pd.DataFrame, diagnostics: pd.DataFrame
) -> tuple[dict[str, Replay], list[str]]:
    """Per requested block with one design (``designed``), its replay; and the notes of every block."""
    found: dict[str, Replay] = {}
    notes: list[str] = []
    for block in plan.blocks:
        if not block_claims(block.name):
            continue
        design = designed(plan, block, results, ledger)
        notes += design.notes
        if design.schedule is None:
            continue
        env, scale = plan.settings(block)[0]
        names = {plan.cell(variant, env, scale): variant.name for variant in block.variants}
        evidence = Evidence(plan, design.results, diagnostics, design.schedule.assume)
        found[block.name] = replay(evidence, block_claims(block.name), design.schedule, names)
    return found, notes
