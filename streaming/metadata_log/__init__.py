"""Reading KRaft's metadata log (`__cluster_metadata-0`): record batches from segment and
snapshot files, metadata records as MetadataRecordSerde frames them, raft control records;
and the encoder that builds test logs Kafka would write. Pure byte decoding and file
reading (no Spark), shared by `shadow-controller metadata-log` and the streaming source.

The modules: `batches.py` (record batches and files), `records.py` (metadata and control
records), `encode.py` (the encoder), `errors.py`. This file imports nothing, so that
importing one module does not import the rest (the import rule's cycle check).
"""
