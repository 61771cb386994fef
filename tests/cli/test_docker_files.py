"""The compose deployment's monitoring files (not runnable here: no Docker engine): the
Grafana dashboard is valid JSON whose queries name only metrics the job serves, and the
compose file scrapes the port the job's settings serve them on (read as text: the venv
has no YAML parser, and the checks are on single lines)."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

from streaming.controller_metrics import ALL
from streaming.prometheus import metric_name

DOCKER = Path(__file__).resolve().parents[2] / "docker"
GAUGES = {metric_name(g) for g in ALL}
SERVED = GAUGES | {
    "kafka_controller_controllerstats_uncleanleaderelections_total",
    "shadow_controller_observations_total",
    "shadow_controller_batch",
}


def test_dashboard_queries_name_served_metrics() -> None:
    dash = json.loads((DOCKER / "grafana" / "dashboards" / "kafka-controller.json").read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    assert exprs and len({p["id"] for p in dash["panels"]}) == len(dash["panels"])
    named = {
        m
        for e in exprs
        for m in re.findall(r"\b(?:kafka_controller|kafka_server|shadow_controller)_\w+", e)
    }
    assert named and named <= SERVED, named - SERVED
    # every gauge the job serves (Kafka's updateMetrics, the ReplicaManager's) has a panel
    assert named >= GAUGES, GAUGES - named


def test_compose_scrapes_the_jobs_metrics_port() -> None:
    compose = (DOCKER / "compose.yaml").read_text()
    services = set(re.findall(r"^  (\w+):$", compose, re.M))
    assert {"prometheus", "grafana", "job"} <= services, services
    port = tomllib.loads((DOCKER / "shadow-controller.toml").read_text())["job"]["metrics_port"]
    scrape = (DOCKER / "prometheus" / "prometheus.yml").read_text()
    assert re.search(rf'targets: \["job:{port}"\]', scrape), scrape
    assert f'expose: ["{port}"]' in compose
