"""`inspect`'s text says which input offset the state reflects, and never shows a Python or
JSON value (`None`, `null`) for something unknown: held causes, the first batch's start,
a feedback range whose start is gone."""

from __future__ import annotations

import re
from typing import Any

from shadow_controller.inspect import render_table
from shadow_controller.offset_sources import describe_source, reflected_input

PYTHON_VALUES = re.compile(r"\b(None|null|True|False)\b|\?")


def result(sources: list[dict[str, Any]], cause: int | None, events: list[int]) -> dict[str, Any]:
    return {
        "checkpoint": "ckpt",
        "batch": 3,
        "latest_committed": 5,
        "reflects": reflected_input(sources, cause, events),
        "sources": sources,
        "partitions": [],
        "brokers": [],
        "missing_partitions": [],
        "missing_brokers": [],
    }


def test_the_state_names_the_last_offset_it_applied() -> None:
    sources = [
        describe_source(0, {"line": 10}, {"line": 14}),
        describe_source(1, {"batch": 2}, {"batch": 3}),
    ]
    text = render_table(result(sources, None, []))
    assert text.splitlines()[1] == (
        "state after this batch: every event up to offset 13 applied; the next is 14"
    )
    assert not PYTHON_VALUES.search(text), text


def test_a_held_cause_and_its_events_are_named_and_not_counted_as_applied() -> None:
    sources = [describe_source(0, {"line": 10}, {"line": 14})]
    r = result(sources, 11, [12, 13])
    assert r["reflects"]["applied_through"] == 10
    text = render_table(r)
    assert text.splitlines()[1] == (
        "state after this batch: every event up to offset 10 applied; the next is 14 "
        "(the job still holds cause 11 and events [12,13], read but not applied)"
    )
    assert "None" not in text


def test_the_first_batch_and_an_unknown_start_print_no_python_values() -> None:
    sources = [
        describe_source(0, None, {"line": 4}, first_batch=True),
        describe_source(1, None, {"batch": 2}),  # the previous log entry is gone
    ]
    text = render_table(result(sources, None, []))
    assert '  source 0 events (file): its start -> {"line": 4}: cause_offset 0..3' in text
    assert "feedback of batches up to 2" in text
    assert not PYTHON_VALUES.search(text), text


def test_a_kafka_source_names_its_partition() -> None:
    sources = [describe_source(0, {"events": {"0": 5}}, {"events": {"0": 9}})]
    r = result(sources, None, [])
    assert r["reflects"]["next_offset"] == {"events-0": 9}
    assert render_table(r).splitlines()[1] == (
        "state after this batch: every event up to offset 8 applied (events-0 next offset 9)"
    )
