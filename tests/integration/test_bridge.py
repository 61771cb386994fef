"""The bridge end to end on the embedded Tansu broker: the broker is the live cluster *and*
holds the events and decisions topics. Whatever the broker reports (Tansu: one broker, id
111, which is also the controller; leader epochs 0) is what the bridge must emit, and what
the shadow controller, run as the Spark job over those events, must agree with."""

from __future__ import annotations

import json
import logging
import socket
import time
from pathlib import Path

import pytest

from shadow_controller.bridge import BridgeSettings, poll_once, run_bridge
from shadow_controller.bridge_io import ClusterReader, EventsWriter
from shadow_controller.broker import create_topics
from state_machines.events import parse_event
from state_machines.model import ControllerConfig
from streaming.settings.schema import JobSettings
from tests.integration.kafka_helpers import consume_all
from tests.streaming.spark_helpers import run_to_end

pytestmark = [pytest.mark.broker, pytest.mark.spark]


def read_topic(bootstrap: str, topic: str, deadline_s: float = 30.0) -> list:
    return consume_all(bootstrap, topic, 0, deadline_s)


def observe_cluster(bootstrap: str):
    """What the broker reports, read independently of the bridge: broker ids, controller id,
    {topic: {partition: (leader, isr)}}."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    cluster = admin.describe_cluster(request_timeout=10).result()
    metadata = admin.list_topics(timeout=10)
    topics = {
        name: {p.id: (p.leader, sorted(p.isrs)) for p in t.partitions.values()}
        for name, t in metadata.topics.items()
    }
    return sorted(n.id for n in cluster.nodes), cluster.controller.id, topics


def bridge_once(bootstrap: str, events_topic: str, state: Path) -> int:
    return run_bridge(
        BridgeSettings(
            bootstrap,
            topic=events_topic,
            state=str(state),
            once=True,
            max_retries=0,
            request_timeout_s=10.0,
        )
    )


def run_job(spark, bootstrap: str, events: str, decisions: str, checkpoint: Path):
    settings = JobSettings(
        input="kafka",
        output="kafka",
        checkpoint=str(checkpoint),
        bootstrap_servers=bootstrap,
        events_topic=events,
        decisions_topic=decisions,
    )
    return run_to_end(spark, settings)


@pytest.fixture
def topics(bootstrap, new_topic):
    events = new_topic(prefix="events")
    create_topics(bootstrap, {f"{events}.dlq": 1})
    return events, new_topic(prefix="decisions")


def test_bridge_events_drive_the_job_consistently_with_the_broker(
    spark, bootstrap, new_topic, topics, tmp_path
):
    events_topic, decisions_topic = topics
    a, b = new_topic(2, prefix="bridge-a"), new_topic(1, prefix="bridge-b")
    state = tmp_path / "bridge-state.json"

    assert bridge_once(bootstrap, events_topic, state) == 0
    brokers, controller, reported = observe_cluster(bootstrap)
    first = [json.loads(m.value()) for m in read_topic(bootstrap, events_topic)]
    for offset, event in enumerate(first):
        parse_event(event, offset)
    kinds = [e["type"] for e in first]
    assert kinds == (
        ["BrokerStartup"] * len(brokers)
        + ["PartitionStateSnapshot"] * (len(kinds) - len(brokers) - 1)
        + ["ControllerFailover"]
    )
    assert [e["broker_id"] for e in first if e["type"] == "BrokerStartup"] == brokers
    assert first[-1]["controller_id"] == controller and first[-1]["controller_epoch"] == 1
    snapshots = {
        (e["topic"], e["partition"]): e for e in first if e["type"] == "PartitionStateSnapshot"
    }
    for topic in (a, b, events_topic):
        for p, (leader, isr) in reported[topic].items():
            assert (snapshots[topic, p]["leader"], sorted(snapshots[topic, p]["isr"])) == (
                leader,
                isr,
            )

    sink = run_job(spark, bootstrap, events_topic, decisions_topic, tmp_path / "ckpt")
    decisions = [json.loads(m.value()) for m in read_topic(bootstrap, decisions_topic)]
    assert [d for d in decisions if d["type"] == "Divergence"] == []
    failover = len(first) - 1
    # The shadow's state after failover is the cluster's: every partition led where the broker says.
    led = {
        (d["topic"], d["partition"]): (d["leader"], sorted(d["isr"]))
        for d in decisions
        if d["type"] == "LeaderAndIsr" and d["cause_offset"] == failover
    }
    for topic in (a, b):
        assert {(topic, p): li for p, li in reported[topic].items()} == {
            k: v for k, v in led.items() if k[0] == topic
        }

    # Change the cluster: one topic more, one fewer; poll again.
    c = new_topic(3, prefix="bridge-c")
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.delete_topics([b], operation_timeout=10)[b].result(timeout=30)
    deadline = time.monotonic() + 30
    while b in admin.list_topics(timeout=10).topics:
        assert time.monotonic() < deadline, f"{b} still listed after its deletion"
    assert bridge_once(bootstrap, events_topic, state) == 0
    _, _, reported = observe_cluster(bootstrap)
    assert b not in reported
    second = [json.loads(m.value()) for m in read_topic(bootstrap, events_topic)][len(first) :]
    ours = [e for e in second if e.get("topic") in (b, c)]
    assert [e["type"] for e in ours] == ["TopicDeletion", "TopicCreation"] + [
        "ObservedPartitionState"
    ] * 3
    assert ours[1]["partitions"] == {str(p): [reported[c][p][0]] for p in range(3)}
    assert [(e["partition"], e["leader"], sorted(e["isr"])) for e in ours[2:]] == [
        (p, *reported[c][p]) for p in range(3)
    ]

    sink = run_job(spark, bootstrap, events_topic, decisions_topic, tmp_path / "ckpt")
    later = [json.loads(m.value()) for m in read_topic(bootstrap, decisions_topic)][
        len(decisions) :
    ]
    assert [d for d in later if d["type"] == "Divergence"] == []
    # the shadow's initial elections for c are what the broker did, and each observation matched
    elected = {
        d["partition"]: (d["leader"], sorted(d["isr"]))
        for d in later
        if d["type"] == "LeaderAndIsr" and d["topic"] == c and d["election"] == "initial"
    }
    assert elected == reported[c]
    assert sink.observations.get("match", 0) >= 3 and set(sink.observations) == {"match"}
    # and b's deletion started: its replicas were told to stop and delete
    assert {
        d["partition"]
        for d in later
        if d["type"] == "StopReplica" and d["topic"] == b and d["delete_partition"]
    } == {0}


def test_a_restart_with_the_same_state_file_emits_nothing(
    bootstrap, new_topic, topics, tmp_path, caplog
):
    events_topic, _ = topics
    new_topic(2, prefix="bridge-r")
    state = tmp_path / "bridge-state.json"
    assert bridge_once(bootstrap, events_topic, state) == 0
    emitted = len(read_topic(bootstrap, events_topic))
    saved = state.read_text()
    assert emitted > 0

    caplog.set_level(logging.INFO, logger="shadow_controller.bridge")
    assert bridge_once(bootstrap, events_topic, state) == 0
    assert "bridge: 0 events" in caplog.text
    assert len(read_topic(bootstrap, events_topic)) == emitted
    assert state.read_text() == saved


def test_a_crash_between_produce_and_save_re_emits_exactly_that_poll(
    bootstrap, new_topic, topics, tmp_path, monkeypatch
):
    import shadow_controller.bridge as bridge

    events_topic, _ = topics
    state = str(tmp_path / "bridge-state.json")
    reader, writer = ClusterReader(bootstrap, 10.0), EventsWriter(bootstrap, events_topic, 10.0)
    try:
        assert poll_once(reader, writer, state)  # bootstrap
        created = new_topic(2, prefix="bridge-x")

        def crash(path, view):
            raise RuntimeError("crashed before saving")

        with monkeypatch.context() as m:
            m.setattr(bridge, "save_state", crash)
            with pytest.raises(RuntimeError):
                poll_once(reader, writer, state)
        delivered = [json.loads(r.value()) for r in read_topic(bootstrap, events_topic)]
        replayed = poll_once(reader, writer, state)
        assert [e for e in replayed if e.get("topic") == created] == [
            {k: v for k, v in e.items() if k != "ts"}
            for e in delivered
            if e.get("topic") == created
        ]
        assert [e["type"] for e in replayed if e.get("topic") == created] == [
            "TopicCreation",
            "ObservedPartitionState",
            "ObservedPartitionState",
        ]
        assert poll_once(reader, writer, state) == []
    finally:
        reader.close()


def test_an_unreachable_cluster_is_logged_and_retried_without_raising(tmp_path, caplog):
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    waits: list[float] = []
    settings = BridgeSettings(
        f"127.0.0.1:{port}",
        state=str(tmp_path / "state.json"),
        once=True,
        request_timeout_s=0.5,
        max_retries=3,
        backoff_initial_s=0.25,
        backoff_max_s=0.5,
    )
    caplog.set_level(logging.INFO, logger="shadow_controller.bridge")

    assert run_bridge(settings, sleep=waits.append) == 1

    assert waits == [0.25, 0.5, 0.5]  # exponential, capped
    lines = [r.getMessage() for r in caplog.records if r.name == "shadow_controller.bridge"]
    assert len(lines) == 4
    for attempt, line in enumerate(lines[:3], 1):
        assert f"cluster 127.0.0.1:{port} unreachable (attempt {attempt})" in line
        assert "next retry at" in line
    assert "giving up after 3 retries" in lines[3]
    assert not (tmp_path / "state.json").exists()


def test_a_quiet_cluster_gets_a_tick_after_the_tick_interval(bootstrap, topics, tmp_path):
    """Event time must move on in a quiet cluster (the automatic rebalance runs on it): after
    the first poll's events, polls that find nothing emit a ControllerTick once
    `tick_interval_s` passed since the last event, and the job accepts it. The clock is the
    loop's own parameter, so no real time passes."""
    events, _ = topics
    now = [1_000.0]
    polls = [0]

    def sleep(seconds: float) -> None:
        polls[0] += 1
        if polls[0] == 4:
            raise KeyboardInterrupt  # the loop's way out
        now[0] += seconds

    settings = BridgeSettings(
        bootstrap,
        topic=events,
        state=str(tmp_path / "state.json"),
        interval_s=20.0,
        tick_interval_s=30.0,
        request_timeout_s=10.0,
    )
    assert run_bridge(settings, sleep=sleep, clock=lambda: now[0]) == 0
    got = [json.loads(m.value()) for m in read_topic(bootstrap, events)]
    ticks = [e for e in got if e["type"] == "ControllerTick"]
    # polls at 1000 (the cluster's events), 1020 (quiet, 20 s), 1040 (40 s: a tick), 1060 (20 s
    # after it)
    assert [t["ts"] for t in ticks] == [1_040_000]
    assert got[-1] == ticks[-1] and len(got) > 1
    for offset, e in enumerate(got):
        parse_event(e, offset)  # every event the bridge wrote is a valid contract event


