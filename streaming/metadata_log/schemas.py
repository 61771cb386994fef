"""The layouts of KRaft's metadata records and of the raft control records, in the project's
own form: one table per record, read once at import into `Schema` values.

Source: apache/kafka's `metadata/src/main/resources/common/metadata/*.json` (branch 3.9, trunk
of October 2024, and the 4.x additions: ClearElrRecord, UnregisterControllerRecord; the
pre-3.0 names there, e.g. RemoveFeatureLevelRecord as key 16, are left out as Kafka 3.9
and 4.x leave them out of MetadataRecordType) and, for the control records,
`clients/src/main/resources/common/message/{LeaderChangeMessage,SnapshotHeaderRecord,
SnapshotFooterRecord,KRaftVersionRecord,VotersRecord}.json`. Every record here is
flexible in every version ("flexibleVersions": "0+"), so every body and every struct ends
with a tagged-field section.

A table line is `Name type versions [tag=N] [null=V+] [default=X]`:
- `versions` is the field's "versions" (`0+`, `2+`, `0-1`); a tagged field's
  "taggedVersions" equal its "versions" in every schema Kafka has here, so
  the table has no column for them;
- `null=V+` is "nullableVersions";
- `default=` is the JSON "default" (`null`, a number, `true`/`false`); without it, Kafka's
  generator's default: 0, false, "", an empty array, the zero Uuid;
- types: int8 int16 uint16 int32 int64 float64 bool uuid string bytes, `[]T` an array of
  one of those, `[]Name` an array of structs and `{}Name` a single struct, whose fields are
  the lines indented under it.
Record-level: api key (metadata records only), name, "validVersions".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"  # Uuid.ZERO_UUID.toString()

PRIMITIVES = frozenset(
    {"int8", "int16", "uint16", "int32", "int64", "float64", "bool", "uuid", "string", "bytes"}
)


@dataclass(frozen=True, slots=True)
class Versions:
    """A version range as the JSON writes it: `0+` is (0, None), `0-1` is (0, 1)."""

    low: int
    high: int | None

    def __contains__(self, version: object) -> bool:
        return (
            isinstance(version, int)
            and version >= self.low
            and (self.high is None or version <= self.high)
        )

    @staticmethod
    def parse(text: str) -> Versions:
        if text.endswith("+"):
            return Versions(int(text[:-1]), None)
        low, _, high = text.partition("-")
        return Versions(int(low), int(high or low))


NONE = Versions(0, -1)  # no version


@dataclass(frozen=True, slots=True)
class Field:
    name: str  # Kafka's JSON name, e.g. "LeaderRecoveryState"
    key: str  # its snake_case form, the key in a decoded record's fields
    type: str  # a primitive, "[]<primitive>", "[]" (struct array) or "{}" (struct)
    versions: Versions
    nullable: Versions
    tag: int | None
    default: object
    fields: tuple[Field, ...] = ()  # a struct's fields

    def present(self, version: int) -> bool:
        return version in self.versions

    def tagged(self, version: int) -> bool:
        return self.tag is not None and version in self.versions

    def is_nullable(self, version: int) -> bool:
        return version in self.nullable

    def is_default(self, value: object) -> bool:
        """The generators' non-default check, which decides whether a tagged field is
        written (and shown by the JsonConverters): null against a null default, an empty
        array against an empty one, equality otherwise."""
        if self.default is None or value is None:
            return value is None and self.default is None
        if self.type.startswith("[]"):
            return len(value) == 0  # type: ignore[arg-type]
        return bool(value == self.default)


@dataclass(frozen=True, slots=True)
class Schema:
    api_key: int  # -1 for a control record
    name: str
    valid: Versions
    fields: tuple[Field, ...]


_SPECIAL_KEYS = {"KRaftVersion": "kraft_version", "KRaftVersionFeature": "kraft_version_feature"}


def snake(name: str) -> str:
    """Kafka's JSON field name in snake_case: TopicId -> topic_id, EndPoints -> end_points."""
    if name in _SPECIAL_KEYS:
        return _SPECIAL_KEYS[name]
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _default(type_: str, text: str | None) -> object:
    if text == "null":
        return None
    if type_ in ("int8", "int16", "uint16", "int32", "int64"):
        return int(text or 0)
    if type_ == "float64":
        return float(text or 0)
    if type_ == "bool":
        return text == "true"
    if type_ == "uuid":
        return ZERO_UUID
    if type_ == "string":
        return text or ""
    if type_ == "bytes":
        return b""
    if type_.startswith("[]"):
        return ()
    return None  # a struct: filled in by the decoder from its own defaults


