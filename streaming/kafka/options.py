"""The options of the `kafka-py` source (`source.py`), parsed once into `SourceOptions`.

Options (Spark's names): `kafka.bootstrap.servers`; one of `subscribe` (comma list),
`subscribePattern` (full-match regex) or `assign` (`{"topic": [0, 1]}`); `startingOffsets`
(`earliest` | `latest` | `{"topic": {"0": offset}}` naming every partition, -2 earliest, -1
latest; default latest, earliest for batch reads); `endingOffsets` (batch only, default
latest); `maxOffsetsPerTrigger`; `failOnDataLoss` (default true);
`kafkaConsumer.pollTimeoutMs` (no-progress deadline of a read while the broker answers,
default 120000; see `outage.py`). Every other `kafka.*` option goes to confluent-kafka as
is, so it must be a librdkafka property (`kafka.security.protocol`, `kafka.sasl.mechanism`,
`kafka.sasl.username`, `kafka.ssl.ca.location`, ...; Java-only settings such as
`sasl.jaas.config` are rejected by librdkafka). Extra: `endOffsetProbeTimeoutMs` (default
10000; also the limit of each metadata and offset query); `shadow.pauseFile` (while this
file exists no new data is admitted: the job's stop) and `shadow.outageFile` (where an
outage is reported; default `BROKER_OUTAGE` next to the pause file). Refused:
`minOffsetsPerTrigger`, `maxTriggerDelay`, `includeHeaders`, `minPartitions`, the
`*ByTimestamp` offsets.

Offsets are Spark's Kafka source offsets, `{"topic": {"partition": next offset}}`
(`offsets_to_json`, `offsets_from_json`).
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .client import quiet
from .errors import DataLossError, KafkaSourceError
from .outage import outage_file_for

log = logging.getLogger(__name__)

SHORT_NAME = "kafka-py"

EARLIEST = -2
LATEST = -1
# Spark's own Kafka source options this one refuses rather than silently ignores.
UNSUPPORTED_OPTIONS = (
    "minoffsetspertrigger",
    "maxtriggerdelay",
    "includeheaders",
    "minpartitions",
    "startingoffsetsbytimestamp",
    "endingoffsetsbytimestamp",
)
# Client settings the connector owns: offsets are tracked by Spark, never by the group.
FORBIDDEN_KAFKA_OPTIONS = (
    "auto.offset.reset",
    "enable.auto.commit",
    "enable.auto.offset.store",
    "enable.partition.eof",
)

TopicPartition = tuple[str, int]
Offsets = dict[TopicPartition, int]


def offsets_to_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for topic, partition in sorted(offsets):
        out.setdefault(topic, {})[str(partition)] = int(offsets[(topic, partition)])
    return out


def offsets_from_json(value: Mapping[str, Mapping[str, int]]) -> Offsets:
    return {(topic, int(p)): int(o) for topic, parts in value.items() for p, o in parts.items()}


@dataclass(frozen=True, slots=True)
class SourceOptions:
    kafka_config: tuple[tuple[str, str], ...]
    subscribe: tuple[str, ...] = ()
    subscribe_pattern: str | None = None
    assign: tuple[TopicPartition, ...] = ()
    starting_offsets: str = "latest"
    ending_offsets: str = "latest"
    max_offsets_per_trigger: int | None = None
    fail_on_data_loss: bool = True
    poll_timeout_s: float = 120.0
    probe_timeout_s: float = 10.0
    # the job's stop request (streaming.runner): while this file exists, no new data is admitted
    pause_file: str | None = None
    # where a broker outage is reported for the job (see `outage.py`)
    outage_file: str | None = None

    @classmethod
    def parse(cls, options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
        opts = {k.lower(): v for k, v in options.items()}
        for name in UNSUPPORTED_OPTIONS:
            if name in opts:
                raise KafkaSourceError(f"option {name!r} is not supported by {SHORT_NAME}")
        config = {k[len("kafka.") :]: v for k, v in opts.items() if k.startswith("kafka.")}
        if "bootstrap.servers" not in config:
            raise KafkaSourceError("option 'kafka.bootstrap.servers' is required")
        for name in FORBIDDEN_KAFKA_OPTIONS:
            if name in config:
                raise KafkaSourceError(
                    f"option 'kafka.{name}' is managed by {SHORT_NAME}; remove it"
                )
        strategies = [k for k in ("subscribe", "subscribepattern", "assign") if k in opts]
        if len(strategies) != 1:
            raise KafkaSourceError(
                "exactly one of 'subscribe', 'subscribePattern' or 'assign' is required"
            )
        subscribe = tuple(t.strip() for t in opts.get("subscribe", "").split(",") if t.strip())
        if "subscribe" in opts and not subscribe:
            raise KafkaSourceError("option 'subscribe' names no topic")
        assign: tuple[TopicPartition, ...] = ()
        if "assign" in opts:
            parsed = json_option("assign", opts["assign"])
            assign = tuple(sorted((t, int(p)) for t, ps in parsed.items() for p in ps))
        max_offsets = opts.get("maxoffsetspertrigger")
        if max_offsets is not None and int(max_offsets) <= 0:
            raise KafkaSourceError("option 'maxOffsetsPerTrigger' must be positive")
        return cls(
            kafka_config=tuple(sorted(config.items())),
            subscribe=subscribe,
            subscribe_pattern=opts.get("subscribepattern"),
            assign=assign,
            starting_offsets=opts.get(
                "startingoffsets", "latest" if streaming else "earliest"
            ).strip(),
            ending_offsets=opts.get("endingoffsets", "latest").strip(),
            max_offsets_per_trigger=int(max_offsets) if max_offsets is not None else None,
            fail_on_data_loss=opts.get("failondataloss", "true").strip().lower() != "false",
            poll_timeout_s=int(opts.get("kafkaconsumer.polltimeoutms", "120000")) / 1000.0,
            pause_file=opts.get("shadow.pausefile"),
            outage_file=opts.get("shadow.outagefile")
            or (
                outage_file_for(opts["shadow.pausefile"]) if opts.get("shadow.pausefile") else None
            ),
            probe_timeout_s=int(opts.get("endoffsetprobetimeoutms", "10000")) / 1000.0,
        )

    @property
    def servers(self) -> str:
        return dict(self.kafka_config)["bootstrap.servers"]

    def paused(self) -> bool:
        return bool(self.pause_file) and os.path.exists(self.pause_file)  # type: ignore[arg-type]

    def consumer_config(self, **overrides: Any) -> dict[str, Any]:
        config: dict[str, Any] = {
            "group.id": f"spark-kafka-py-{uuid.uuid4()}",
            **dict(self.kafka_config),
        }
        config.update(
            {
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "enable.partition.eof": True,
                "auto.offset.reset": "error",
            }
        )
        config.update(overrides)
        return quiet(config)


def json_option(name: str, raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise KafkaSourceError(f"option {name!r} is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise KafkaSourceError(f"option {name!r} must be a JSON object")
    return value


def report_data_loss(options: SourceOptions, message: str) -> None:
    if options.fail_on_data_loss:
        raise DataLossError(
            f"{message}. Some data may have been lost; set failOnDataLoss=false "
            "to continue from what the broker still has"
        )
    log.warning("%s; continuing because failOnDataLoss=false", message)
