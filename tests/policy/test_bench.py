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
    assert eager[-2:] == ["1.00x", "-"]
    assert float(compiled[-1]) < 1e-4  # the compiled model scores the rows as the eager one does, to rounding