def test_detect_reads_the_brokers_answer_and_says_it_cannot_tell(bootstrap, tmp_path):
    """Tansu's ApiVersions answer has no finalized features and no LeaderAndIsr API, as no
    Apache Kafka broker's does: `--detect` says so in one line, through the real client."""
    import subprocess
    import sys

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "shadow_controller.cli",
            "bridge",
            "--bootstrap-server",
            bootstrap,
            "--detect",
            "--max-retries",
            "0",
            "--state",
            str(tmp_path / "s.json"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"cluster {bootstrap} does not say which controller it runs (its ApiVersions "
        "answer has neither the "
        "metadata.version feature nor the LeaderAndIsr API, as every Apache Kafka broker's has one)"
    ]
    assert not (tmp_path / "s.json").exists()


def test_a_shadow_the_bridge_cannot_check_is_fed_with_a_warning(
    bootstrap, topics, tmp_path, caplog
):
    events, _ = topics
    caplog.set_level(logging.INFO, logger="shadow_controller.bridge")
    settings = BridgeSettings(
        bootstrap,
        topic=events,
        state=str(tmp_path / "s.json"),
        once=True,
        max_retries=0,
        shadow=ControllerConfig(mode="kraft"),
        shadow_source="job.toml",
    )
    assert run_bridge(settings) == 0
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warning.endswith("cannot check the shadow's controller.mode (job.toml)")
    assert read_topic(bootstrap, events)  # and the events went out
