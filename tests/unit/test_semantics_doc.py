"""docs/kafka-semantics.md's state tables (sections 1.1 and 1.2) say what the code does.

The state-machine tests hold the code to literal copies of those tables
(`test_replica_state_machine.py`, `test_partition_state_machine.py`); this test reads the
tables from the page itself and holds them to `state_machines/states.py`, so the page the
tests cite cannot drift from the code: the ids, the valid previous states, and the
transition matrix written out cell by cell.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TypeVar

import pytest

from state_machines.states import (
    PARTITION_STATE_IDS,
    REPLICA_STATE_IDS,
    VALID_PREVIOUS_PARTITION_STATES,
    VALID_PREVIOUS_REPLICA_STATES,
    PartitionState,
    ReplicaState,
)

S = TypeVar("S", ReplicaState, PartitionState)

PAGE = Path(__file__).resolve().parents[2] / "docs" / "kafka-semantics.md"

# The matrices' abbreviated headers, as the page writes them
SHORT = {
    "New": "New",
    "Online": "Online",
    "Offline": "Offline",
    "DelStarted": "ReplicaDeletionStarted",
    "DelSuccessful": "ReplicaDeletionSuccessful",
    "DelIneligible": "ReplicaDeletionIneligible",
    "NonExistent": "NonExistent",
}


def section(heading: str) -> str:
    """The text of the page's section whose heading starts with `heading`, up to the next
    heading of the same or a higher level."""
    text = PAGE.read_text()
    match = re.search(rf"^(#+) {re.escape(heading)}.*$", text, re.MULTILINE)
    assert match is not None, f"{PAGE.name} has no section {heading!r}"
    level = len(match.group(1))
    rest = text[match.end() :]
    end = re.search(rf"^#{{1,{level}}} ", rest, re.MULTILINE)
    return rest[: end.start()] if end else rest


def tables(text: str) -> list[list[list[str]]]:
    """Every Markdown table of `text`, as rows of cells, the separator row left out."""
    out: list[list[list[str]]] = []
    current: list[list[str]] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(set(c) <= set("-: ") for c in cells):
                current.append(cells)
        elif current:
            out.append(current)
            current = []
    return out


def state_named(cls: type[S], name: str, suffix: str) -> S:
    full = SHORT.get(name, name)
    return cls(full if full in cls.__members__ else full + suffix)


def check_section(
    heading: str,
    cls: type[S],
    suffix: str,
    ids: Mapping[S, int],
    valid_previous: Mapping[S, frozenset[S]],
) -> None:
    states_table, matrix = tables(section(heading))[:2]

    assert states_table[0] == ["id", "state", "valid previous states"]
    assert {cls(state): int(i) for i, state, _ in states_table[1:]} == dict(ids)
    assert {
        cls(state): frozenset(cls(p.strip()) for p in previous.split(","))
        for _, state, previous in states_table[1:]
    } == dict(valid_previous)

    header, *rows = matrix
    assert header[0] == "from \\ to"
    targets = [state_named(cls, name, suffix) for name in header[1:]]
    cells = {
        (state_named(cls, row[0], suffix), target): mark
        for row in rows
        for target, mark in zip(targets, row[1:], strict=True)
    }
    assert set(cells) == {(c, t) for c in cls for t in cls}, "every (state, target) pair once"
    assert set(cells.values()) <= {"V", "-"}
    assert {pair for pair, mark in cells.items() if mark == "V"} == {
        (current, target) for target, previous in valid_previous.items() for current in previous
    }


def test_replica_states_match_the_code() -> None:
    check_section(
        "1.1 Replica states",
        ReplicaState,
        "Replica",
        REPLICA_STATE_IDS,
        VALID_PREVIOUS_REPLICA_STATES,
    )


def test_partition_states_match_the_code() -> None:
    check_section(
        "1.2 Partition states",
        PartitionState,
        "Partition",
        PARTITION_STATE_IDS,
        VALID_PREVIOUS_PARTITION_STATES,
    )


@pytest.mark.parametrize(
    ("cell", "flipped"),
    [("| Offline | - | V | V | V | - | V | - |", "| Offline | - | V | V | V | V | V | - |")],
)
def test_a_wrong_cell_is_caught(
    cell: str, flipped: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not vacuous: the same check fails on a copy of the page with one cell flipped."""
    text = PAGE.read_text()
    assert text.count(cell) == 1
    copy = tmp_path / PAGE.name
    copy.write_text(text.replace(cell, flipped))
    monkeypatch.setattr(f"{__name__}.PAGE", copy)
    with pytest.raises(AssertionError):
        test_replica_states_match_the_code()