def _parse_fields(lines: list[tuple[int, str]], indent: int) -> tuple[Field, ...]:
    fields: list[Field] = []
    while lines and lines[0][0] == indent:
        _, text = lines.pop(0)
        name, type_, versions, *opts = text.split()
        options = dict(opt.split("=", 1) for opt in opts)
        sub: tuple[Field, ...] = ()
        kind = type_
        if type_.startswith("[]") and type_[2:] not in PRIMITIVES:
            kind = "[]"
        elif type_.startswith("{}"):
            kind = "{}"
        elif type_ not in PRIMITIVES and type_[2:] not in PRIMITIVES:
            raise ValueError(f"unknown type {type_!r} of {name}")
        if kind in ("[]", "{}"):
            sub = _parse_fields(lines, lines[0][0]) if lines and lines[0][0] > indent else ()
        fields.append(
            Field(
                name=name,
                key=snake(name),
                type=kind,
                versions=Versions.parse(versions),
                nullable=Versions.parse(options["null"]) if "null" in options else NONE,
                tag=int(options["tag"]) if "tag" in options else None,
                default=_default(kind, options.get("default")),
                fields=sub,
            )
        )
    return tuple(fields)


def _schema(api_key: int, name: str, valid: str, table: str) -> Schema:
    lines = [
        (len(line) - len(line.lstrip()), line.strip())
        for line in table.splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]
    base = lines[0][0] if lines else 0
    fields = _parse_fields(lines, base)
    if lines:
        raise ValueError(f"{name}: bad indentation at {lines[0][1]!r}")
    return Schema(api_key, name, Versions.parse(valid), fields)


# -- metadata records (MetadataRecordType) ---------------------------------------------------

_ENDPOINT = """
        Name              string    0+
        Host              string    0+
        Port              uint16    0+
        SecurityProtocol  int16     0+
"""
_FEATURE = """
        Name                 string  0+
        MinSupportedVersion  int16   0+
        MaxSupportedVersion  int16   0+
"""

# fmt: off
METADATA: tuple[Schema, ...] = (
    # Version 1 adds InControlledShutdown, 2 IsMigratingZkBroker, 3 LogDirs (KIP-858)
    _schema(0, "RegisterBrokerRecord", "0-3", f"""
    BrokerId              int32        0+
    IsMigratingZkBroker   bool         2+  default=false
    IncarnationId         uuid         0+
    BrokerEpoch           int64        0+
    EndPoints             []Endpoint   0+
{_ENDPOINT}
    Features              []Feature    0+
{_FEATURE}
    Rack                  string       0+  null=0+
    Fenced                bool         0+  default=true
    InControlledShutdown  bool         1+  default=false
    LogDirs               []uuid       3+  tag=0
    """),
    _schema(1, "UnregisterBrokerRecord", "0", """
    BrokerId     int32  0+
    BrokerEpoch  int64  0+
    """),
    _schema(2, "TopicRecord", "0", """
    Name     string  0+
    TopicId  uuid    0+
    """),
    # Version 1 adds Directories (KIP-858), 2 EligibleLeaderReplicas, LastKnownElr (KIP-966)
    _schema(3, "PartitionRecord", "0-2", """
    PartitionId             int32    0+  default=-1
    TopicId                 uuid     0+
    Replicas                []int32  0+
    Isr                     []int32  0+
    RemovingReplicas        []int32  0+
    AddingReplicas          []int32  0+
    Leader                  int32    0+  default=-1
    LeaderRecoveryState     int8     0+  tag=0 default=0
    LeaderEpoch             int32    0+  default=-1
    PartitionEpoch          int32    0+  default=-1
    Directories             []uuid   1+
    EligibleLeaderReplicas  []int32  2+  tag=1 null=2+ default=null
    LastKnownElr            []int32  2+  tag=2 null=2+ default=null
    """),
    _schema(4, "ConfigRecord", "0", """
    ResourceType  int8    0+
    ResourceName  string  0+
    Name          string  0+
    Value         string  0+  null=0+
    """),
    _schema(5, "PartitionChangeRecord", "0-2", """
    PartitionId             int32    0+  default=-1
    TopicId                 uuid     0+
    Isr                     []int32  0+  tag=0 null=0+ default=null
    Leader                  int32    0+  tag=1 default=-2
    Replicas                []int32  0+  tag=2 null=0+ default=null
    RemovingReplicas        []int32  0+  tag=3 null=0+ default=null
    AddingReplicas          []int32  0+  tag=4 null=0+ default=null
    LeaderRecoveryState     int8     0+  tag=5 default=-1
    Directories             []uuid   1+  tag=8 null=1+ default=null
    EligibleLeaderReplicas  []int32  2+  tag=6 null=2+ default=null
    LastKnownElr            []int32  2+  tag=7 null=2+ default=null
    """),
    _schema(7, "FenceBrokerRecord", "0", """
    Id     int32  0+
    Epoch  int64  0+
    """),
    _schema(8, "UnfenceBrokerRecord", "0", """
    Id     int32  0+
    Epoch  int64  0+
    """),
    _schema(9, "RemoveTopicRecord", "0", """
    TopicId  uuid  0+
    """),
    _schema(10, "DelegationTokenRecord", "0", """
    Owner                string    0+
    Requester            string    0+
    Renewers             []string  0+
    IssueTimestamp       int64     0+
    MaxTimestamp         int64     0+
    ExpirationTimestamp  int64     0+
    TokenId              string    0+
    """),
    _schema(11, "UserScramCredentialRecord", "0", """
    Name        string  0+
    Mechanism   int8    0+
    Salt        bytes   0+
    StoredKey   bytes   0+
    ServerKey   bytes   0+
    Iterations  int32   0+
    """),
    _schema(12, "FeatureLevelRecord", "0", """
    Name          string  0+
    FeatureLevel  int16   0+
    """),
    _schema(14, "ClientQuotaRecord", "0", """
    Entity      []EntityData  0+
        EntityType  string  0+
        EntityName  string  0+  null=0+
    Key         string   0+
    Value       float64  0+
    Remove      bool     0+
    """),
    _schema(15, "ProducerIdsRecord", "0", """
    BrokerId        int32  0+
    BrokerEpoch     int64  0+  default=-1
    NextProducerId  int64  0+
    """),
    # Version 1 adds InControlledShutdown, 2 LogDirs
    _schema(17, "BrokerRegistrationChangeRecord", "0-2", """
    BrokerId              int32   0+
    BrokerEpoch           int64   0+
    Fenced                int8    0+  tag=0
    InControlledShutdown  int8    1+  tag=1
    LogDirs               []uuid  2+  tag=2
    """),
    _schema(18, "AccessControlEntryRecord", "0", """
    Id              uuid    0+
    ResourceType    int8    0+
    ResourceName    string  0+
    PatternType     int8    0+
    Principal       string  0+
    Host            string  0+
    Operation       int8    0+
    PermissionType  int8    0+
    """),
    _schema(19, "RemoveAccessControlEntryRecord", "0", """
    Id  uuid  0+
    """),
    _schema(20, "NoOpRecord", "0", ""),
    _schema(21, "ZkMigrationStateRecord", "0", """
    ZkMigrationState  int8  0+
    """),
    _schema(22, "RemoveUserScramCredentialRecord", "0", """
    Name       string  0+
    Mechanism  int8    0+
    """),
    _schema(23, "BeginTransactionRecord", "0", """
    Name  string  0+  tag=0 null=0+ default=null
    """),
    _schema(24, "EndTransactionRecord", "0", ""),
    _schema(25, "AbortTransactionRecord", "0", """
    Reason  string  0+  tag=0 null=0+ default=null
    """),
    _schema(26, "RemoveDelegationTokenRecord", "0", """
    TokenId  string  0+
    """),
    _schema(27, "RegisterControllerRecord", "0", f"""
    ControllerId      int32         0+
    IncarnationId     uuid          0+
    ZkMigrationReady  bool          0+
    EndPoints         []Endpoint    0+
{_ENDPOINT}
    Features          []Feature     0+
{_FEATURE}
    """),
    # Kafka 4.0 (KIP-966): clears the ELR of one topic, or of all when TopicName is empty
    _schema(28, "ClearElrRecord", "0", """
    TopicName  string  0+
    """),
    # Kafka 4.x: a controller removed from the registrations (ClusterControlManager)
    _schema(29, "UnregisterControllerRecord", "0", """
    ControllerId  int32  0+
    """),
)

