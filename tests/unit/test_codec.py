"""The state codec: every value the job persists or ships between operators decodes to
itself, in both the compact (Command, PartitionRecord) and the generic encodings."""

from __future__ import annotations

import json

import pytest

import state_machines.engine as engine_module
from state_machines import partition as partition_module
from state_machines.commands import Command, DeletionReport, PartitionContext
from state_machines.directory import Continuation
from state_machines.events import parse_event
from state_machines.outputs import (
    ElectionResultRecord,
    ObservationOutcome,
    StateChangeFailedRecord,
    StillLeads,
    to_contract,
)
from state_machines.partition import PartitionRecord
from state_machines.update_metadata_records import UpdateMetadataShare
from streaming import codec, command_codec, record_codec
from streaming.decision_json import decision_json
from streaming.directory_codec import directory_out
from tests.property.generator import generate_log


@pytest.mark.parametrize("seed", range(12))
def test_everything_a_generated_log_produces_round_trips(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = {"commands": 0, "records": 0, "reports": 0, "decisions": 0, "update_metadata_states": 0}
    original = partition_module.partition_step
    merge = engine_module.merge_update_metadata

    def checked(state, cmd, config):
        assert codec.loads(codec.dumps(cmd), Command) == cmd
        seen["commands"] += 1
        if state is not None:
            assert codec.loads(codec.dumps(state), PartitionRecord) == state
            # the record's text is written directly; it is the JSON encoder's bytes
            assert codec.dumps(state) == json.dumps(
                record_codec.record_out(state), separators=(",", ":")
            )
            assert codec.bucket_entry_in(codec.bucket_entry_out(state, cmd.cause_offset, 7)) == (
                state,
                cmd.cause_offset,
                7,
            )
            seen["records"] += 1
        result = original(state, cmd, config)
        for i, out in enumerate(result.outputs):
            if not isinstance(out, (StillLeads, ObservationOutcome, UpdateMetadataShare)):
                # the job's encoding of a decision is the contract document, byte for byte
                expected = json.dumps(
                    to_contract(out, cmd.cause_offset, cmd.cause_id, i), separators=(",", ":")
                )
                assert decision_json(out, cmd.cause_offset, cmd.cause_id, i) == expected
                seen["decisions"] += 1
        if result.report is not None:
            assert codec.loads(codec.dumps(result.report), DeletionReport) == result.report
            seen["reports"] += 1
        return result

    def merged(pieces):
        # UpdateMetadata records (a million partition states in a send to a starting broker
        # at 1M) are written from a template: the bytes of the contract document
        for m in merge(pieces):
            expected = json.dumps(
                to_contract(m.record, m.cause_offset, m.cause_id, m.seq), separators=(",", ":")
            )
            assert decision_json(m.record, m.cause_offset, m.cause_id, m.seq) == expected
            seen["update_metadata_states"] += len(m.record.partitions)
            yield m

    monkeypatch.setattr(partition_module, "partition_step", checked)
    monkeypatch.setattr(engine_module, "merge_update_metadata", merged)
    engine = engine_module.Engine()
    for i, event in enumerate(generate_log(seed, n_events=60)):
        engine.process(parse_event(event, i))
    # the engine turns a raised exception (a failed assertion above too) into an error entry
    assert engine.errors == []
    for record in engine.directory.values():
        assert codec.loads(codec.dumps(record), codec.DirectoryRecord) == record
        # a topic's record is written directly; it is the JSON encoder's bytes
        assert codec.dumps(record) == json.dumps(directory_out(record), separators=(",", ":"))
    assert seen["commands"] > 0 and seen["records"] > 0 and seen["decisions"] > 0
    assert seen["update_metadata_states"] > 0


def test_a_bucket_keeps_its_partitions_as_lines_and_decodes_only_what_is_asked() -> None:
    engine = engine_module.Engine()
    with open("examples/three-brokers.jsonl") as fh:
        for i, line in enumerate(fh):
            engine.process(parse_event(json.loads(line), i))
    entries = {
        f"{r.topic}-{r.partition}": codec.bucket_entry_out(r, 5, 2)
        for r in engine.partitions.values()
    }
    text = codec.bucket_text(entries)
    assert text.splitlines()[0] == codec.BUCKET_HEADER == "bucket-v2"
    assert codec.bucket_entries(text) == entries
    assert codec.bucket_text(dict(reversed(entries.items()))) == text  # same state, same bytes
    for key, entry in codec.bucket_entries(text).items():
        record, seq_cause, seq_next = codec.bucket_entry_in(entry)
        assert (f"{record.topic}-{record.partition}", seq_cause, seq_next) == (key, 5, 2)
    # stored compressed: the lines' own text is not in the state
    lines = "\n".join(f"{k}\t{entries[k]}" for k in sorted(entries))
    assert len(text) < len(lines) / 2 and entries["orders-0"] not in text
    # a checkpoint of layout 1 (the lines as text) is read as it was written
    assert codec.bucket_entries("bucket-v1\n" + lines) == entries
    assert codec.bucket_entries(None) == {} and codec.bucket_entries("") == {}
    # a bucket whose partitions were all deleted holds none, in either layout
    assert (
        codec.bucket_entries(codec.bucket_text({})) == {}
        and codec.bucket_entries("bucket-v1") == {}
    )
    with pytest.raises(ValueError, match="layout"):
        codec.bucket_entries('{"orders-0": []}')
    with pytest.raises(ValueError, match="layout 'bucket-v3'"):
        codec.bucket_entries("bucket-v3\n12\nAAAA")


def test_documents_carry_their_version_and_a_newer_one_is_refused() -> None:
    engine = engine_module.Engine()
    with open("examples/three-brokers.jsonl") as fh:
        for i, line in enumerate(fh):
            engine.process(parse_event(json.loads(line), i))
    record = next(iter(engine.partitions.values()))
    compact = json.loads(codec.dumps(record))
    assert compact[0] == codec.COMPACT_VERSION
    compact[0] = codec.COMPACT_VERSION + 1
    with pytest.raises(ValueError, match="compact version"):
        codec.loads(json.dumps(compact), PartitionRecord)
    directory_doc = json.loads(codec.dumps(engine.directory["controller"]))
    assert directory_doc[1] == codec.COMPACT_VERSION
    directory_doc[1] = codec.COMPACT_VERSION + 1
    with pytest.raises(ValueError, match="compact version"):
        codec.loads(json.dumps(directory_doc), codec.DirectoryRecord)
    generic = json.loads(codec.dumps(Continuation(resume=True)))
    assert generic["v"] == codec.SCHEMA_VERSION
    generic["v"] = codec.SCHEMA_VERSION + 1
    with pytest.raises(ValueError, match="schema version"):
        codec.loads(json.dumps(generic), Continuation)


def test_the_tag_registry_holds_every_core_dataclass_and_refuses_a_shared_name(
    tmp_path, monkeypatch
) -> None:
    import dataclasses
    import importlib
    import pkgutil

    import state_machines
    from streaming import tagged

    for info in pkgutil.walk_packages(state_machines.__path__, "state_machines."):
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if (
                isinstance(obj, type)
                and dataclasses.is_dataclass(obj)
                and obj.__module__ == info.name
            ):
                assert tagged.TAGGED[obj.__name__] is obj

    package = tmp_path / "twin_core"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name in ("a", "b"):
        (package / f"{name}.py").write_text(
            "import dataclasses\n\n@dataclasses.dataclass\nclass Twin:\n    x: int = 0\n"
        )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(
        tagged.DuplicateTag, match="twin_core.a.Twin and twin_core.b.Twin share the name 'Twin'"
    ):
        tagged.dataclasses_by_name(importlib.import_module("twin_core"))


def test_summaries_written_before_the_replica_counts_read_with_them_unknown() -> None:
    """A topic record's summaries and a summary feedback line gained three trailing counts
    (ISR size, replication factor, replica count): a checkpoint or a feedback file written
    before them reads with the counts unknown (None), which the replica metrics leave out,
    and is written back with its old bytes; a new one round-trips."""
    from state_machines.commands import PartitionSummary, SummaryReport
    from state_machines.directory import TopicRecord
    from state_machines.states import PartitionState
    from streaming.gauge_shares import replica_metrics
    from streaming.pipeline import _summary_line, read_feedback

    old = '["T",1,[[0,[1,2]]],[],false,false,false,[],[[0,"OnlinePartition",1,1]]]'
    rec = codec.loads(old, codec.DirectoryRecord)
    assert rec.summaries == (
        (0, PartitionSummary(PartitionState.OnlinePartition, 1, 1, None, None, None)),
    )
    assert codec.dumps(rec) == old
    assert replica_metrics(rec.summaries[0][1], 1) == (False, False, False)  # counted in none
    new = TopicRecord(
        ((0, (1, 2)),),
        summaries=((0, PartitionSummary(PartitionState.OnlinePartition, 1, 1, 1, 2, 2)),),
    )
    assert (
        codec.dumps(new)
        == '["T",1,[[0,[1,2]]],[],false,false,false,[],[[0,"OnlinePartition",1,1,1,2,2]]]'
    )
    assert codec.loads(codec.dumps(new), codec.DirectoryRecord) == new

    _, [before] = read_feedback(["S\tt\t0\t7\tOnlinePartition\t1\t1"])
    assert before == SummaryReport(
        "t", 0, PartitionSummary(PartitionState.OnlinePartition, 1, 1), 7
    )
    report = SummaryReport(
        "t", 0, PartitionSummary(PartitionState.OnlinePartition, 1, 1, 1, 2, 2), 7
    )
    assert _summary_line(report) == "S\tt\t0\t7\tOnlinePartition\t1\t1\t1\t2\t2"
    assert read_feedback([_summary_line(report)])[1] == [report]


def test_summary_lines_round_trip_and_share_their_summaries() -> None:
    """Feedback summary lines of every shape (gone, with kraft mode's event time, no state
    or leader) read back as written; equal summaries read as one object."""
    from state_machines.commands import PartitionSummary, SummaryReport
    from state_machines.states import PartitionState
    from streaming.pipeline import _summary_line, read_feedback

    online = PartitionSummary(PartitionState.OnlinePartition, 1, 2, 3, 3, 3)
    reports = [
        SummaryReport("t", 3, None, 7),
        SummaryReport("t", 3, None, 7, 1234),
        SummaryReport("t-x", 0, online, 9),
        SummaryReport("t", 1, PartitionSummary(None, -1, None), 9, 55),
        SummaryReport(
            "t", 2, PartitionSummary(PartitionState.OfflinePartition, 2, -1, 0, 3, 3), 9, 55
        ),
        SummaryReport("u", 4, online, 10),
    ]
    _, got = read_feedback([_summary_line(r) for r in reports])
    assert got == reports
    assert got[2].summary is got[5].summary


def test_a_topic_record_written_directly_is_the_encoders_bytes() -> None:
    from state_machines.commands import PartitionSummary
    from state_machines.directory import DeletionMirror, TopicRecord
    from state_machines.states import PartitionState, ReplicaState

    rec = TopicRecord(
        ((0, (1, 2)), (1, (2, 3, 1))),
        (("min.insync.replicas", "2"), ("unclean.leader.election.enable", "true")),
        queued=True,
        started=True,
        ineligible=True,
        mirror=((0, DeletionMirror((1, 2), ((1, ReplicaState.ReplicaDeletionIneligible),), True)),),
        summaries=(
            (0, PartitionSummary(PartitionState.OnlinePartition, 1, 1, 2, 2, 2)),
            (1, PartitionSummary(None, 2, None)),
        ),
    )
    assert codec.dumps(rec) == json.dumps(directory_out(rec), separators=(",", ":"))
    assert codec.loads(codec.dumps(rec), codec.DirectoryRecord) == rec
    bare = TopicRecord(((0, (1,)),))
    assert codec.dumps(bare) == json.dumps(directory_out(bare), separators=(",", ":"))


@pytest.mark.parametrize(
    "record",
    [
        StateChangeFailedRecord(
            "t", 0, None, "OnlinePartition", "failed to elect leader under strategy preferred"
        ),
        StateChangeFailedRecord(
            't\u00e9"x', 12, 3, "OfflineReplica", 'reason with "quotes", \\ and \u2603'
        ),
        ElectionResultRecord("t", 1, "preferred", None, 2),
        ElectionResultRecord("t", 1, "unclean", "ELECTION_NOT_NEEDED", None),
        ElectionResultRecord("t", 1, "preferred", "PREFERRED_LEADER_NOT_AVAILABLE", -1),
    ],
)
def test_the_templated_records_are_the_contract_bytes_for_every_optional_field(record) -> None:  # type: ignore[no-untyped-def]
    for cause_id in (None, 'req-"1"'):
        expected = json.dumps(to_contract(record, 42, cause_id, 3), separators=(",", ":"))
        assert decision_json(record, 42, cause_id, 3) == expected


def test_records_that_share_their_tail_decode_to_the_full_decoding_and_share_its_fields() -> None:
    """A record's text after its topic and number is decoded once per distinct text
    (`record_codec.record_from_text`); a record read through that path equals its full decoding."""
    from state_machines.model import BrokerFact, LeaderAndIsr, ReplicaAssignment
    from state_machines.states import PartitionState, ReplicaState

    fact = BrokerFact(True, False, 101)

    def record(topic: str, p: int) -> PartitionRecord:
        return PartitionRecord(
            topic,
            p,
            ReplicaAssignment((1, 2, 3)),
            PartitionState.OnlinePartition,
            LeaderAndIsr(1, 4, (1, 2), 5),
            ((1, ReplicaState.OnlineReplica),),
            ((1, fact),),
            False,
            (2,),
            (17, None),
        )

    record_codec._TAILS.clear()
    first, second = record("a.b_c-1", 0), record("x", 123)
    decoded = [codec.loads(codec.dumps(r), PartitionRecord) for r in (first, second, first)]
    assert decoded == [first, second, first]
    assert len(record_codec._TAILS) == 1
    assert (
        decoded[1].leadership is decoded[0].leadership and decoded[1].brokers is decoded[0].brokers
    )
    assert decoded[2] is not decoded[0]  # each partition still gets its own record


def _whole_shared(text: str) -> tuple:
    a = json.loads(text)
    x = a[3]
    return (
        a[1],
        a[2],
        PartitionContext(x[0], x[1], x[2], x[3], record_codec.brokers_in(x[4])),
        command_codec._op_in(a[4]),
    )


@pytest.mark.parametrize("seed", range(6))
def test_a_commands_shared_part_read_in_pieces_is_its_whole_decoding(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every compact shared part of a generated log's commands, read in pieces (context
    and op each decoded once), equals the whole text's decoding; so do cause ids that
    hold quotes, escapes and the op's opening `,["`."""
    texts: set[str] = set()
    original = partition_module.partition_step

    def seen(state, cmd, config):
        texts.add(command_codec.command_shared(cmd))
        for cause_id in ('a,["b', 'q"uote\\\\', "\u00e9\u2028", ""):
            texts.add(
                command_codec.command_shared(
                    Command(cmd.topic, cmd.partition, cmd.cause_offset, cause_id, cmd.ctx, cmd.op)
                )
            )
        return original(state, cmd, config)

    monkeypatch.setattr(partition_module, "partition_step", seen)
    engine = engine_module.Engine()
    for i, event in enumerate(generate_log(seed, n_events=60)):
        engine.process(parse_event(event, i))
    assert len(texts) > 50
    for text in texts:
        assert command_codec._compact_shared(text) == _whole_shared(text), text


def test_a_shared_part_not_in_the_compact_layout_is_left_to_the_whole_decoding() -> None:
    ctx = "[true,1,false,false,[[1,true,false,101]]]"
    for text in (
        f'[1,-3,null,{ctx},["Failover"]]',  # not an offset
        f'[1,7,"unterminated,{ctx},["Failover"]]',  # a cause id that does not end
        f'[1,7,5,{ctx},["Failover"]]',  # a cause id that is neither null nor a string
        f"[1,7,null,{ctx}]",  # no op
        f'[1,7,null,{ctx},["Failover"]',  # no closing bracket
    ):
        assert command_codec._compact_shared(text) is None, text
