"""The errors of the Kafka connector and writers, under the project's root error.

A broker that does not answer is `BrokerUnavailable`, waited out by whoever meets it
(`outage.py`); the others fail what they belong to: a read, a task, a micro-batch."""

from __future__ import annotations

from state_machines.errors import ShadowControllerError


class KafkaSourceError(ShadowControllerError):
    """Bad options, or a Kafka read that cannot return the range it was asked for."""


class BrokerUnavailable(KafkaSourceError):
    """The broker did not answer in time (a timeout, a transport error): an outage, which
    is waited out, never a reason to fail."""


class DataLossError(KafkaSourceError):
    """Records the query should read no longer exist (retention, a deleted or recreated
    topic, a truncated log). Raised only with `failOnDataLoss=true` (the default)."""


class KafkaSinkError(ShadowControllerError):
    """Bad sink options or input schema."""


class DeliveryFailed(ShadowControllerError):
    """The broker did not confirm every record; whatever they belong to must not commit."""


class WriteAbandoned(DeliveryFailed):
    """The wait for the broker was given up (`cancel` was set); unconfirmed records were dropped."""
