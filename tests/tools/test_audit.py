"""`shadow-controller audit`: the Great Expectations suite passes on the engine's decisions
and fails on tampered ones, naming the broken rule."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from state_machines.engine import Engine
from state_machines.events import parse_event
from tests.property.generator import generate_log

ROOT = Path(__file__).resolve().parents[2]


def decisions_of(events: list[dict]) -> list[dict]:
    engine = Engine()
    out = []
    for i, event in enumerate(events):
        out.extend(engine.process(parse_event(event, i)))
    return out


def audit(tmp_path: Path, records: list[dict]) -> subprocess.CompletedProcess:
    path = tmp_path / "decisions.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return subprocess.run(
        [sys.executable, "-m", "streaming.cli", "audit", str(path), "--report", str(tmp_path / "report")],
        cwd=ROOT, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def story() -> list[dict]:
    events = [json.loads(line) for line in (ROOT / "examples" / "three-brokers.jsonl").read_text().splitlines()]
    return decisions_of(events) + [
        {**r, "cause_offset": r["cause_offset"] + 1000} for r in decisions_of(generate_log(4, n_events=60))
        if r.get("topic") not in ("orders", "audit")
    ]


def test_a_correct_log_passes_and_renders_data_docs(tmp_path: Path, story: list[dict]) -> None:
    run = audit(tmp_path, story)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "FAILED" not in run.stdout
    assert list((tmp_path / "report").rglob("index.html")), "Data Docs were not rendered"


def _tamper(records: list[dict], change) -> list[dict]:
    out = [dict(r) for r in records]
    for r in out:
        if r["type"] == "LeaderAndIsr" and r["topic"] == "orders" and r["partition"] == 0 and r["leader_epoch"] == 2:
            change(r)
            return out
    raise AssertionError("the story has no orders-0 LeaderAndIsr at leader epoch 2")


@pytest.mark.parametrize(("rule", "change"), [
    ("leader_in_isr_unless_unclean", lambda r: r.update(isr=[x for x in r["isr"] if x != r["leader"]] or [99])),
    ("leader_epoch_never_decreases", lambda r: r.update(leader_epoch=0, partition_epoch=r["partition_epoch"])),
    ("one_leader_per_epoch", lambda r: r.update(leader=[x for x in r["replicas"] if x != r["leader"]][0], isr=r["replicas"])),
    ("isr_within_replicas", lambda r: r.update(isr=r["isr"] + [42])),
    ("partition_epoch_increases_on_change", lambda r: r.update(partition_epoch=0)),
])
def test_a_tampered_log_fails_naming_the_rule(tmp_path: Path, story: list[dict], rule: str, change) -> None:
    run = audit(tmp_path, _tamper(story, change))
    assert run.returncode == 1, run.stdout + run.stderr
    failed = [line.split()[0] for line in run.stdout.splitlines() if "FAILED" in line]
    assert rule in failed, run.stdout
