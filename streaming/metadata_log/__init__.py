"""Reading KRaft's metadata log (`__cluster_metadata-0`): record batches from segment and
snapshot files, metadata records as MetadataRecordSerde frames them, raft control records;
and the encoder that builds test logs Kafka would write. Pure byte decoding and file
reading (no Spark), shared by `shadow-controller metadata-log` and the streaming source."""

from .batches import LogRecord, RecordBatch, log_files, parse_batch, read_batches
from .encode import (
    control_value,
    encode_batch,
    metadata_value,
    segment_name,
    snapshot_name,
    write_segment,
    write_snapshot,
)
from .errors import CorruptBatch, MetadataLogError, RecordDecodeError
from .records import (
    ControlRecord,
    MetadataRecord,
    decode_control,
    decode_metadata,
    encode_control,
    encode_metadata,
)

__all__ = [
    "ControlRecord",
    "CorruptBatch",
    "LogRecord",
    "MetadataLogError",
    "MetadataRecord",
    "RecordBatch",
    "RecordDecodeError",
    "control_value",
    "decode_control",
    "decode_metadata",
    "encode_batch",
    "encode_control",
    "encode_metadata",
    "log_files",
    "metadata_value",
    "parse_batch",
    "read_batches",
    "segment_name",
    "snapshot_name",
    "write_segment",
    "write_snapshot",
]
