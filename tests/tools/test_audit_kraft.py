"""`audit` on a KRaft run: the metadata records are replayed (`PartitionRegistration.merge`,
the broker registry) and KRaft's invariants checked on them. The engine's own KRaft
decisions keep every rule; a violation planted in them is caught, named and placed; input
with no partition record a rule can read is refused, never reported "ok"."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from shadow_controller import audit_kraft
from state_machines.engine import Engine
from state_machines.events import parse_event
from state_machines.model import ControllerConfig
from streaming.exits import CHECK_FAILED, OK, USAGE
from tests.property.generator import generate_log

ROOT = Path(__file__).resolve().parents[2]
KRAFT = ControllerConfig(mode="kraft")
ELR = ControllerConfig(mode="kraft", metadata_version="4.0-IV1", eligible_leader_replicas_version=1)

Record = dict[str, Any]


def kraft_decisions(events: list[Record], config: ControllerConfig = KRAFT) -> list[Record]:
    engine = Engine(config)
    out: list[Record] = []
    for i, event in enumerate(events):
        out.extend(engine.process(parse_event(event, i)))
    return out


def story(config: ControllerConfig = KRAFT) -> list[Record]:
    events = [
        json.loads(line)
        for line in (ROOT / "examples" / "three-brokers.jsonl").read_text().splitlines()
    ]
    return kraft_decisions(events, config)


def broken(records: list[Record]) -> dict[str, list[tuple[str, int]]]:
    """rule -> [(partition, cause_offset)] of the checked rows that break it."""
    out: dict[str, list[tuple[str, int]]] = {}
    for row in audit_kraft.partition_states(records):
        for rule in audit_kraft.RULES:
            if row["checked"] and not row[rule]:
                out.setdefault(rule, []).append(
                    (f"{row['topic']}-{row['partition']}", row["cause_offset"])
                )
    return out


@pytest.mark.parametrize("config", [KRAFT, ELR], ids=["3.9-IV0", "4.0-IV1 with ELR"])
def test_the_engines_kraft_decisions_keep_every_rule(config: ControllerConfig) -> None:
    checked = 0
    for seed in range(12):
        records = kraft_decisions(generate_log(seed, n_events=80), config)
        rows = audit_kraft.partition_states(records)
        checked += sum(r["checked"] for r in rows)
        assert broken(records) == {}, f"seed {seed}"
    records = story(config)
    assert broken(records) == {}
    assert checked > 250


def _change(records: list[Record], partition: str, cause: int) -> Record:
    for r in records:
        if (
            r["type"] == "PartitionChangeRecord"
            and f"{r['topic']}-{r['partition']}" == partition
            and r["cause_offset"] == cause
        ):
            return r
    raise AssertionError(f"no PartitionChangeRecord of {partition} at cause_offset {cause}")


def _restate(records: list[Record], cause: int, **fields: Any) -> list[Record]:
    """A PartitionRecord restating orders-0 at `cause` (Kafka replays one over an existing
    partition: `ReplicationControlManager.replay(PartitionRecord)`)."""
    first = next(r for r in records if r["type"] == "PartitionRecord" and r["topic"] == "orders")
    return [*records, {**first, "cause_offset": cause, "cause_id": "planted", **fields}]


def _plant_leader_outside_isr(records: list[Record]) -> list[Record]:
    # the preferred election at 12 makes 1 the leader of orders-0; the ISR drops it
    _change(records, "orders-0", 12)["isr"] = [3, 2]
    return records


def _plant_isr_outside_replicas(records: list[Record]) -> list[Record]:
    _change(records, "orders-0", 11)["isr"] = [3, 1, 2, 42]
    return records


def _plant_epochs_back(records: list[Record]) -> list[Record]:
    return _restate(records, 14, leader=1, leader_epoch=0, partition_epoch=0)


def _plant_two_leaders(records: list[Record]) -> list[Record]:
    # leader epoch 3 of orders-0 is broker 1's (the preferred election at 12)
    return _restate(records, 14, leader=3, leader_epoch=3, partition_epoch=9)


def _plant_leader_on_fenced_broker(records: list[Record]) -> list[Record]:
    # broker 1 is fenced at 6 and orders-0's leadership moves to 2 in the same cause:
    # without that record, orders-0 keeps a fenced leader
    change = _change(records, "orders-0", 6)
    return [r for r in records if r is not change]


@pytest.mark.parametrize(
    ("rule", "plant", "where"),
    [
        ("leader_in_isr_or_elr", _plant_leader_outside_isr, ("orders-0", 12)),
        ("isr_within_replicas", _plant_isr_outside_replicas, ("orders-0", 11)),
        ("epochs_never_go_back", _plant_epochs_back, ("orders-0", 14)),
        ("one_leader_per_epoch", _plant_two_leaders, ("orders-0", 14)),
        ("leader_is_active", _plant_leader_on_fenced_broker, ("orders-0", 6)),
    ],
)
def test_a_planted_violation_is_caught_where_it_is(
    rule: str, plant: Callable[[list[Record]], list[Record]], where: tuple[str, int]
) -> None:
    found = broken(plant(story()))
    assert where in found.get(rule, []), found


def test_a_change_of_a_partition_the_input_never_created_is_unchecked_not_held() -> None:
    records = [r for r in story() if not (r["type"] == "PartitionRecord" and r["topic"] == "audit")]
    rows = audit_kraft.partition_states(records)
    unchecked = [r for r in rows if not r["checked"]]
    assert unchecked and {r["topic"] for r in unchecked} == {"audit"}


def test_a_re_created_topic_starts_its_epochs_again() -> None:
    events: list[Record] = [
        *(
            {"v": 1, "type": "BrokerStartup", "broker_id": b, "broker_epoch": 100 + b}
            for b in (1, 2)
        ),
        {"v": 1, "type": "ControllerFailover", "controller_id": 1, "controller_epoch": 1},
        {"v": 1, "type": "TopicCreation", "topic": "t", "partitions": {"0": [1, 2]}},
        {"v": 1, "type": "BrokerFailure", "broker_id": 1},
        {"v": 1, "type": "TopicDeletion", "topic": "t"},
        {"v": 1, "type": "TopicCreation", "topic": "t", "partitions": {"0": [2, 1]}},
    ]
    records = kraft_decisions(events)
    assert sum(r["type"] == "PartitionRecord" for r in records) == 2
    assert broken(records) == {}


# -- the command ------------------------------------------------------------------------------


def audit_cli(tmp_path: Path, records: list[Record]) -> subprocess.CompletedProcess[str]:
    tmp_path.mkdir(exist_ok=True)
    path = tmp_path / "decisions.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "shadow_controller.cli",
            "audit",
            str(path),
            "--report",
            str(tmp_path / "report"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_command_audits_kraft_output_and_catches_a_planted_violation(tmp_path: Path) -> None:
    run = audit_cli(tmp_path / "clean", story())
    assert run.returncode == OK, run.stdout + run.stderr
    assert run.stdout.startswith("audited 16 PartitionRecord and PartitionChangeRecord records")
    assert all(rule in run.stdout for rule in audit_kraft.RULES)

    run = audit_cli(tmp_path / "planted", _plant_leader_outside_isr(story()))
    assert run.returncode == CHECK_FAILED, run.stdout + run.stderr
    [line] = [x for x in run.stdout.splitlines() if "FAILED" in x]
    assert line.split()[0] == "leader_in_isr_or_elr"
    assert "orders-0 at cause_offset 12" in line, line


def test_the_command_refuses_records_it_cannot_check(tmp_path: Path) -> None:
    """Decisions with no partition state record (here: a KRaft run's broker, topic and
    result records alone) leave nothing to check: exit 2 and one line, no "ok"."""
    records = [r for r in story() if r["type"] not in audit_kraft.PARTITION_TYPES]
    run = audit_cli(tmp_path, records)
    assert run.returncode == USAGE, run.stdout + run.stderr
    [line] = run.stderr.splitlines()
    assert line.startswith("shadow-controller audit: nothing to audit in "), line
    assert "no rule was checked" in line and run.stdout == ""
