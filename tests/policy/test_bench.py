import re

import pytest

from gaca.bench.policy import main


def test_bench_prints_both_tables(capsys):
    main(["--models", "tiny", "--batch-sizes", "4", "--train-batch-size", "4", "--repeats", "1", "--device", "cpu"])
    out = capsys.readouterr().out
    assert "generation" in out and "training" in out
    assert "constrained" in out and "free" in out


@pytest.mark.slow
def test_bench_times_the_compiled_update_beside_the_eager_one(capsys):
    main(["--models", "tiny", "--batch-sizes", "4", "--train-batch-size", "4", "--repeats", "1", "--device", "cpu",
          "--compile"])  # fmt: skip
    lines = capsys.readouterr().out.split("training:")[1].strip().splitlines()
    header, eager, compiled = (re.split(r"\s{2,}", line.strip()) for line in lines[1:])
    assert header[-2:] == ["speed-up", "max |dlogp|"] and len(lines) == 4
    assert eager[header.index("compile")] == "no" and compiled[header.index("compile")] == "yes"
    assert eager[-2:] == ["1.00x", "0.0e+00"]
    assert float(compiled[-1]) < 1e-4  # the compiled model scores the rows as the eager one does, to rounding


def test_bench_times_the_last_layer_at_the_scored_positions_beside_the_full_forward(capsys):
    main(["--models", "tiny", "--batch-sizes", "4", "--train-batch-size", "8", "--repeats", "1", "--device", "cpu",
          "--scored-positions"])  # fmt: skip
    lines = capsys.readouterr().out.split("training:")[1].strip().splitlines()
    header, full, scored = (re.split(r"\s{2,}", line.strip()) for line in lines[1:])
    column = header.index("last layer")
    assert (full[column], scored[column]) == ("every_position", "scored_positions")
    assert full[-2] == "1.00x" and float(scored[-2].rstrip("x")) > 0
    assert float(scored[-1]) < 1e-5  # the same log-probs, to rounding
