"""Output for scripts and for people: `simulate --json` and `replay --diff --json` summaries,
and progress bars that appear on a terminal only."""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path

import pytest

from shadow_controller import cli, simulate
from shadow_controller.replay_diff import compare, diff_json, format_diff
from state_machines.engine import Engine
from state_machines.events import parse_line

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "three-brokers.jsonl"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def events_with_mistakes(tmp_path: Path) -> tuple[Path, list[bytes]]:
    lines = EXAMPLE.read_bytes().splitlines()
    lines += [
        b"",
        b"{not json",
        b'{"v":1,"type":"BrokerStartup","broker_id":"one"}',
        b'{"v":1,"type":"ObservedPartitionState","topic":"orders","partition":0,"leader":1,'
        b'"leader_epoch":0,"isr":[1]}',
    ]
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path, lines


def test_simulate_json_summary_counts_what_the_engine_did(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, lines = events_with_mistakes(tmp_path)
    assert cli.main(["simulate", str(path), "--out", str(tmp_path / "d.jsonl"), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)

    engine, skipped, records = Engine(), 0, []
    for i, line in enumerate(lines):
        try:
            records += engine.process(parse_line(line, i))
        except Exception:
            skipped += 1
    assert summary == {
        "events": len(lines) - skipped,
        "lines": len(lines),
        "skipped_lines": skipped,
        "dead_lettered": len(engine.errors),
        "decisions": len(records),
        "decisions_by_type": dict(sorted(Counter(r["type"] for r in records).items())),
        "shadow": {k: engine.observations.get(k, 0) for k in ("match", "benign", "safety")},
    }
    assert skipped == 3 and sum(summary["shadow"].values()) == 1
    assert len((tmp_path / "d.jsonl").read_text().splitlines()) == summary["decisions"]


def test_simulate_shows_progress_on_a_terminal_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = events_with_mistakes(tmp_path)
    out = str(tmp_path / "d.jsonl")
    assert cli.main(["simulate", str(path), "--out", out]) == 0
    assert "simulate:" not in capsys.readouterr().err  # not a terminal: no bar

    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    monkeypatch.setattr(simulate, "PROGRESS_DELAY_S", 0)
    assert cli.main(["simulate", str(path), "--out", out]) == 0
    shown = terminal.getvalue()
    assert "simulate: 100%" in shown, shown
    assert "skipped (offset" in shown  # the bad lines are still reported


def lair(
    topic: str, p: int, cause: int, leader: int, epoch: int, election: str | None = None
) -> dict:
    return {
        "type": "LeaderAndIsr",
        "topic": topic,
        "partition": p,
        "cause_offset": cause,
        "seq": 0,
        "leader": leader,
        "leader_epoch": epoch,
        "partition_epoch": epoch,
        "isr": [leader],
        **({"election": election} if election else {}),
    }


def test_replay_diff_as_json_says_what_the_table_says() -> None:
    prefix = [lair("t", 0, 1, 1, 0, "initial"), lair("t", 1, 1, 2, 0, "initial")]
    original = [lair("t", 0, 5, -1, 1, "offline"), lair("t", 1, 5, 2, 1)]
    branch = [lair("t", 0, 5, 2, 1, "unclean"), lair("t", 1, 5, 2, 1)]
    diff = compare(3, [5], prefix, original, branch)

    doc = diff_json(diff)

    assert json.loads(json.dumps(doc)) == doc
    assert doc["changed"] == [
        {
            "topic_partition": "t-0",
            "topic": "t",
            "partition": 0,
            "original": {"leader": -1, "leader_epoch": 1, "unclean_elections": 0, "offline": True},
            "branch": {"leader": 2, "leader_epoch": 1, "unclean_elections": 1, "offline": False},
        }
    ]
    assert doc["counts"]["unclean elections"] == {"original": 0, "branch": 1}
    assert doc["counts"]["offline partitions"] == {"original": 1, "branch": 0}
    assert (doc["from_batch"], doc["causes"], doc["partitions_compared"]) == (
        3,
        {"count": 1, "first": 5, "last": 5},
        2,
    )
    assert (doc["only_in_original"], doc["only_in_branch"]) == (1, 1)
    assert "t-0" in format_diff(diff) and "t-1" not in format_diff(diff)
