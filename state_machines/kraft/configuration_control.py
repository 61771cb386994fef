"""KRaft's `ConfigurationControlManager` reads of the configs its rules depend on.

Source: metadata/src/main/java/org/apache/kafka/controller/ConfigurationControlManager.java
and metadata/src/main/java/org/apache/kafka/metadata/KafkaConfigSchema.java (apache/kafka
3.9.0). The quorum controller stores a config as the string the request carried (ConfigDef's
validation trims, the stored value is not trimmed) and resolves a topic's effective value
with `resolveEffectiveTopicConfig`: the topic's own config, else the cluster's dynamic
default (a ConfigRecord for the default broker resource, ""), else the controller's static
setting. The ZooKeeper rules read the same configs through LogConfig, which trims
(model.ControllerConfig.unclean_enabled_for); the two differ on a value like " true".
"""

from __future__ import annotations

from collections.abc import Iterable

from ..model import ControllerConfig, equals_ignore_case

UNCLEAN_LEADER_ELECTION_ENABLE = "unclean.leader.election.enable"


def unclean_leader_election_enabled_for_topic(
    config: ControllerConfig,
    topic_configs: Iterable[tuple[str, str]],
    cluster_configs: Iterable[tuple[str, str]],
) -> bool:
    """`uncleanLeaderElectionEnabledForTopic`: the effective value's raw string through
    `Boolean.parseBoolean` ("true" in any case, untrimmed; an empty string is false)."""
    value = dict(topic_configs).get(UNCLEAN_LEADER_ELECTION_ENABLE)
    if value is None:
        value = dict(cluster_configs).get(UNCLEAN_LEADER_ELECTION_ENABLE)
    if value is None:
        return config.unclean_leader_election_enable
    return equals_ignore_case(value, "true")
