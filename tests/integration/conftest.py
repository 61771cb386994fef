"""Fixtures for tests against a real Kafka-protocol broker: one embedded Tansu broker per
test run, the run's SparkSession with `kafka-py` registered, and factories for topics and
records."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator, Sequence

import pytest

from shadow_controller.broker import EmbeddedBroker, create_topics, embedded_broker

_topic_ids = itertools.count()


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    with embedded_broker(log_dir=tmp_path_factory.mktemp("tansu")) as broker:
        yield broker


@pytest.fixture(scope="session")
def bootstrap(kafka_broker: EmbeddedBroker) -> str:
    return kafka_broker.bootstrap_servers


@pytest.fixture(scope="session")
def spark(spark):
    """The run's one SparkSession (tests/conftest.py: local[2], 2 shuffle partitions), with
    `kafka-py` registered whatever the job module does."""
    from streaming.kafka.source import register

    assert spark.conf.get("spark.sql.shuffle.partitions") == "2"
    register(spark)
    return spark


@pytest.fixture
def new_topic(bootstrap: str) -> Callable[..., str]:
    """Factory: a fresh topic with `partitions` partitions, unique per call."""

    def make(partitions: int = 1, prefix: str = "t") -> str:
        name = f"{prefix}-{os.getpid()}-{next(_topic_ids)}"
        create_topics(bootstrap, {name: partitions})
        return name

    return make


Record = tuple[bytes | None, bytes | None]


@pytest.fixture
def produce(bootstrap: str) -> Callable[..., None]:
    """Factory: produce `records` (key, value) to `topic`, optionally to one `partition`.
    `linger_ms` > 0 lets several records share one record batch. Fails unless the broker
    confirms every record."""
    from confluent_kafka import Producer

    def send(
        topic: str, records: Sequence[Record], *, partition: int | None = None, linger_ms: int = 0
    ) -> None:
        producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "linger.ms": linger_ms,
                "batch.num.messages": 10_000,
                "enable.idempotence": True,
            }
        )
        errors: list[object] = []
        confirmed: list[int] = []

        def report(err, msg):
            (errors.append(err) if err is not None else confirmed.append(msg.offset()))

        for key, value in records:
            kwargs = {"partition": partition} if partition is not None else {}
            producer.produce(topic, key=key, value=value, on_delivery=report, **kwargs)
        assert producer.flush(30) == 0, "records still undelivered after 30s"
        assert not errors, errors
        assert len(confirmed) == len(records)

    return send


@pytest.fixture
def checkpoint(tmp_path) -> str:
    return str(tmp_path / "checkpoint")
