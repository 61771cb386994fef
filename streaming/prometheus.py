"""The job's Prometheus endpoint (`job.metrics_port`; off unless set): Kafka's controller
metrics under the names Prometheus's JMX exporter gives Kafka's own.

Names are those of the JMX exporter's Kafka configuration (jmx_exporter
`example_configs/kafka-2_0_0.yml`, with its `lowercaseOutputName: true`): a gauge
`kafka.controller:type=KafkaController,name=X` is `kafka_controller_kafkacontroller_x`
(X in lower case), and the meter
`kafka.controller:type=ControllerStats,name=UncleanLeaderElectionsPerSec` is the counter
`kafka_controller_controllerstats_uncleanleaderelections_total` (its `Count`, `PerSec`
dropped). The brokers' replica gauges `kafka.server:type=ReplicaManager,name=X` are
`kafka_server_replicamanager_x`, one series for the whole cluster (what a dashboard's
`sum()` over the brokers reads). A dashboard built on a JMX-exported Kafka cluster with
that configuration reads the shadow unchanged, and `promtool check metrics` finds nothing
to say (it calls any camelCase name a lint error, which an exporter keeping the MBeans'
case would give).
What is not Kafka's is under `shadow_controller_`: the shadow's observations (matches,
benign and safety divergences), the latest batch id, and the shadow's own health
(`shadow_health.py`): how many events it is behind its input (`lag_events`), when its
last batch committed and how long it took, the dead letters and the divergences by
severity since the job started, and the rule set it runs (`rule_set_info`).

The values are the sink's (`BatchSink.metrics`, `unclean_elections`, `observations`),
read at each scrape: the gauges as the latest batch that ran the controller left them
(none before the first one of this run), the counters since the job started.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from .controller_metrics import ALL, REPLICA_GAUGES
from .shadow_health import ShadowHealth
from .sink import BatchSink

GAUGE_PREFIX = "kafka_controller_kafkacontroller_"
REPLICA_PREFIX = "kafka_server_replicamanager_"
UNCLEAN = "kafka_controller_controllerstats_uncleanleaderelections"
OBSERVATIONS = "shadow_controller_observations"
OUTCOMES = ("match", "benign", "safety")

HELP = {
    "ActiveControllerCount": "1 if this controller is active (KafkaController)",
    "OfflinePartitionsCount": (
        "partitions in OfflinePartition of topics whose deletion has not started"
    ),
    "PreferredReplicaImbalanceCount": "partitions led by a replica other than their preferred one",
    "GlobalTopicCount": "topics",
    "GlobalPartitionCount": "partitions with a leader and ISR",
    "TopicsToDeleteCount": "topics queued for deletion",
    "ReplicasToDeleteCount": "replicas of topics queued for deletion not yet deleted",
    "TopicsIneligibleToDeleteCount": "topics queued for deletion and ineligible",
    "ReplicasIneligibleToDeleteCount": "replicas in ReplicaDeletionIneligible",
    "ControllerState": "ControllerState.value: 0 Idle, 4 TopicDeletion",
    "UnderReplicatedPartitions": (
        "led partitions whose ISR is smaller than their replication factor, all brokers"
    ),
    "UnderMinIsrPartitionCount": (
        "led partitions whose ISR is smaller than their effective min.insync.replicas, all brokers"
    ),
    "AtMinIsrPartitionCount": (
        "led partitions whose ISR is their effective min.insync.replicas, all brokers"
    ),
    "FencedBrokerCount": "registered brokers that are fenced (always 0 under the ZK controller)",
    "ActiveBrokerCount": "registered brokers that are not fenced, shutting-down ones included",
    "MigratingZkBrokerCount": "registered brokers migrating from ZooKeeper (kraft mode)",
}


def metric_name(gauge: str) -> str:
    """The JMX exporter's name of one of `controller_metrics.ALL`."""
    return (REPLICA_PREFIX if gauge in REPLICA_GAUGES else GAUGE_PREFIX) + gauge.lower()


class ControllerCollector(Collector):
    def __init__(self, sink: BatchSink, health: ShadowHealth | None = None):
        self.sink = sink
        self.health = health

    def collect(self) -> Iterator[Metric]:
        metrics = dict(
            self.sink.metrics
        )  # the sink replaces the dict; never sees a half-written one
        for name in ALL:
            if name in metrics:
                g = GaugeMetricFamily(metric_name(name), HELP[name])
                g.add_metric([], metrics[name])
                yield g
        yield CounterMetricFamily(
            UNCLEAN,
            "unclean leader elections decided since the job started "
            "(ControllerStats.UncleanLeaderElectionsPerSec)",
            value=self.sink.unclean_elections,
        )
        obs = CounterMetricFamily(
            OBSERVATIONS,
            "observed states that matched the shadow's or diverged, by severity",
            labels=["outcome"],
        )
        for outcome in OUTCOMES:
            obs.add_metric([outcome], self.sink.observations.get(outcome, 0))
        yield obs
        if self.sink.stats:
            b = GaugeMetricFamily(
                "shadow_controller_batch", "the latest micro-batch the sink wrote"
            )
            b.add_metric([], max(self.sink.stats))
            yield b
        yield from self._shadow_health()

    def _shadow_health(self) -> Iterator[Metric]:
        """The shadow's own health: lag, the last batch, dead letters, divergences by
        severity (`state_machines/shadow.py`), the rule set."""
        stats = list(self.sink.stats.values())
        yield CounterMetricFamily(
            "shadow_controller_dead_letters",
            "input records and controller errors dead-lettered since the job started",
            value=sum(s.get("dlq", 0) for s in stats),
        )
        yield CounterMetricFamily(
            "shadow_controller_events",
            "events the sequencer applied since the job started",
            value=sum(s.get("events", 0) for s in stats),
        )
        div = CounterMetricFamily(
            "shadow_controller_divergences",
            "observed states that diverged from the shadow's since the job started, by "
            "severity: safety (a leader outside the live replicas or its ISR, epochs going "
            "back) or benign",
            labels=["severity"],
        )
        for severity in ("benign", "safety"):
            div.add_metric([severity], self.sink.observations.get(severity, 0))
        yield div
        info = GaugeMetricFamily(
            "shadow_controller_rule_set_info",
            "the controller rules the shadow runs (controller.mode): zk or kraft",
            labels=["rule_set"],
        )
        info.add_metric([self.sink.settings.controller.mode], 1)
        yield info
        h = self.health
        if h is None:
            return
        lag = h.lag()
        if lag is not None:
            g = GaugeMetricFamily(
                "shadow_controller_lag_events",
                "events between the input's end and the end of the last committed batch",
            )
            g.add_metric([], lag)
            yield g
        if h.last_commit_s is not None and h.last_duration_s is not None:
            t = GaugeMetricFamily(
                "shadow_controller_last_batch_timestamp_seconds",
                "Unix time at which the last micro-batch committed",
            )
            t.add_metric([], h.last_commit_s)
            yield t
            d = GaugeMetricFamily(
                "shadow_controller_last_batch_duration_seconds",
                "how long the last committed micro-batch took",
            )
            d.add_metric([], h.last_duration_s)
            yield d


def registry_for(sink: BatchSink, health: ShadowHealth | None = None) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ControllerCollector(sink, health))
    return registry


def serve(
    sink: BatchSink, port: int, addr: str = "127.0.0.1", health: ShadowHealth | None = None
) -> Any:
    """Serve /metrics on `addr:port` (`job.metrics_host`, `job.metrics_port`) from a daemon
    thread; returns (server, thread)."""
    return start_http_server(port, addr=addr, registry=registry_for(sink, health))
