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
# the shadow's own health (streaming/prometheus.py, `_shadow_health`)
HEALTH = {
    "shadow_controller_lag_events",
    "shadow_controller_last_batch_timestamp_seconds",
    "shadow_controller_last_batch_duration_seconds",
    "shadow_controller_dead_letters_total",
    "shadow_controller_events_total",
    "shadow_controller_divergences_total",
    "shadow_controller_rule_set_info",
}
SERVED |= HEALTH


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
    # every gauge the job serves (Kafka's updateMetrics, the ReplicaManager's) has a panel,
    # and so does the shadow's own health, with a panel that says when it is stalled
    assert named >= GAUGES | HEALTH, (GAUGES | HEALTH) - named
    stalled = next(p for p in dash["panels"] if p["title"] == "Shadow stalled")
    expr = stalled["targets"][0]["expr"]
    assert "shadow_controller_lag_events" in expr and "> bool 300" in expr


def test_the_alert_rules_are_mounted_beside_the_dashboard() -> None:
    compose = (DOCKER / "compose.yaml").read_text()
    assert "./prometheus/alerts.yml:/etc/prometheus/alerts.yml:ro" in compose
    assert "  - alerts.yml" in (DOCKER / "prometheus" / "prometheus.yml").read_text()
    # the job in its container listens on every interface, for Prometheus's container
    job = tomllib.loads((DOCKER / "shadow-controller.toml").read_text())["job"]
    assert job["metrics_host"] == "0.0.0.0"


def test_compose_scrapes_the_jobs_metrics_port() -> None:
    compose = (DOCKER / "compose.yaml").read_text()
    services = set(re.findall(r"^  (\w+):$", compose, re.M))
    assert {"prometheus", "grafana", "job"} <= services, services
    port = tomllib.loads((DOCKER / "shadow-controller.toml").read_text())["job"]["metrics_port"]
    scrape = (DOCKER / "prometheus" / "prometheus.yml").read_text()
    assert re.search(rf'targets: \["job:{port}"\]', scrape), scrape
    assert f'expose: ["{port}"]' in compose
