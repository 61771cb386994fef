"""A partition's summary read from the text of a feedback line's fields after the cause
(`state TAB preferred TAB leader[ TAB isr size TAB replication factor TAB replica count]`),
shared by the pipeline's feedback reader and the batch gauges' tallies."""

from __future__ import annotations

from state_machines.commands import PartitionSummary

from .directory_codec import summary_of

# A cluster has few distinct summaries: each line's summary fields (its text after the
# cause) are read once, and partitions with the same summary share one object.
_SUMMARY_TEXTS: dict[str, PartitionSummary] = {}


def summary_of_fields(text: str) -> PartitionSummary:
    """The summary of a feedback line's fields after the cause, shared by equal texts."""
    summary = _SUMMARY_TEXTS.get(text)
    if summary is None:
        fields = text.split("\t")
        counts = [int(f) for f in fields[3:6]]  # none in a line of an earlier build
        if len(_SUMMARY_TEXTS) >= 65536:
            _SUMMARY_TEXTS.clear()
        # the directory codec's summary, so one the state store holds is the same object
        summary = _SUMMARY_TEXTS[text] = summary_of(
            None if fields[0] == "-" else fields[0],
            int(fields[1]),
            None if fields[2] == "-" else int(fields[2]),
            *counts,
        )
    return summary
