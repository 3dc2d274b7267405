"""``python -m analysis.studies.testbed [--assume shift|none]``: the detector and lambda0 blocks' claims
read again from the annealed default's per-seed finals (``analysis/data/annealed_finals.csv``: seeds
0-9 of every cell, docs/testbed.md), through the same claim functions and tests as ``gaca report``. The
uniform detector is lambda0 = 0.5 with modulation off and the adaptive gate is GACA's default
(entropy), as in the blocks' files, so both blocks read the same runs where they share a cell.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from analysis.benches.worlds import finals_file
from analysis.claims import checks
from analysis.runs.blocks import get_block, report_blocks
from analysis.runs.cells import CellResult, Plan, empty_result
from analysis.stats import sequential

FINALS = "data/annealed_finals.csv"
ROWS = {
    ("detector", "random"): "random",
    ("detector", "uniform"): "uniform",
    ("detector", "entropy"): "entropy",
    ("lambda0", "lambda0=0"): "lambda0=0",
    ("lambda0", "lambda0=0.25"): "lambda0=0.25",
    ("lambda0", "lambda0=0.5"): "uniform",
    ("lambda0", "lambda0=0.75"): "lambda0=0.75",
    ("lambda0", "lambda0=1"): "lambda0=1",
    ("lambda0", "gaca"): "entropy",
}
"""Each (block, variant) and the row of the finals file that holds its runs."""
CLAIMS = ("detector order", "no fixed lambda0 matches", "lambda0 sweep concave")


def finals() -> dict[str, np.ndarray]:
    """Per row of the file, the final success of seeds 0, 1, ... in order."""
    return finals_file(FINALS)


def evidence(assume: str = sequential.DEFAULT_ASSUME) -> checks.Evidence:
    """The two blocks' cells at the ablation setting, filled from the file; every other cell empty."""
    blocks = report_blocks()
    plan = Plan((get_block("detector"), get_block("lambda0")))
    values = finals()
    seeds = tuple(range(len(next(iter(values.values())))))
    cells = {key: empty_result(key, seeds) for key in plan.wanted()}
    for (block, variant), row in ROWS.items():
        key = plan.cell(get_block(block).variant(variant), blocks.ablation_environment, blocks.ablation_scale)
        ids = tuple(f"{row}-{seed}" for seed in seeds)
        cells[key] = CellResult(key, ids, seeds, values[row], None, expected=seeds)
    return checks.Evidence(plan, cells, pd.DataFrame(), assume)


def claims(assume: str = sequential.DEFAULT_ASSUME) -> list[checks.Claim]:
    found = evidence(assume)
    return [checks.CLAIMS[name][1](found) for name in CLAIMS]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis.studies.testbed", description=__doc__.splitlines()[0])
    parser.add_argument("--assume", choices=tuple(sequential.ASSUMPTIONS), default=sequential.DEFAULT_ASSUME)
    args = parser.parse_args(argv)
    for claim in claims(args.assume):
        print(f"## {claim.statement}: **{claim.verdict}**\n")
        print("\n".join(f"- {line}" for line in claim.numbers if not line.startswith("power of")))
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
