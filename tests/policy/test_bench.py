from gaca.bench.policy import main


def test_bench_prints_both_tables(capsys):
    main(["--models", "tiny", "--batch-sizes", "4", "--train-batch-size", "4", "--repeats", "1", "--device", "cpu"])
    out = capsys.readouterr().out
    assert "generation" in out and "training" in out
    assert "constrained" in out and "free" in out
