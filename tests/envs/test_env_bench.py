"""The environment benchmark runs through its entry point with tiny settings."""

from gaca.bench.envs import main


def test_bench_prints_a_row_per_family_and_difficulty(capsys):
    rows = main(["--steps", "200", "--tasks", "4", "--difficulties", "easy"])
    assert [(r["family"], r["difficulty"]) for r in rows] == [("household", "easy"), ("shop", "easy")]
    assert all(r[k] > 0 for r in rows for k in ("random_steps_per_s", "planner_steps_per_s", "resets_per_s"))
    assert "planner steps/s" in capsys.readouterr().out
