"""Which controller a live cluster runs, and whether a shadow's settings match it.

Theory of operation. The bridge asks one broker for its ApiVersions answer (v3 and later
carry the cluster's finalized features, KIP-584) and reads two facts from it:

* **`metadata.version` among the finalized features means KRaft.** Kafka's
  `FinalizedFeatures` (server-common, 3.9.0): "In KRaft mode, we always include the
  metadata version in the features map. In ZK mode, we never include it." Its level is
  the cluster's metadata version (`MetadataVersion.featureLevel`), which gates KRaft's
  version-dependent rules. `eligible.leader.replicas.version` (a feature since Kafka 4.0)
  says whether ELR (KIP-966) is on; in 3.9 there is no such feature, so ELR is off.
* **LeaderAndIsr among the API keys means the ZooKeeper controller.** LeaderAndIsr,
  UpdateMetadata and StopReplica are the ZK controller's requests to brokers; their
  message definitions list `"listeners": ["zkBroker"]`, so a ZK-mode broker advertises them
  and a KRaft broker never does.

An answer with neither (a Kafka-protocol broker that is not Apache Kafka, such as the
embedded Tansu) leaves the rule set unknown: the
bridge says so and checks nothing. A cluster in the middle of a ZK-to-KRaft migration
(ZK brokers under a KRaft controller) answers as ZK brokers do; no broker-side answer
tells it apart (ApiVersions' `ZkMigrationReady` comes from controllers only).

`check` compares the detected rules with a shadow's `ControllerConfig` and returns the one
line that refuses a contradiction, naming the settings that would match.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from state_machines.kraft.metadata_version import FEATURE_LEVELS, MetadataVersion
from state_machines.model import ControllerConfig

# Kafka's feature names (MetadataVersion.FEATURE_NAME; 4.0's EligibleLeaderReplicasVersion)
METADATA_VERSION_FEATURE = "metadata.version"
ELR_FEATURE = "eligible.leader.replicas.version"
# ApiKeys.LEADER_AND_ISR: listed by ZK-mode brokers only (LeaderAndIsrRequest.json)
LEADER_AND_ISR_API_KEY = 4

_BY_LEVEL = {level: mv for mv, level in FEATURE_LEVELS.items()}
_NEWEST = max(FEATURE_LEVELS, key=FEATURE_LEVELS.__getitem__)


@dataclass(frozen=True, slots=True)
class ClusterRules:
    """What a broker's ApiVersions answer says of its controller. `mode` is "zk", "kraft",
    or None (cannot tell). In kraft mode, `level` is the metadata.version feature level and
    `elr` the eligible.leader.replicas.version level (0 when the feature is absent)."""

    mode: str | None
    level: int | None = None
    elr: int = 0

    @property
    def metadata_version(self) -> MetadataVersion | None:
        """The level's version, if this build knows it (levels past 4.0-IV3 are newer)."""
        return None if self.level is None else _BY_LEVEL.get(self.level)

    def describe(self) -> str:
        if self.mode == "zk":
            return "runs the ZooKeeper controller (its brokers serve LeaderAndIsr)"
        if self.mode is None:
            return (
                "does not say which controller it runs (its ApiVersions answer has neither the "
                "metadata.version feature nor the LeaderAndIsr API, as every Apache Kafka "
                "broker's has one)"
            )
        mv = self.metadata_version
        version = (
            f"{mv.value} (level {self.level})"
            if mv
            else f"level {self.level}, newer than {_NEWEST.value}"
        )
        return (
            f"runs KRaft at metadata.version {version}, eligible.leader.replicas.version {self.elr}"
        )

    def settings(self) -> str:
        """The shadow's settings that match, as TOML under [controller]; empty if unknown."""
        if self.mode == "zk":
            return 'mode = "zk"'
        if self.mode is None:
            return ""
        mv = self.metadata_version or _NEWEST
        elr = f", eligible.leader.replicas.version = {self.elr}" if self.elr else ""
        return f'mode = "kraft", metadata.version = "{mv.value}"{elr}'


def detect(finalized: Mapping[str, int], api_keys: Collection[int]) -> ClusterRules:
    """The rules of a broker whose ApiVersions answer finalizes `finalized` (feature name ->
    max version level) and lists `api_keys`."""
    level = finalized.get(METADATA_VERSION_FEATURE)
    if level is not None:
        return ClusterRules("kraft", int(level), int(finalized.get(ELR_FEATURE, 0)))
    if LEADER_AND_ISR_API_KEY in api_keys:
        return ClusterRules("zk")
    return ClusterRules(None)


def check(rules: ClusterRules, config: ControllerConfig) -> str | None:
    """None when a shadow with `config` runs the cluster's rules (or the cluster does not
    say), else what contradicts them, as the clause of one line."""
    if rules.mode is None:
        return None
    if config.mode != rules.mode:
        return f'the shadow runs controller.mode = "{config.mode}"'
    if rules.mode == "zk":
        return None
    ours = MetadataVersion.from_version_string(config.metadata_version)
    theirs = rules.metadata_version
    if theirs is None:
        # A newer level than this build knows: its newest version is the closest rule set.
        if ours is not _NEWEST:
            return f'the shadow runs metadata.version = "{config.metadata_version}"'
    elif ours is not theirs:
        return f'the shadow runs metadata.version = "{config.metadata_version}"'
    if config.eligible_leader_replicas_version != rules.elr:
        return (
            "the shadow runs eligible.leader.replicas.version = "
            f"{config.eligible_leader_replicas_version}"
        )
    return None
