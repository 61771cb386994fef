"""Every scenario log runs through Spark exactly once, and every shell runs some."""

from __future__ import annotations

from collections import Counter

from tests.streaming.scenario_runs import LOGS, SHELLS, scenario_params


def test_each_log_runs_in_one_shell_and_each_shell_runs_a_quarter() -> None:
    runs = [
        (p.values, connector) for connector in ("file", "kafka") for p in scenario_params(connector)
    ]
    assert Counter(log for (log, _), _ in runs) == Counter(LOGS)
    shells = Counter((connector, buckets) for (_, buckets), connector in runs)
    assert set(shells) == {(s.connector, s.buckets) for s in SHELLS}
    assert max(shells.values()) - min(shells.values()) <= 1
