"""The Prometheus alerting rules shipped beside the dashboard (docker/prometheus/alerts.yml)
pass `promtool check rules`, and fire when they should: `promtool test rules` runs each on
series that should raise it and on series that should not (Prometheus's own rule engine)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.streaming.test_controller_metrics import PROMTOOL

RULES = Path(__file__).resolve().parents[2] / "docker" / "prometheus" / "alerts.yml"
CONFIG = RULES.with_name("prometheus.yml")
ALERTS = {
    "ShadowControllerStalled",
    "ShadowControllerSafetyDivergence",
    "KafkaOfflinePartitions",
    "KafkaUnderMinIsrPartitions",
}

pytestmark = pytest.mark.skipif(
    PROMTOOL is None,
    reason="promtool is not installed (Debian's prometheus package; bin/setup installs it)",
)


def promtool(*args: str) -> tuple[int, str]:
    done = subprocess.run(
        [str(PROMTOOL), *args], capture_output=True, text=True, timeout=60, check=False
    )
    return done.returncode, done.stdout + done.stderr


def test_the_alert_rules_pass_promtool_check_rules() -> None:
    code, said = promtool("check", "rules", str(RULES))
    assert code == 0, said
    assert f"SUCCESS: {len(ALERTS)} rules found" in said
    text = RULES.read_text()
    assert all(f"alert: {name}\n" in text for name in ALERTS)
    # and Prometheus's configuration in the compose file loads them
    code, said = promtool("check", "config", str(CONFIG))
    assert code == 0 and "SUCCESS: 1 rule files found" in said, said


# Series a minute apart (promtool's input_series notation), each alert against the
# series that should raise it, and the quiet ones that should not.
TESTS = """\
rule_files: [{rules}]
evaluation_interval: 1m
tests:
  # a lag and no batch since t=0: stalled once the last batch is 5 min old, for 2 min
  - interval: 1m
    input_series:
      - series: 'shadow_controller_lag_events{{job="s", instance="a"}}'
        values: '12x15'
      - series: 'shadow_controller_last_batch_timestamp_seconds{{job="s", instance="a"}}'
        values: '0x15'
      # keeping up: batches every minute, no lag
      - series: 'shadow_controller_lag_events{{job="s", instance="b"}}'
        values: '0x15'
      - series: 'shadow_controller_last_batch_timestamp_seconds{{job="s", instance="b"}}'
        values: '0+60x15'
    alert_rule_test:
      - eval_time: 5m
        alertname: ShadowControllerStalled
        exp_alerts: []
      - eval_time: 9m
        alertname: ShadowControllerStalled
        exp_alerts:
          - exp_labels: {{severity: warning, job: s, instance: a}}
            exp_annotations:
              summary: "shadow controller a is stalled"
              description: "{stalled}"
  - interval: 1m
    input_series:
      - series: 'shadow_controller_divergences_total{{job="s", instance="a", severity="safety"}}'
        values: '0 0 0 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1'
      - series: 'shadow_controller_divergences_total{{job="s", instance="a", severity="benign"}}'
        values: '0+5x19'
      - series: 'kafka_controller_kafkacontroller_offlinepartitionscount{{job="s", instance="a"}}'
        values: '0 0 2 2 2 0 0'
      - series: 'kafka_server_replicamanager_underminisrpartitioncount{{job="s", instance="a"}}'
        values: '0 3 3 3 0 0 0'
    alert_rule_test:
      - eval_time: 2m
        alertname: ShadowControllerSafetyDivergence
        exp_alerts: []
      - eval_time: 4m
        alertname: ShadowControllerSafetyDivergence
        exp_alerts:
          - exp_labels: {{severity: critical, job: s, instance: a}}
            exp_annotations:
              summary: "safety divergence seen by shadow controller a"
              description: "{safety}"
      - eval_time: 16m
        alertname: ShadowControllerSafetyDivergence
        exp_alerts: []
      - eval_time: 3m
        alertname: KafkaOfflinePartitions
        exp_alerts:
          - exp_labels: {{severity: critical, job: s, instance: a}}
            exp_annotations:
              summary: "2 offline partitions"
              description: "{offline}"
      - eval_time: 6m
        alertname: KafkaOfflinePartitions
        exp_alerts: []
      - eval_time: 2m
        alertname: KafkaUnderMinIsrPartitions
        exp_alerts:
          - exp_labels: {{severity: warning, job: s, instance: a}}
            exp_annotations:
              summary: "3 partitions under their min.insync.replicas"
              description: "{under_min}"
      - eval_time: 5m
        alertname: KafkaUnderMinIsrPartitions
        exp_alerts: []
"""


def test_the_alert_rules_fire_when_they_should(tmp_path: Path) -> None:
    tests = tmp_path / "alerts_test.yml"
    tests.write_text(
        TESTS.format(
            rules=RULES,
            stalled="12 events wait and no micro-batch has committed for 5 minutes. "
            "Check the job's log and its Spark log.",
            safety="The observed cluster diverged from the controller's rules in a way that "
            "can lose data. The job logs one WARN line per divergence, naming the partition.",
            offline="Partitions without a leader: producers and consumers of them fail. "
            "`shadow-controller health` lists them.",
            under_min="acks=all writes to them are refused. `shadow-controller health` lists them.",
        )
    )
    code, said = promtool("test", "rules", str(tests))
    assert code == 0, said
