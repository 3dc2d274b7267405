"""`gaca bench update` prints, per profiled iteration, how much of the update repeats and both updates' seconds."""

from __future__ import annotations

import torch

from gaca.backends.cpu.rollout import RolloutRows
from gaca.bench.update import main, padding_fraction, repeats


def test_repeats_and_padding_by_hand():
    rows = RolloutRows(
        prompt_ids=[[1, 2], [1, 2], [3], [1, 2]],
        response_ids=[[5], [5], [5, 6, 7], [6]],
        logprobs=[[0.0], [0.0], [0.0] * 3, [0.0]],
        reward=[0.0] * 4,
        allowed=None,
    )
    # one mini-batch of all: a [4, 2 + 3] grid holding 3 + 3 + 4 + 3 tokens; pairs 0 and 1 are one
    assert padding_fraction(rows, [[0, 1, 2, 3]]) == 1 - 13 / 20
    fractions = repeats(rows, [[0, 2], [1, 3]])
    assert fractions["repeat batch"] == 1 / 4 and fractions["repeat minibatch"] == 0.0
    assert fractions["repeat prompt"] == 2 / 4
    assert repeats(rows, [[0, 1, 2, 3]])["pad distinct"] == 1 - 10 / 15  # a [3, 5] grid once row 1 is left out


def test_the_table_has_a_row_per_profiled_iteration_and_equal_gradients(capsys):
    threads = torch.get_num_threads()
    try:
        main(["--at", "1,2", "trainer=quick", "trainer.init=scratch", "env.horizon=4", "trainer.tasks_per_iteration=2"])
    finally:
        torch.set_num_threads(threads)
    lines = capsys.readouterr().out.splitlines()
    table = lines[[line.split()[:1] for line in lines].index(["iter"]) + 1 :]
    assert [line.split()[0] for line in table] == ["1", "2"]
    assert all(float(line.split()[-1]) <= 1e-6 for line in table)  # |d grad| on the first mini-batch
