"""The horizon-scaling report: runs matched by configuration, t intervals by hand, the figure written."""

import pandas as pd
import pytest
from scipy import stats

from analysis.render import horizon
from analysis.runs.blocks import DEFAULT_CONFIG


def run(method, horizon_steps, seed, final, status="FINISHED", env="errand", **params):
    route = {20: 6, 40: 12}[horizon_steps]  # the walk grows with the horizon, as sweeps/horizon.yaml sets it
    row = {
        "status": status,
        "env": env,
        "method": method,
        "seed": seed,
        "final": final,
        "params.env.horizon": horizon_steps,
        "params.env.knobs.route_length": route,
        "params.trainer.lr": 0.001,
        "params.trainer.group_size": 8,
    }
    row.update({f"params.{key}": value for key, value in DEFAULT_CONFIG.items()})
    row.update({f"params.{key}": value for key, value in params.items()})
    return row


def test_success_against_horizon_with_t_intervals(tmp_path):
    rows = [
        run("gaca", h, s, f)
        for h, finals in ((20, (0.5, 0.6, 0.7)), (40, (0.3, 0.4, 0.5)))
        for s, f in enumerate(finals)
    ]
    rows += [run("grpo", 20, s, 0.5) for s in range(3)]
    rows += [
        run("gaca", 20, 0, 0.99, **{"algorithm.lambda0": 0.25}),  # another estimator: not the default GACA
        run("gaca", 20, 3, 0.99, **{"trainer.lr": 0.5, "trainer.group_size": 2}),  # another setting, a 4th seed
        run("gaca", 20, 1, 0.99, status="FAILED"),
        run("gaca", 20, 2, 0.99, env="household"),
    ]
    table = horizon.summary(horizon.horizon_runs(pd.DataFrame(rows)))
    gaca20 = table[(table["method"] == "gaca") & (table["horizon"] == 20)].iloc[0]
    assert gaca20["n"] == 3 and gaca20["mean"] == pytest.approx(60.0) and gaca20["std"] == pytest.approx(10.0)
    half = stats.t.ppf(0.975, 2) * 10 / 3**0.5
    assert (gaca20["low"], gaca20["high"]) == pytest.approx((60 - half, 60 + half))
    assert set(zip(table["method"], table["horizon"])) == {("gaca", 20), ("gaca", 40), ("grpo", 20)}
    paths, missing = horizon.write(pd.DataFrame(rows), tmp_path)
    assert missing is None and all(p.is_file() for p in paths)
    assert "| GACA | 40 | 3 | 40.00 |" in (tmp_path / "horizon.md").read_text()


def test_the_interval_stays_within_what_a_success_rate_can_be():
    rows = [run("gigpo", 20, s, f) for s, f in enumerate((1.0, 1.0, 0.7))]  # t interval about [47, 133]
    rows += [run("gigpo", 40, s, f) for s, f in enumerate((0.0, 0.0, 0.3))]  # about [-33, 53]
    rows += [run("grpo", 40, 0, 0.5)]  # one seed: no interval
    table = horizon.summary(horizon.horizon_runs(pd.DataFrame(rows))).set_index(["method", "horizon"])
    half = stats.t.ppf(0.975, 2) * (300**0.5) / 3**0.5
    assert table.loc[("gigpo", 20), "low"] == pytest.approx(90 - half) and table.loc[("gigpo", 20), "high"] == 100.0
    assert table.loc[("gigpo", 40), "low"] == 0.0 and table.loc[("gigpo", 40), "high"] == pytest.approx(10 + half)
    assert table.loc[("grpo", 40), ["low", "high"]].isna().all()


def test_one_horizon_is_not_a_scaling_curve(tmp_path):
    paths, missing = horizon.write(pd.DataFrame([run("gaca", 20, s, 0.5) for s in range(3)]), tmp_path)
    assert paths == [] and "fewer than two horizons" in missing
