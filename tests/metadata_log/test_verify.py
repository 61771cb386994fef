"""`shadow-controller metadata-log verify` on logs written as the quorum controller writes them
(tests/metadata_log/scenarios.py): each scenario verifies clean, and each altered decision is
caught as a safety divergence (issue 45 §2 and §4). Real files through the real reader and
the CLI's entry point."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from shadow_controller.cli import main
from state_machines.model import ControllerConfig
from streaming.metadata_log.encode import encode_batch, metadata_value, write_segment

from .engine_log import write_engine_log
from .scenarios import (
    ALTERED,
    SCENARIOS,
    TOPIC_T,
    KafkaLog,
    broker_failure,
    change,
    write_snapshot_of,
)


def _verify(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any], str]:
    code = main(["metadata-log", "verify", "--json", *args])
    captured = capsys.readouterr()
    doc = json.loads(captured.out) if captured.out.startswith("{") else {}
    return code, doc, captured.err


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario_verifies_clean(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = SCENARIOS[name]()
    directory = log.write(tmp_path / "__cluster_metadata-0", roll_every=4)
    assert len(list(directory.glob("*.log"))) > 1  # rolled segments read in order
    code, doc, err = _verify(capsys, str(directory))
    summary = doc["summary"]
    assert code == 0, doc
    assert summary["divergent"] == {"benign": 0, "safety": 0}
    assert summary["decisions_checked"] == summary["matched"] > 0
    assert summary["ambiguous_groupings"] == 0
    assert summary["records"] == sum(len(b) for b in log.batches)
    assert doc["events"] == []  # only divergent or ambiguous events are listed
    assert err == ""


@pytest.mark.parametrize(
    ("scenario", "label", "alter", "what"), ALTERED, ids=[a[3] for a in ALTERED]
)
def test_altered_decision_is_a_safety_divergence(
    scenario: str,
    label: str,
    alter: Any,
    what: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    log = SCENARIOS[scenario]({label: alter})
    directory = log.write(tmp_path / "__cluster_metadata-0")
    code, doc, _ = _verify(capsys, str(directory))
    assert code == 1
    summary = doc["summary"]
    assert summary["divergent"]["safety"] >= 1
    first = next(e for e in doc["events"] if e["outcome"] == "safety")
    d = next(d for d in first["divergences"] if d["severity"] == "safety")
    assert d["kafka_method"] and d["reasons"]
    # the altered record's partition (or, for a config, its event) is the one named
    clean = SCENARIOS[scenario]()
    altered = next(r for b in clean.batches for _, r in b if r.label == label)
    if altered.name == "PartitionChangeRecord":
        assert d["partition"] == f"t-{altered.fields['partition_id']}"


def test_another_valid_leader_is_benign(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """At broker 1's failure Kafka elects 2, the first ISR replica in replica order; 3 is in
    the ISR and active too: a different algorithm, not a danger."""
    log = broker_failure(False, {"fail-t0": lambda f: {**f, "leader": 3, "isr": [2, 3]}})
    code, doc, _ = _verify(capsys, str(log.write(tmp_path / "m")))
    assert code == 0
    assert doc["summary"]["divergent"] == {"benign": 1, "safety": 0}
    (event,) = doc["events"]
    assert event["kind"] == "BrokerFenced"
    assert event["divergences"][0]["predicted"] == {"leader": 2, "isr": [2, 3]}
    assert event["divergences"][0]["log"] == {"leader": 3, "isr": [2, 3]}


def test_requests_sharing_a_fence_batch_are_an_ambiguous_grouping(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An AlterPartition of t-2 appended in the batch just before the fence's records: where
    one event ends and the next begins is not in the log."""
    log = KafkaLog()
    clean = broker_failure(False)
    for batch in clean.batches:
        records = [r for _, r in batch]
        if records[0].name == "PartitionChangeRecord" and records[0].fields.get("isr") == [1]:
            continue  # moved into the fence's batch below
        if records[0].label == "fail-t0":
            records = [change(TOPIC_T, 2, isr=[1]), *records]
        log.batch(*records)
    log.epochs, log.incarnation = clean.epochs, clean.incarnation
    code, doc, _ = _verify(capsys, str(log.write(tmp_path / "m")))
    assert code == 0
    assert doc["summary"]["ambiguous_groupings"] == 1
    (event,) = doc["events"]
    assert event["kind"] == "BrokerFenced" and event["outcome"] == "match"
    assert "share the batch" in event["grouping"]


