"""`gaca bench update` prints, per profiled iteration, how much of the update repeats and each way's seconds."""

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
    headers = [i for i, line in enumerate(lines) if line.split()[:1] == ["iter"]]
    assert len(headers) == 2
    repeat_table = lines[headers[0] + 1 : headers[1] - 1]
    assert [line.split()[0] for line in repeat_table] == ["1", "2"]
    ways = [line.split() for line in lines[headers[1] + 1 :]]
    assert [(cells[0], cells[1]) for cells in ways] == [
        (i, way) for i in ("1", "2") for way in ("every_row", "distinct", "distinct+scored")
    ]
    for cells in ways:
        if cells[1] == "every_row":
            assert float(cells[-1]) == 1.0  # its own ratio; no difference from itself is printed
        else:
            assert float(cells[-1]) <= 1e-6 and float(cells[-2]) <= 1e-6  # |d grad|, |d loss| on the first mini-batch
