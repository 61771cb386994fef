"""What the KRaft invariants read of a topic's configs, as ReplicationControlManager does
(apache/kafka 3.9.0): unclean election allowed, and the effective min ISR.
"""

from __future__ import annotations

from typing import Any

from state_machines.model import ControllerConfig

State = dict[str, Any]


class TopicConfigs:
    """A topic's unclean-election setting and effective min ISR, from the state JSON."""

    def __init__(self, config: ControllerConfig) -> None:
        self.config = config

    def unclean_allowed(self, state: State, topic: str) -> bool:
        """`uncleanLeaderElectionEnabledForTopic`: topic config, cluster dynamic, static."""
        value = (
            state["topics"].get(topic, {}).get("configs", {}).get("unclean.leader.election.enable")
        )
        if value is None:
            value = state.get("dynamic_configs", {}).get("unclean.leader.election.enable")
        return (
            self.config.unclean_leader_election_enable if value is None else value.lower() == "true"
        )

    def effective_min_isr(self, before: State, after: State, topic: str) -> int:
        """`getTopicEffectiveMinIsr`: min.insync.replicas (topic, cluster, static), at most
        partition 0's replication factor (`parts.get(0).replicas.length`, as the builder saw
        it: before the event)."""
        value = after["topics"].get(topic, {}).get("configs", {}).get("min.insync.replicas")
        if value is None:
            value = after.get("dynamic_configs", {}).get("min.insync.replicas")
        configured = self.config.min_insync_replicas if value is None else int(value)
        p0 = before["partitions"].get(f"{topic}-0") or after["partitions"].get(f"{topic}-0")
        return min(configured, len(p0["replicas"])) if p0 else configured