def test_a_cleaned_log_starts_from_the_snapshot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = SCENARIOS["rolling-restart"]()
    directory = tmp_path / "__cluster_metadata-0"
    start = log.batches[len(log.batches) // 2][0][0]
    log.write(directory, start=start)
    write_snapshot_of(log, directory, start)
    code, doc, _ = _verify(capsys, str(directory))
    assert code == 0
    summary = doc["summary"]
    assert summary["snapshot"]["end_offset"] == start
    assert summary["snapshot"]["records"] > 0
    assert summary["records"] == sum(len(b) for b in log.batches if b[0][0] >= start)
    assert summary["divergent"] == {"benign": 0, "safety": 0}
    assert summary["metadata_version"] == "3.9-IV0"  # from the snapshot's FeatureLevelRecord


def test_a_cleaned_log_without_a_snapshot_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = SCENARIOS["reassignment"]()
    directory = log.write(tmp_path / "m", start=log.batches[3][0][0])
    code = main(["metadata-log", "verify", str(directory)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "no snapshot" in err


@pytest.mark.parametrize(
    "args",
    [
        ["/nonexistent/__cluster_metadata-0"],
        ["--controller-config", "min.insync.replicas=zero", "X"],
        ["--controller-config", "log.retention.ms=1", "X"],
    ],
)
def test_bad_arguments_are_one_line(
    args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = SCENARIOS["controlled-shutdown"]().write(tmp_path / "m")
    args = [str(directory) if a == "X" else a for a in args]
    code = main(["metadata-log", "verify", *args])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("shadow-controller metadata-log")


def test_a_corrupt_batch_stops_or_is_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = SCENARIOS["controlled-shutdown"]().write(tmp_path / "m")
    (segment,) = directory.glob("*.log")
    data = bytearray(segment.read_bytes())
    data[200] ^= 0xFF
    segment.write_bytes(bytes(data))
    assert main(["metadata-log", "verify", str(directory)]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    code = main(["metadata-log", "verify", "--skip-corrupt", str(directory)])
    captured = capsys.readouterr()
    assert code == 1
    assert "byte" in captured.err and "batches" in captured.out


def test_report_dir_holds_every_event(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = SCENARIOS["elr-4.0"]()
    directory = log.write(tmp_path / "m")
    report = tmp_path / "report"
    code = main(["metadata-log", "verify", str(directory), "--report", str(report)])
    out = capsys.readouterr().out
    assert code == 0
    assert "metadata.version 4.0-IV3, ELR on" in out
    events = [json.loads(line) for line in (report / "events.jsonl").read_text().splitlines()]
    summary = json.loads((report / "summary.json").read_text())
    assert len(events) == summary["events"] > 0
    assert {e["kind"] for e in events} >= {"BrokerFenced", "BrokerRegistration", "CreateTopics"}
    unclean = next(e for e in events if e["kind"] == "BrokerRegistration" and e["records"] == 2)
    assert unclean["outcome"] == "match" and unclean["decisions"] == 1


def test_records_the_rules_do_not_read_are_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    batches = [
        encode_batch(
            [metadata_value("FeatureLevelRecord", 0, name="metadata.version", feature_level=21)], 0
        ),
        encode_batch([metadata_value("NoOpRecord", 0)], 1),
        encode_batch(
            [
                metadata_value(
                    "ProducerIdsRecord", 0, broker_id=1, broker_epoch=5, next_producer_id=1000
                )
            ],
            2,
        ),
    ]
    write_segment(tmp_path, 0, batches)
    code, doc, _ = _verify(capsys, str(tmp_path))
    assert code == 0
    assert doc["summary"]["records_not_checked"] == {"NoOpRecord": 1, "ProducerIdsRecord": 1}


def test_mutated_logs_never_raise() -> None:
    """Bad input never crashes verify: 600 logs with one int or int-array field of one record
    set to another value of its type (a broker id, -1, -2, an empty or repeated list, another
    partition) each end in verdicts, whatever they are."""
    import random

    from state_machines.log_verify.entries import LogEntry
    from state_machines.log_verify.verifier import verify_entries

    rng = random.Random(45)
    ints = [-2, -1, 0, 1, 2, 3, 4, 7]
    lists: list[Any] = [[], [1], [1, 1], [2, 1], [3, 2, 1], [9], None]
    names = sorted(SCENARIOS)
    outcomes: set[str] = set()
    for _ in range(600):
        entries = SCENARIOS[rng.choice(names)]().entries()
        i = rng.randrange(1, len(entries))
        e = entries[i]
        # a value of the field's type, as the decoder gives (an int, a nullable int array)
        keys = sorted(k for k, v in e.fields.items() if not isinstance(v, (str, bool)))
        if not keys:
            continue
        key = rng.choice(keys)
        current = e.fields[key]
        value = rng.choice(ints) if isinstance(current, int) else rng.choice(lists)
        fields = {**e.fields, key: tuple(value) if isinstance(value, list) else value}
        entries[i] = LogEntry(e.offset, e.batch, e.name, e.version, fields, e.control)
        verdicts, summary = verify_entries(entries)
        outcomes.update(v.outcome for v in verdicts)
        assert summary.events == len(verdicts)
    assert outcomes == {"match", "benign", "safety"}


@pytest.mark.parametrize("story", ["STORY", "STORY_2", "STORY_ELR"])
def test_the_engines_kraft_records_verify_as_a_log(
    story: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 47 item 5: the engine's kraft decisions for a story, written as a metadata log
    in their `append_order`, replay as Kafka's own log and verify: every decision matches.
    The only divergences are the broker epochs, which the contract's events carry and a
    log's offsets do not give (benign)."""
    from . import engine_log

    config = engine_log.ELR_CONFIG if story == "STORY_ELR" else None
    directory = engine_log.write_engine_log(
        getattr(engine_log, story), tmp_path / "__cluster_metadata-0", config
    )
    code, doc, _ = _verify(capsys, str(directory))
    summary = doc["summary"]
    assert code == 0
    assert summary["divergent"]["safety"] == 0
    assert summary["decisions_checked"] == summary["matched"] >= 7
    reasons = [r for e in doc["events"] for d in e["divergences"] for r in d["reasons"]]
    assert reasons and all("broker epoch" in r for r in reasons)
    kinds = summary["events_by_kind"]
    if story == "STORY_ELR":
        assert kinds["BrokerFenced"] == 3 and summary["eligible_leader_replicas"]
        unclean = [e for e in doc["events"] if "UncleanShutdown" in e["kafka_method"]]
        assert [e["decisions"] for e in unclean] == [1, 1]
        return
    assert kinds["BrokerFenced"] == 1
    if story == "STORY":
        assert kinds["ControlledShutdown"] == 1
    else:
        assert kinds["UncleanElection"] == kinds["PreferredElection"] == 1
        assert kinds["AlterPartition"] == 3


def test_jbod_directories_assigned_and_gone_offline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Broker 1 has two log directories (3.7-IV2, KIP-858): a new replica there is
    UNASSIGNED until the broker assigns it (handleAssignReplicasToDirs, an input); when that
    directory goes offline, the heartbeat's handleDirectoriesOffline moves t-0's leadership
    (its records, then the BrokerRegistrationChangeRecord naming the directory left)."""
    from .scenarios import DIRS, Rec, feature, topic

    unassigned, d1a, d1b = (
        "AAAAAAAAAAAAAAAAAAAAAQ",
        "Dir1aaxxxxxxxxxxxxxxxA",
        "Dir1bbxxxxxxxxxxxxxxxA",
    )
    log = KafkaLog()
    log.batch(feature("metadata.version", 21))
    for b in (1, 2, 3):
        log.epochs[b] = log.next_offset
        dirs = [d1a, d1b] if b == 1 else [DIRS[b]]
        fields: dict[str, Any] = {"broker_id": b, "incarnation_id": f"Inc{b}".ljust(21, "x") + "Q"}
        fields |= {"broker_epoch": log.next_offset, "fenced": True, "rack": None, "log_dirs": dirs}
        log.batch(Rec("RegisterBrokerRecord", 3, fields))
    for b in (1, 2, 3):
        log.batch(log.change(b, fenced=-1))
    t0 = {"topic_id": TOPIC_T, "partition_id": 0, "replicas": [1, 2, 3], "isr": [1, 2, 3]}
    t0 |= {"leader": 1, "leader_epoch": 0, "partition_epoch": 0, "removing_replicas": []}
    t0 |= {"adding_replicas": [], "directories": [unassigned, DIRS[2], DIRS[3]]}
    log.batch(topic("t", TOPIC_T), Rec("PartitionRecord", 1, t0))
    log.batch(change(TOPIC_T, 0, directories=[d1b, DIRS[2], DIRS[3]]))
    log.batch(
        change(TOPIC_T, 0, leader=2, isr=[2, 3]),
        Rec(
            "BrokerRegistrationChangeRecord",
            2,
            {"broker_id": 1, "broker_epoch": log.epochs[1], "log_dirs": [d1a]},
        ),
    )
    code, doc, _ = _verify(capsys, str(log.write(tmp_path / "m")))
    assert code == 0, doc["events"]
    assert doc["summary"]["events_by_kind"]["AssignReplicasToDirs"] == 1
    assert doc["summary"]["events_by_kind"]["DirectoriesOffline"] == 1
    assert doc["summary"]["divergent"] == {"benign": 0, "safety": 0}
    assert doc["summary"]["decisions_checked"] == doc["summary"]["matched"]


def test_the_controllers_static_config_is_the_users_to_give(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """unclean.leader.election.enable in the controllers' server.properties is not in the
    log. Said to be true, the rules elect t-2's last replica standing uncleanly where the log
    (written with it false) leaves t-2 without a leader: a benign divergence (availability)."""
    directory = broker_failure(False).write(tmp_path / "m")
    code, doc, _ = _verify(
        capsys, str(directory), "--controller-config", "unclean.leader.election.enable=true"
    )
    assert code == 0
    (event,) = [e for e in doc["events"] if e["kind"] == "BrokerFenced"]
    (d,) = event["divergences"]
    assert d["severity"] == "benign" and d["partition"] == "t-2"
    assert d["log"] == {"leader": -1}
    assert d["predicted"] == {"leader": 2, "isr": [2], "leader_recovery_state": 1}


@pytest.mark.parametrize(
    ("elr", "seeds", "n_events"),
    [
        (False, range(20), 40),
        (True, range(20), 40),
        # found over 300 + 250 seeds of 80 events: a reassignment changed while in progress
        # keeps its removing and adding replicas, and its record sets only the replicas
        (False, [169], 80),
        (True, [130, 142], 80),
        # a controlled shutdown of a broker already in controlled shutdown writes no flag
        (True, [96], 120),
    ],
    ids=[
        "3.9",
        "4.0-elr",
        "3.9-reassignment-changed",
        "elr-reassignment-changed",
        "elr-shutdown-without-flag",
    ],
)
def test_random_engine_logs_verify(
    elr: bool, seeds: Iterable[int], n_events: int, tmp_path: Path
) -> None:
    """Differential: random contract logs (tests/property's state-aware generator, 40 events
    each) through the engine, written as metadata logs in append_order, verify with no
    divergence but the broker epochs (the contract's, not the log's offsets). The engine
    and verify share the handlers; what this holds is the grouping, the replay and the
    engine's record order and content."""
    import io

    from shadow_controller.metadata_log_verify import verify
    from tests.property.generator import generate_log

    from .engine_log import ELR_CONFIG

    config = ELR_CONFIG if elr else ControllerConfig(mode="kraft")
    checked = 0
    for seed in seeds:
        events = generate_log(seed, n_events, config, initial_topics=0, min_isr_configs=elr)
        directory = write_engine_log(events, tmp_path / f"{seed}", config)
        out = io.StringIO()
        code = verify([str(directory)], as_json=True, out=out, err=io.StringIO())
        doc = json.loads(out.getvalue())
        others = [
            (seed, e["offsets"], d["reasons"])
            for e in doc["events"]
            for d in e["divergences"]
            if "broker epoch" not in d["reasons"][0]
        ]
        assert code == 0 and not others, others
        checked += doc["summary"]["decisions_checked"]
    assert checked > 20
