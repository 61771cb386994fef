"""The codec's version list, written once: every encoding the job persists or moves carries
its version, and a reader refuses a version it does not know (`check_compact`,
`UnknownEncoding`) rather than guess. `codec.py` and `directory_codec.py` write and read
them; `decision_json.py` writes the contract's.
"""

from __future__ import annotations

from typing import Any

from state_machines.errors import ShadowControllerError

VERSIONS = {
    "state": 1,  # the generic document's "v"
    "compact": 1,  # the first element of a compact array
    # in a bucket's header line (1: the lines as text; 2: compressed, `codec.bucket_text`)
    "bucket": 2,
    "contract": 1,  # a decision record's "v" (docs/contract.md; as outputs.to_contract writes it)
}
SCHEMA_VERSION = VERSIONS["state"]
COMPACT_VERSION = VERSIONS["compact"]
CONTRACT_VERSION = VERSIONS["contract"]
BUCKET_HEADER = f"bucket-v{VERSIONS['bucket']}"
BUCKET_HEADER_V1 = "bucket-v1"
# version -> function(document) -> document of version + 1
MIGRATIONS: dict[int, Any] = {}


class UnknownEncoding(ShadowControllerError, ValueError):
    """Stored text in an encoding or a version this build does not read (a checkpoint
    written by another build): refused, never guessed at."""


def check_compact(what: str, found: Any) -> None:
    """Refuse a compact array of another version than COMPACT_VERSION."""
    if found != COMPACT_VERSION:
        raise UnknownEncoding(
            f"{what} in compact version {found}; this build reads {COMPACT_VERSION}"
        )
