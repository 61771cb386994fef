"""KRaft's config requests: `incrementalAlterConfigs` as the quorum controller handles a
TopicConfigChange or a BrokerConfigChange.

Source: apache/kafka 3.9.0, metadata/src/main/java/org/apache/kafka/controller/
ConfigurationControlManager.java (`incrementalAlterConfig`, `incrementalAlterConfigResource`;
4.0's `createClearElrRecordsAsNeeded` and `isDisallowedClusterMinIsrTransition`) and
ControllerConfigurationValidator.java (the topic configs the rules read). The handlers are
cases of `kraft_directory_step` (quorum_controller.py); `topic_requests.py` uses the
validation and the record writing for a creation's configs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from .. import event_types as ev
from ..directory import CONTROLLER_KEY, topic_key
from ..model import config_int
from ..outputs import StateChangeFailedRecord
from .commands import ClearElr
from .java_hash_set import string_hash_map_order
from .kraft_view import MIN_INSYNC_REPLICAS, KraftView
from .outputs import clear_elr_record, config_record
from .records import (
    CONFIG_RESOURCE_BROKER,
    CONFIG_RESOURCE_TOPIC,
    ApiMessageAndVersion,
    ConfigRecord,
)


def invalid_topic_config(configs: Iterable[tuple[str, str]]) -> str | None:
    """`incrementalAlterConfig`'s validation of a topic's configs that the rules read
    (ControllerConfigurationValidator -> LogConfig.validate, ConfigDef.parse):
    min.insync.replicas is an INT (`Integer.parseInt` of the trimmed text), atLeast(1). The
    ConfigException's message, or None."""
    value = dict(configs).get(MIN_INSYNC_REPLICAS)
    if value is None:
        return None
    number = config_int(value)
    prefix = "Invalid value {} for configuration " + MIN_INSYNC_REPLICAS
    if number is None:
        return prefix.format(value) + ": Not a number of type INT"
    if number < 1:
        return prefix.format(number) + ": Value must be at least 1"
    return None


def request_order(configs: Iterable[str]) -> tuple[str, ...]:
    """The order Kafka walks a request's config names in, so the order of its ConfigRecords
    (`incrementalAlterConfigResource` iterates the HashMap the request was read into:
    `ReplicationControlManager.computeConfigChanges`, ControllerApis'
    incrementalAlterConfigs). The request's own order, which decides only between names in
    one bucket, is taken as sorted (the contract's configs are an object)."""
    return string_hash_map_order(sorted(configs))


def _config_changes(
    before: Iterable[tuple[str, str | None]], after: Iterable[tuple[str, str | None]]
) -> list[tuple[str, str | None]]:
    """The topic's changed configs (a TopicConfigChange carries the whole set: Kafka writes
    records only for values that change), in the request's order."""
    old, new = dict(before), dict(after)
    changed = [k for k in {*old, *new} if old.get(k) != new.get(k)]
    return [(k, new.get(k)) for k in request_order(changed)]


def topic_config_change(d: KraftView, e: ev.TopicConfigChange) -> None:
    rec = d.topic(e.topic)
    if rec is None:
        return
    invalid = invalid_topic_config(e.configs)
    if invalid is not None:
        # incrementalAlterConfigs answers INVALID_CONFIG and writes nothing: answered on the
        # topic's first partition
        d.emit(
            StateChangeFailedRecord(
                e.topic,
                min(rec.partition_ids(), default=0),
                None,
                "TopicConfigChange",
                f"INVALID_CONFIG: {invalid}",
            )
        )
        return
    write_configs(
        d,
        [
            ConfigRecord(CONFIG_RESOURCE_TOPIC, e.topic, name, value)
            for name, value in _config_changes(rec.configs, e.configs)
        ],
    )
    d.put(topic_key(e.topic), replace(rec, configs=e.configs))


def broker_config_change(d: KraftView, e: ev.BrokerConfigChange) -> None:
    c = d.controller
    if _elr_enabled(d) and any(
        key == MIN_INSYNC_REPLICAS and value is None for key, value in e.configs
    ):
        # ConfigurationControlManager.isDisallowedClusterMinIsrTransition (4.0, KAFKA-16540):
        # "Cluster-level min.insync.replicas cannot be removed while ELR is enabled": the
        # request fails with INVALID_CONFIG and nothing is written (3.9 has no such rule)
        return
    merged = c.configs_after(e.configs)
    # incrementalAlterConfigResource: a BROKER resource gets a record for every key of the
    # request, changed or not (KAFKA-14136: "to trigger reloads on the brokers")
    requested = dict(e.configs)
    write_configs(
        d,
        [
            ConfigRecord(CONFIG_RESOURCE_BROKER, "", name, requested[name])
            for name in request_order(requested)
        ],
    )
    d.put(CONTROLLER_KEY, replace(c, dynamic_configs=merged))


def _elr_enabled(d: KraftView) -> bool:
    """FeatureControlManager.isElrFeatureEnabled: eligible.leader.replicas.version is 1 (the
    settings allow it only at metadata.version 4.0-IV1 and later)."""
    return d.config.eligible_leader_replicas_version >= 1


def write_configs(d: KraftView, records: list[ConfigRecord]) -> None:
    """ConfigurationControlManager.incrementalAlterConfig's records: the ConfigRecords, then
    (4.0, `createClearElrRecordsAsNeeded`, with ELR on) a ClearElrRecord for each one that
    sets or removes min.insync.replicas: for its topic, or for every topic when it is the
    cluster's. Kafka 3.9 has no ClearElrRecord, and 4.0 writes one even when the value is
    unchanged (apache/kafka#20237's review). Its replay empties the ELR and last known ELR
    of each partition that has one (`ClearElr`)."""
    for r in records:
        d.emit(config_record(ApiMessageAndVersion(r, 0)))
    if not _elr_enabled(d):
        return
    for r in records:
        if r.name != MIN_INSYNC_REPLICAS:
            continue
        scope = r.resource_name if r.resource_type == CONFIG_RESOURCE_TOPIC else ""
        d.emit(clear_elr_record(scope))
        for topic in [scope] if scope else sorted(d.controller.topics):
            rec = d.topic(topic)
            for p in rec.partition_ids() if rec is not None else ():
                d.ksend(topic, p, ClearElr())
