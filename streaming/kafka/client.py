"""confluent-kafka clients as the connector uses them: their librdkafka log kept quiet, their
errors sorted into an outage (no answer: waited out) or a failure, and a consumer's
messages taken as they come."""

from __future__ import annotations

import logging
from typing import Any

from .errors import BrokerUnavailable, KafkaSourceError

# messages taken from a consumer at once; also the rows of one Arrow batch a read yields
READ_BATCH_ROWS = 8192


def _permanent_errors() -> frozenset[int]:
    from confluent_kafka import KafkaError as E

    return frozenset(
        {
            E.TOPIC_AUTHORIZATION_FAILED,
            E.GROUP_AUTHORIZATION_FAILED,
            E.CLUSTER_AUTHORIZATION_FAILED,
            E.SASL_AUTHENTICATION_FAILED,
            E._AUTHENTICATION,
            E._SSL,
            E._INVALID_ARG,
            E._UNKNOWN_PARTITION,
        }
    )


PERMANENT_ERRORS = _permanent_errors()


def _outage_errors() -> frozenset[int]:
    from confluent_kafka import KafkaError as E

    return frozenset(
        {
            E._TIMED_OUT,
            E._TIMED_OUT_QUEUE,
            E._TRANSPORT,
            E._ALL_BROKERS_DOWN,
            E._RESOLVE,
            E.REQUEST_TIMED_OUT,
            E.NETWORK_EXCEPTION,
            E.BROKER_NOT_AVAILABLE,
            E.LEADER_NOT_AVAILABLE,
            E.NOT_LEADER_FOR_PARTITION,
        }
    )


# what a query gets from a broker that is away (or has no leader yet): waited out
OUTAGE_ERRORS = _outage_errors()


# librdkafka logs every failed connection attempt and timed-out request (many lines a
# second while a broker is away) on stderr; the connector reports an outage itself
# (`outage.py`), so the clients' log goes to this logger, silent unless lowered.
# A client configured with `debug` keeps librdkafka's own log.
CLIENT_LOG = logging.getLogger("kafka_py.librdkafka")
CLIENT_LOG.setLevel(logging.CRITICAL)
CLIENT_LOG.propagate = False


def quiet(config: dict[str, Any]) -> dict[str, Any]:
    """`config` with librdkafka's log sent to CLIENT_LOG."""
    return config if "debug" in config or "logger" in config else {**config, "logger": CLIENT_LOG}


def answer(what: str, call: Any) -> Any:
    """`call()`, its client errors sorted: no answer is BrokerUnavailable, anything else
    KafkaSourceError."""
    from confluent_kafka import KafkaException

    try:
        return call()
    except KafkaException as exc:
        error = exc.args[0] if exc.args else exc
        raise sorted_error(what, error) from None


def sorted_error(what: str, error: Any) -> KafkaSourceError:
    code = error.code() if hasattr(error, "code") else None
    fatal = error.fatal() if hasattr(error, "fatal") else False
    if not fatal and code in OUTAGE_ERRORS:
        return BrokerUnavailable(f"{what}: {error}")
    return KafkaSourceError(f"{what}: {error}")


def next_messages(consumer: Any, timeout_s: float) -> list[Any]:
    """What the consumer has now, or else the first message within `timeout_s`
    (`consume(n, timeout)` alone waits out the whole timeout unless `n` messages come)."""
    messages: list[Any] = consumer.consume(num_messages=READ_BATCH_ROWS, timeout=0)
    if messages:
        return messages
    message = consumer.poll(timeout_s)
    return [message] if message is not None else []
