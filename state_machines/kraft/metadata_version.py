"""KRaft's `metadata.version`: the ordered feature level that gates version-dependent rules.

Source: server-common/src/main/java/org/apache/kafka/server/common/MetadataVersion.java.
A KRaft cluster records its metadata version in the log (`FeatureLevelRecord`), and the
quorum controller decides by it, not by the software version: a 3.9 controller running at
3.5-IV2 still bumps the leader epoch on every ISR shrink.

Only the KRaft versions are here (3.0-IV1 is `MINIMUM_KRAFT_VERSION`), with their feature
levels, which are what the versions are ordered by. The member values are Kafka's version
strings; they may be persisted, so they never change.

Where 3.9.0 and 4.0 disagree
----------------------------
In 3.9.0, 4.0-IV0 and 4.0-IV1 are *unstable* (after `LATEST_PRODUCTION = IBP_3_9_IV0`; a
broker refuses them unless `unstable.feature.versions.enable`) and ELR (KIP-966) is
gated at 4.0-IV0. Kafka 4.0 re-cut them before release: 4.0-IV0 bootstraps KIP-848, ELR
moved to 4.0-IV1 (`isElrSupported`), and 4.0-IV2 and 4.0-IV3 were added. Since a
production 3.9 cluster can never run a 4.0 version, this module takes the released 4.0
meaning (ELR at 4.0-IV1). The 4.1 versions are not listed: no rule here depends on them.
"""

from __future__ import annotations

from enum import Enum
from types import MappingProxyType


class MetadataVersion(str, Enum):  # noqa: UP042 - StrEnum changes str() and f"{}" of members
    IBP_3_0_IV1 = "3.0-IV1"
    IBP_3_1_IV0 = "3.1-IV0"
    IBP_3_2_IV0 = "3.2-IV0"
    IBP_3_3_IV0 = "3.3-IV0"
    IBP_3_3_IV1 = "3.3-IV1"
    IBP_3_3_IV2 = "3.3-IV2"
    IBP_3_3_IV3 = "3.3-IV3"
    IBP_3_4_IV0 = "3.4-IV0"
    IBP_3_5_IV0 = "3.5-IV0"
    IBP_3_5_IV1 = "3.5-IV1"
    IBP_3_5_IV2 = "3.5-IV2"
    IBP_3_6_IV0 = "3.6-IV0"
    IBP_3_6_IV1 = "3.6-IV1"
    IBP_3_6_IV2 = "3.6-IV2"
    IBP_3_7_IV0 = "3.7-IV0"
    IBP_3_7_IV1 = "3.7-IV1"
    IBP_3_7_IV2 = "3.7-IV2"
    IBP_3_7_IV3 = "3.7-IV3"
    IBP_3_7_IV4 = "3.7-IV4"
    IBP_3_8_IV0 = "3.8-IV0"
    IBP_3_9_IV0 = "3.9-IV0"
    IBP_4_0_IV0 = "4.0-IV0"
    IBP_4_0_IV1 = "4.0-IV1"
    IBP_4_0_IV2 = "4.0-IV2"
    IBP_4_0_IV3 = "4.0-IV3"

    @property
    def feature_level(self) -> int:
        return FEATURE_LEVELS[self]

    @staticmethod
    def from_version_string(version: str) -> MetadataVersion:
        """`MetadataVersion.fromVersionString`: "3.9-IV0" exactly, or a release ("3.7")
        meaning that release's latest version."""
        try:
            return MetadataVersion(version)
        except ValueError:
            pass
        in_release = [mv for mv in MetadataVersion if mv.value.split("-")[0] == version]
        if not in_release:
            raise ValueError(f"Unknown metadata.version '{version}'")
        return in_release[-1]

    def is_at_least(self, other: MetadataVersion) -> bool:
        return self.feature_level >= other.feature_level

    def is_less_than(self, other: MetadataVersion) -> bool:
        return self.feature_level < other.feature_level

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, MetadataVersion):
            return NotImplemented
        return self.feature_level < other.feature_level

    def __le__(self, other: object) -> bool:
        if not isinstance(other, MetadataVersion):
            return NotImplemented
        return self.feature_level <= other.feature_level

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, MetadataVersion):
            return NotImplemented
        return self.feature_level > other.feature_level

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, MetadataVersion):
            return NotImplemented
        return self.feature_level >= other.feature_level

    # The gates, each Kafka's method of the same name.

    @property
    def is_leader_recovery_supported(self) -> bool:
        """KIP-704: an unclean leader starts RECOVERING."""
        return self.is_at_least(MetadataVersion.IBP_3_2_IV0)

    @property
    def is_leader_epoch_bump_required_on_isr_shrink(self) -> bool:
        """KAFKA-15021: before 3.6-IV0 brokers needed a new leader epoch on every ISR shrink."""
        return not self.is_at_least(MetadataVersion.IBP_3_6_IV0)

    @property
    def is_directory_assignment_supported(self) -> bool:
        """KIP-858: partition records carry each replica's log directory."""
        return self.is_at_least(MetadataVersion.IBP_3_7_IV2)

    @property
    def is_elr_supported(self) -> bool:
        """KIP-966 (4.0's definition; 3.9.0 said 4.0-IV0, then unstable: see the module doc)."""
        return self.is_at_least(MetadataVersion.IBP_4_0_IV1)

    @property
    def partition_change_record_version(self) -> int:
        if self.is_elr_supported:
            return 2
        if self.is_directory_assignment_supported:
            return 1
        return 0

    @property
    def partition_record_version(self) -> int:
        return self.partition_change_record_version


_M = MetadataVersion

FEATURE_LEVELS = MappingProxyType(
    {
        _M.IBP_3_0_IV1: 1,
        _M.IBP_3_1_IV0: 2,
        _M.IBP_3_2_IV0: 3,
        _M.IBP_3_3_IV0: 4,
        _M.IBP_3_3_IV1: 5,
        _M.IBP_3_3_IV2: 6,
        _M.IBP_3_3_IV3: 7,
        _M.IBP_3_4_IV0: 8,
        _M.IBP_3_5_IV0: 9,
        _M.IBP_3_5_IV1: 10,
        _M.IBP_3_5_IV2: 11,
        _M.IBP_3_6_IV0: 12,
        _M.IBP_3_6_IV1: 13,
        _M.IBP_3_6_IV2: 14,
        _M.IBP_3_7_IV0: 15,
        _M.IBP_3_7_IV1: 16,
        _M.IBP_3_7_IV2: 17,
        _M.IBP_3_7_IV3: 18,
        _M.IBP_3_7_IV4: 19,
        _M.IBP_3_8_IV0: 20,
        _M.IBP_3_9_IV0: 21,
        _M.IBP_4_0_IV0: 22,
        _M.IBP_4_0_IV1: 23,
        _M.IBP_4_0_IV2: 24,
        _M.IBP_4_0_IV3: 25,
    }
)

# The default: the newest production version of 3.9.0 (`LATEST_PRODUCTION`).
DEFAULT_METADATA_VERSION = MetadataVersion.IBP_3_9_IV0