# fmt: on

METADATA_BY_KEY: dict[int, Schema] = {s.api_key: s for s in METADATA}
METADATA_BY_NAME: dict[str, Schema] = {s.name: s for s in METADATA}

# -- control records (ControlRecordType: the key's type id -> the value's schema) ------------

CONTROL_TYPES: dict[int, str] = {
    0: "Abort",  # transaction markers: never in the metadata log, named if met
    1: "Commit",
    2: "LeaderChange",
    3: "SnapshotHeader",
    4: "SnapshotFooter",
    5: "KRaftVersion",
    6: "KRaftVoters",
}

# fmt: off
CONTROL: dict[str, Schema] = {
    # Version 1 adds VoterDirectoryId (KIP-853); Kafka reads it as LEADER_CHANGE_CURRENT_VERSION
    "LeaderChange": _schema(-1, "LeaderChangeMessage", "0-1", """
    Version         int16     0+
    LeaderId        int32     0+
    Voters          []Voter   0+
        VoterId           int32  0+
        VoterDirectoryId  uuid   1+
    GrantingVoters  []Voter   0+
        VoterId           int32  0+
        VoterDirectoryId  uuid   1+
    """),
    "SnapshotHeader": _schema(-1, "SnapshotHeaderRecord", "0", """
    Version                    int16  0+
    LastContainedLogTimestamp  int64  0+
    """),
    "SnapshotFooter": _schema(-1, "SnapshotFooterRecord", "0", """
    Version  int16  0+
    """),
    "KRaftVersion": _schema(-1, "KRaftVersionRecord", "0", """
    Version       int16  0+
    KRaftVersion  int16  0+
    """),
    "KRaftVoters": _schema(-1, "VotersRecord", "0", """
    Version  int16     0+
    Voters   []Voter   0+
        VoterId           int32       0+
        VoterDirectoryId  uuid        0+
        Endpoints         []Endpoint  0+
            Name  string  0+
            Host  string  0+
            Port  uint16  0+
        KRaftVersionFeature  {}KRaftVersionFeature  0+
            MinSupportedVersion  int16  0+
            MaxSupportedVersion  int16  0+
    """),
}
# fmt: on
