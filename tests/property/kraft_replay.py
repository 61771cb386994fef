"""A tiny replayer of KRaft's partition records, from the decision documents alone.

`replay_record` is `new PartitionRegistration(PartitionRecord)` and
`PartitionRegistration.merge(PartitionChangeRecord)` (apache/kafka 3.9.0,
metadata/src/main/java/org/apache/kafka/metadata/PartitionRegistration.java) over the
state-JSON form of a registration (`Engine.state_json()["partitions"][key]`), written here
without the engine's code so that it cross-checks the record writer against the state.
"""

from __future__ import annotations

from typing import Any

State = dict[str, Any]
Rec = dict[str, Any]

# Kafka's Uuid(0, 0), `DirectoryId.MIGRATING`: the directory of a replica before KIP-858
MIGRATING = "AAAAAAAAAAAAAAAAAAAAAA"
RECOVERY_STATES = {0: "RECOVERED", 1: "RECOVERING"}
# PartitionChangeRecord.json's fields (the document's snake_case names) -> the registration's
CHANGE_FIELDS = (
    "isr",
    "leader",
    "replicas",
    "removing_replicas",
    "adding_replicas",
    "leader_recovery_state",
    "directories",
    "eligible_leader_replicas",
    "last_known_elr",
)


def replay_record(reg: dict[str, Any] | None, doc: Rec) -> dict[str, Any]:
    """A partition record document replayed onto a registration (state-JSON form):
    `new PartitionRegistration(PartitionRecord)` and `PartitionRegistration.merge`.
    A set field replaces; a set `leader` (any value) bumps the leader epoch; every record
    bumps the partition epoch; absent or all-MIGRATING directories become one MIGRATING
    per replica (`defaultToMigrating`)."""
    if doc["type"] == "PartitionRecord":
        new = {
            "replicas": doc["replicas"],
            "adding_replicas": doc["adding_replicas"],
            "removing_replicas": doc["removing_replicas"],
            "leader": doc["leader"],
            "leader_epoch": doc["leader_epoch"],
            "isr": doc["isr"],
            "partition_epoch": doc["partition_epoch"],
            "leader_recovery_state": RECOVERY_STATES[doc["leader_recovery_state"]],
            "eligible_leader_replicas": doc.get("eligible_leader_replicas", []),
            "last_known_elr": doc.get("last_known_elr", []),
            "directories": doc.get("directories", []),
        }
    else:
        assert reg is not None, (
            f"[documents-replay] a PartitionChangeRecord for an unknown partition: {doc}"
        )
        new = dict(reg)
        for f in CHANGE_FIELDS:
            if f in doc:
                new[f] = RECOVERY_STATES[doc[f]] if f == "leader_recovery_state" else doc[f]
        if "leader" in doc:
            new["leader_epoch"] = reg["leader_epoch"] + 1
        new["partition_epoch"] = reg["partition_epoch"] + 1
    if all(d == MIGRATING for d in new["directories"]):
        new["directories"] = [MIGRATING] * len(new["replicas"])
    return new


class DocumentReplayer:
    """The partitions as the decision documents alone give them: PartitionRecord and
    PartitionChangeRecord replayed, RemoveTopicRecord dropping the topic's partitions,
    ClearElrRecord emptying ELRs."""

    def __init__(self) -> None:
        self.partitions: dict[str, dict[str, Any]] | None = None

    def step(self, before: State, records: list[Rec]) -> None:
        if self.partitions is None:
            if not before["active"]:
                return
            self.partitions = {k: dict(p) for k, p in before["partitions"].items()}
        for r in records:
            if r["type"] == "RemoveTopicRecord":
                for key in [k for k in self.partitions if k.rpartition("-")[0] == r["topic"]]:
                    del self.partitions[key]
            elif r["type"] == "ClearElrRecord":
                # ReplicationControlManager.removeTopicElrs (4.0): a merge, so a partition epoch
                # bump, only where there is an ELR or a last known ELR to empty
                for key, p in self.partitions.items():
                    if (not r["topic_name"] or key.rpartition("-")[0] == r["topic_name"]) and (
                        p["eligible_leader_replicas"] or p["last_known_elr"]
                    ):
                        self.partitions[key] = {
                            **p,
                            "eligible_leader_replicas": [],
                            "last_known_elr": [],
                            "partition_epoch": p["partition_epoch"] + 1,
                        }
            elif r["type"] in ("PartitionRecord", "PartitionChangeRecord"):
                key = f"{r['topic']}-{r['partition']}"
                self.partitions[key] = replay_record(self.partitions.get(key), r)
