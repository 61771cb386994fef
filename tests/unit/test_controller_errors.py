"""An exception inside the controller (a bug here, never bad input) must not stop the job:
the event is dead-lettered with the exception's name, and the job goes on. The engine and
the job's micro-batch pipeline must lose exactly the same decisions, so the fault is
injected into the core functions both of them call (`state_machines/loop.py`)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from state_machines import loop as loop_module
from state_machines import partition as partition_module
from state_machines import rule_sets
from state_machines.engine import Engine
from state_machines.events import parse_line
from streaming import batches
from tests.property.generator import generate_log
from tests.streaming.spark_helpers import canonical


class Boom(RuntimeError):
    pass


def engine_run(lines: list[bytes]) -> tuple[list[str], list[tuple[int, str]]]:
    engine = Engine()
    out = [
        canonical(r) for i, line in enumerate(lines) for r in engine.process(parse_line(line, i))
    ]
    return out, engine.errors


@pytest.mark.parametrize("buckets", [0, 4])
def test_a_partition_step_that_raises_loses_that_command_only(monkeypatch, buckets: int) -> None:
    lines = [json.dumps(e).encode() for e in generate_log(3, n_events=60)]
    clean, _ = engine_run(lines)
    original = partition_module.partition_step
    hits: list[tuple[int, str]] = []

    def faulty(state, cmd, config):
        if cmd.partition == 0 and cmd.cause_offset % 7 == 3:
            hits.append((cmd.cause_offset, cmd.topic))
            raise Boom("injected")
        return original(state, cmd, config)

    monkeypatch.setattr(partition_module, "partition_step", faulty)
    expected, errors = engine_run(lines)
    assert hits, "the fault is reached"
    assert errors and all(
        "Boom: injected" in reason and "in partition" in reason for _, reason in errors
    )
    assert expected != clean, "the lost commands had decisions"

    decisions, dlq, _ = batches.run_batches(lines, batch_size=5, buckets=buckets)
    assert sorted(canonical(r) for r in decisions) == sorted(expected)
    assert sorted((d["offset"], d["reason"]) for d in dlq) == sorted(errors)
    assert all(d["source"].startswith("partition:") and d["value_base64"] for d in dlq)


@pytest.mark.parametrize("where", ["directory_step", "after_reports"])
def test_a_directory_step_that_raises_dead_letters_the_event_and_the_job_goes_on(
    monkeypatch, where: str
) -> None:
    lines = [json.dumps(e).encode() for e in generate_log(11, n_events=80)]
    original = (
        rule_sets.ZK.directory_step if where == "directory_step" else getattr(loop_module, where)
    )

    def patch(step) -> None:
        # the directory step is the rule set's (rule_sets.py); after_reports is the loop's own
        if where == "directory_step":
            monkeypatch.setattr(
                rule_sets, "ZK", dataclasses.replace(rule_sets.ZK, directory_step=step)
            )
        else:
            monkeypatch.setattr(loop_module, where, step)

    # the fault hits the last cause that reaches this step, so later events see its effect
    reached: list[int] = []

    at = 3 if where == "directory_step" else 4  # the position of `offset` in its signature

    def probe(*args):
        reached.append(args[at])
        return original(*args)

    patch(probe)
    engine_run(lines)
    target = reached[len(reached) // 2]

    def faulty(*args):
        if args[at] == target:
            raise Boom(f"injected in {where}")
        return original(*args)

    # one loop serves the engine and the job: one patch reaches both
    patch(faulty)
    expected, errors = engine_run(lines)
    assert [offset for offset, _ in errors] == [target]
    assert "Boom" in errors[0][1]

    decisions, dlq, _ = batches.run_batches(lines, batch_size=7)
    assert sorted(canonical(r) for r in decisions) == sorted(expected)
    assert [(d["offset"], d["reason"]) for d in dlq] == errors
    if where == "directory_step":  # the record is at hand: the letter carries it
        assert d_value(dlq[0]) == lines[target]


def d_value(doc: dict) -> bytes:
    import base64

    return base64.b64decode(doc["value_base64"])
