"""Immutable values shared by the directory and partition steps.

`LeaderAndIsr` mirrors kafka.api.LeaderAndIsr together with the controller epoch stored
beside it in the partition-state znode (`LeaderIsrAndControllerEpoch`). Its epoch helpers are
Kafka's: every controller write bumps the leader epoch; the partition epoch is the znode
version and only moves when a write is applied (`with_next_partition_epoch`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .speed import quick_init
from .states import LeaderRecoveryState

NO_LEADER = -1
NO_EPOCH = -1
LEADER_DURING_DELETE = -2
EPOCH_DURING_DELETE = -2


@quick_init
@dataclass(frozen=True, slots=True)
class LeaderAndIsr:
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int
    leader_recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED
    controller_epoch: int = 0

    @staticmethod
    def initial(leader: int, isr: tuple[int, ...], controller_epoch: int) -> LeaderAndIsr:
        return LeaderAndIsr(leader, 0, isr, 0, LeaderRecoveryState.RECOVERED, controller_epoch)

    # Constructors rather than dataclasses.replace: these run for every decision, and
    # replace() looks the fields up each time.
    def new_leader_and_isr(self, leader: int, isr: tuple[int, ...]) -> LeaderAndIsr:
        return LeaderAndIsr(
            leader,
            self.leader_epoch + 1,
            isr,
            self.partition_epoch,
            self.leader_recovery_state,
            self.controller_epoch,
        )

    def new_leader(self, leader: int) -> LeaderAndIsr:
        return self.new_leader_and_isr(leader, self.isr)

    def new_epoch(self) -> LeaderAndIsr:
        return self.new_leader_and_isr(self.leader, self.isr)

    def new_recovering_leader_and_isr(self, leader: int, isr: tuple[int, ...]) -> LeaderAndIsr:
        return LeaderAndIsr(
            leader,
            self.leader_epoch + 1,
            isr,
            self.partition_epoch,
            LeaderRecoveryState.RECOVERING,
            self.controller_epoch,
        )

    def written(self, controller_epoch: int) -> LeaderAndIsr:
        """The state as stored by a successful conditional write (`updateLeaderAndIsr`): the
        znode version, which is the partition epoch, moves by one."""
        return LeaderAndIsr(
            self.leader,
            self.leader_epoch,
            self.isr,
            self.partition_epoch + 1,
            self.leader_recovery_state,
            controller_epoch,
        )


@quick_init
@dataclass(frozen=True, slots=True)
class ReplicaAssignment:
    """`ReplicaAssignment` (ControllerContext.scala): the full replica set during a KIP-455
    reassignment plus the adding and removing subsets."""

    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()

    @property
    def origin_replicas(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.adding_replicas)

    @property
    def target_replicas(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.removing_replicas)

    @property
    def is_being_reassigned(self) -> bool:
        return bool(self.adding_replicas or self.removing_replicas)

    def reassign_to(self, target: tuple[int, ...]) -> ReplicaAssignment:
        origin = self.origin_replicas
        full = tuple(dict.fromkeys(target + origin))
        return ReplicaAssignment(
            full,
            tuple(r for r in full if r not in origin),
            tuple(r for r in full if r not in target),
        )

    def remove_replica(self, replica: int) -> ReplicaAssignment:
        return ReplicaAssignment(
            tuple(r for r in self.replicas if r != replica),
            tuple(r for r in self.adding_replicas if r != replica),
            tuple(r for r in self.removing_replicas if r != replica),
        )


@quick_init
@dataclass(frozen=True, slots=True)
class BrokerFact:
    """What the controller knows of one broker id. `registered` is an entry in
    `liveBrokerEpochs` (live or shutting down); a broker is *live* only if registered and
    not shutting down (`ControllerContext.isLiveBroker`)."""

    registered: bool = False
    shutting_down: bool = False
    broker_epoch: int | None = None

    @property
    def live(self) -> bool:
        return self.registered and not self.shutting_down


UNKNOWN_BROKER = BrokerFact()


MODES = ("zk", "kraft")


@dataclass(frozen=True, slots=True)
class ControllerConfig:
    """Cluster-level settings (KafkaConfig / ReplicationConfigs defaults). A topic's own
    configs override `unclean.leader.election.enable`."""

    unclean_leader_election_enable: bool = False
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_per_broker_percentage: int = 10
    leader_imbalance_check_interval_seconds: int = 300
    delete_topic_enable: bool = True
    # inter.broker.protocol.version >= 3.2: LeaderAndIsr carries the KIP-704 recovery state
    # and an unclean leader starts RECOVERING.
    leader_recovery_supported: bool = True
    # Not Kafka: shadow mode. After reporting a divergence, adopt the cluster's observed
    # leader, epochs and ISR so one divergence does not snowball.
    shadow_follow: bool = True
    # Kafka sends UpdateMetadata with every LeaderAndIsr batch and on its own at failover,
    # broker startup and the rest (update_metadata.py); off, the job writes no
    # UpdateMetadata record and skips the fan-out a broker startup's full send needs.
    emit_update_metadata: bool = True
    # The rule set: "zk" (KafkaController, 3.9.0) or "kraft" (the quorum controller,
    # state_machines/kraft/), and what the KRaft rules depend on.
    mode: str = "zk"
    metadata_version: str = "3.9-IV0"
    # the eligible.leader.replicas.version feature (KIP-966): 1 turns ELR on, where
    # metadata.version supports it (4.0-IV1 and later)
    eligible_leader_replicas_version: int = 0
    # the broker's static `min.insync.replicas` (ServerLogConfigs default 1), under a topic's
    # own config and the cluster's dynamic default: the KRaft rules' effective min ISR (ELR)
    # and the operator's views (the min-ISR metrics, `health`) read it; the ZK rules do not
    min_insync_replicas: int = 1
    # kraft mode: unclean.leader.election.interval.ms, how often the quorum controller tries
    # unclean elections for leaderless partitions (ReplicationConfigs, an internal setting)
    unclean_leader_election_interval_ms: int = 300_000

    def __post_init__(self) -> None:
        # ReplicationConfigs: leader.imbalance.check.interval.seconds is atLeast(1)
        if self.leader_imbalance_check_interval_seconds < 1:
            raise ValueError("leader.imbalance.check.interval.seconds must be at least 1")
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        from .kraft.metadata_version import MetadataVersion  # the KRaft rules' own values

        mv = MetadataVersion.from_version_string(self.metadata_version)
        if self.eligible_leader_replicas_version not in (0, 1):
            raise ValueError("eligible.leader.replicas.version must be 0 or 1")
        if self.eligible_leader_replicas_version == 1 and not mv.is_elr_supported:
            # FeatureControlManager: eligible.leader.replicas.version 1 depends on
            # metadata.version 4.0-IV1
            raise ValueError(
                f"eligible.leader.replicas.version 1 needs metadata.version 4.0-IV1 or later, "
                f"not {self.metadata_version}"
            )
        # ServerLogConfigs: min.insync.replicas is atLeast(1)
        if self.min_insync_replicas < 1:
            raise ValueError("min.insync.replicas must be at least 1")
        if self.unclean_leader_election_interval_ms < 1:  # atLeast(1)
            raise ValueError("unclean.leader.election.interval.ms must be at least 1")

    @staticmethod
    def from_properties(props: dict[str, object]) -> ControllerConfig:
        def flag(name: str, default: bool) -> bool:
            value = props.get(name, default)
            return value if isinstance(value, bool) else str(value).strip().lower() == "true"

        known = {
            "unclean.leader.election.enable",
            "auto.leader.rebalance.enable",
            "leader.imbalance.per.broker.percentage",
            "leader.imbalance.check.interval.seconds",
            "delete.topic.enable",
            "leader.recovery.supported",
            "shadow.follow",
            "emit.update.metadata",
            "mode",
            "metadata.version",
            "eligible.leader.replicas.version",
            "min.insync.replicas",
            "unclean.leader.election.interval.ms",
        }
        unknown = sorted(set(props) - known)
        if unknown:
            raise ValueError(f"unknown controller settings: {', '.join(unknown)}")
        return ControllerConfig(
            unclean_leader_election_enable=flag("unclean.leader.election.enable", False),
            auto_leader_rebalance_enable=flag("auto.leader.rebalance.enable", True),
            leader_imbalance_per_broker_percentage=int(
                props.get("leader.imbalance.per.broker.percentage", 10)
            ),  # type: ignore[call-overload]
            leader_imbalance_check_interval_seconds=int(
                props.get("leader.imbalance.check.interval.seconds", 300)
            ),  # type: ignore[call-overload]
            delete_topic_enable=flag("delete.topic.enable", True),
            leader_recovery_supported=flag("leader.recovery.supported", True),
            shadow_follow=flag("shadow.follow", True),
            emit_update_metadata=flag("emit.update.metadata", True),
            mode=str(props.get("mode", "zk")),
            metadata_version=str(props.get("metadata.version", "3.9-IV0")),
            eligible_leader_replicas_version=int(props.get("eligible.leader.replicas.version", 0)),  # type: ignore[call-overload]
            min_insync_replicas=int(props.get("min.insync.replicas", 1)),  # type: ignore[call-overload]
            unclean_leader_election_interval_ms=int(
                props.get("unclean.leader.election.interval.ms", 300_000)
            ),  # type: ignore[call-overload]
        )

    def unclean_enabled_for(
        self,
        topic_configs: dict[str, str] | tuple[tuple[str, str], ...],
        cluster_dynamic: tuple[tuple[str, str], ...] = (),
    ) -> bool:
        """A topic's effective `unclean.leader.election.enable`: its own override, else the
        cluster-wide dynamic default, else this static setting (LogConfig's precedence)."""
        value = dict(topic_configs).get("unclean.leader.election.enable")
        if value is None:
            return self.cluster_unclean_enabled(cluster_dynamic)
        return config_boolean(value) is True

    def cluster_unclean_enabled(self, cluster_dynamic: tuple[tuple[str, str], ...] = ()) -> bool:
        """The cluster-wide default: the dynamic value if one is set, else this setting."""
        value = dict(cluster_dynamic).get("unclean.leader.election.enable")
        if value is None:
            return self.unclean_leader_election_enable
        return config_boolean(value) is True

    def min_isr_for(
        self,
        topic_configs: dict[str, str] | tuple[tuple[str, str], ...],
        cluster_dynamic: tuple[tuple[str, str], ...] = (),
    ) -> tuple[int, str]:
        """A topic's effective `min.insync.replicas` and the level it comes from
        (`MIN_ISR_TOPIC`, `MIN_ISR_DYNAMIC`, `MIN_ISR_STATIC`): its own config, else the
        cluster-wide dynamic default (`BrokerConfigChange`), else this static setting
        (LogConfig's precedence). A level holding anything but a whole number of at least 1
        is passed over: Kafka refuses such a config (atLeast(1)), so it never applies."""
        for configs, level in (
            (dict(topic_configs), MIN_ISR_TOPIC),
            (dict(cluster_dynamic), MIN_ISR_DYNAMIC),
        ):
            value = configs.get(MIN_ISR)
            number = None if value is None else config_int(value)
            if number is not None and number >= 1:
                return number, level
        return self.min_insync_replicas, MIN_ISR_STATIC


MIN_ISR = "min.insync.replicas"

# Java's String.trim: every character up to U+0020 off both ends (Python's str.strip takes
# Unicode spaces, and leaves control characters)
_JAVA_TRIM = "".join(map(chr, range(0x21)))
# Integer.parseInt: a sign, then decimal digits (Character.digit takes any Unicode decimal
# digit, as \d does; Python's int() also takes underscores, which Java refuses)
_JAVA_INT = re.compile(r"[+-]?\d+")


def equals_ignore_case(text: str, word: str) -> bool:
    """Java's `text.equalsIgnoreCase(word)` for an ASCII `word` (Python's upper() takes "ſ"
    to "S" as Character.toUpperCase does; a character that upper() makes two cannot match)."""
    return len(text) == len(word) and text.upper() == word.upper()


def config_boolean(value: str) -> bool | None:
    """A BOOLEAN config's string as Kafka reads it (`ConfigDef.parseType`: trimmed, then
    "true" or "false" ignoring case); None where Kafka throws a ConfigException."""
    trimmed = value.strip(_JAVA_TRIM)
    if equals_ignore_case(trimmed, "true"):
        return True
    if equals_ignore_case(trimmed, "false"):
        return False
    return None


def config_int(value: str) -> int | None:
    """An INT config's string as Kafka reads it (`ConfigDef.parseType`: `Integer.parseInt`
    of the trimmed text); None where Kafka throws."""
    trimmed = value.strip(_JAVA_TRIM)
    if not _JAVA_INT.fullmatch(trimmed) or len(trimmed.lstrip("+-").lstrip("0")) > 10:
        return None
    number = int(trimmed)
    return number if -(2**31) <= number < 2**31 else None


# where a topic's min.insync.replicas comes from (ControllerConfig.min_isr_for)
MIN_ISR_TOPIC, MIN_ISR_DYNAMIC, MIN_ISR_STATIC = "topic", "dynamic", "static"
