"""`shadow-controller timeline`: one partition's leader, ISR and epochs over the log as a PNG;
the series it draws are the partition's states in the decisions."""

from __future__ import annotations

import argparse
import json
import struct
from pathlib import Path

import pytest

from shadow_controller.audit_load import load_decisions
from shadow_controller.timeline import add_parser, partition_series, timeline
from streaming.exits import USAGE
from tests.streaming.spark_helpers import simulate_records

ROOT = Path(__file__).resolve().parents[2]

# unclean.leader.election.enable on the topic; broker 1 shuts down, then every broker fails
# and broker 1 comes back first, outside the ISR.
UNCLEAN_STORY = [
    {"v": 1, "type": "BrokerStartup", "broker_id": 1, "broker_epoch": 101},
    {"v": 1, "type": "BrokerStartup", "broker_id": 2, "broker_epoch": 102},
    {"v": 1, "type": "BrokerStartup", "broker_id": 3, "broker_epoch": 103},
    {"v": 1, "type": "ControllerFailover", "controller_id": 1, "controller_epoch": 1},
    {
        "v": 1,
        "type": "TopicCreation",
        "id": "create-t",
        "topic": "t",
        "partitions": {"0": [1, 2, 3]},
        "configs": {"unclean.leader.election.enable": "true"},
    },
    {"v": 1, "type": "ControlledShutdown", "id": "shutdown-1", "broker_id": 1, "broker_epoch": 101},
    {"v": 1, "type": "BrokerFailure", "id": "b1-down", "broker_id": 1},
    {"v": 1, "type": "BrokerFailure", "id": "b2-down", "broker_id": 2},
    {"v": 1, "type": "BrokerFailure", "id": "b3-down", "broker_id": 3},
    {"v": 1, "type": "BrokerStartup", "id": "b1-back", "broker_id": 1, "broker_epoch": 104},
    {"v": 1, "type": "BrokerStartup", "id": "b2-back", "broker_id": 2, "broker_epoch": 105},
]

# (cause_offset, leader, isr, leader_epoch, partition_epoch, election, cause_id), worked out
# from Kafka's rules: the controlled shutdown moves leadership to the next ISR member and
# drops 1 from the ISR; when broker 3 fails, the last ISR member keeps its place with no
# leader (-1), but no replica is live to be told (requests go only to live brokers), so
# that write has no LeaderAndIsr and no point in the series; broker 1 returning outside the
# ISR is elected uncleanly because the topic allows it (leader epoch 4: the unseen write
# was epoch 3).
UNCLEAN_EXPECTED = [
    (4, 1, [1, 2, 3], 0, 0, "initial", "create-t"),
    (5, 2, [2, 3], 1, 1, "controlled_shutdown", "shutdown-1"),
    (6, 2, [2, 3], 1, 1, None, "b1-down"),
    (7, 3, [3], 2, 2, "offline", "b2-down"),
    (9, 1, [1], 4, 4, "unclean", "b1-back"),
    (10, 1, [1], 4, 4, None, "b2-back"),
]

# examples/three-brokers.jsonl, orders-0: the accepted AlterPartition at 11 expands the ISR
# and bumps the partition epoch without a LeaderAndIsr.
ORDERS_EXPECTED = [
    (4, 1, [1, 2, 3], 0, 0, "initial", "create-orders"),
    (6, 2, [2, 3], 1, 1, "offline", "b1-crash"),
    (7, 3, [3], 2, 2, "controlled_shutdown", "b2-shutdown"),
    (8, 3, [3], 2, 2, None, "b2-down"),
    (9, 3, [3], 2, 2, None, "b1-back"),
    (10, 3, [3], 2, 2, None, "b2-back"),
    (11, 3, [3, 1, 2], 2, 3, None, "isr-expand"),
    (12, 1, [3, 1, 2], 3, 4, "preferred", "preferred"),
]


def write_decisions(path: Path, events: list[dict]) -> Path:
    records = simulate_records([json.dumps(e).encode() for e in events])
    path.write_text("".join(r + "\n" for r in records))
    return path


def as_rows(series) -> list[tuple]:
    return [
        (
            r.cause_offset,
            r.leader,
            list(r.isr),
            r.leader_epoch,
            r.partition_epoch,
            r.election,
            r.cause_id,
        )
        for r in series.itertuples(index=False)
    ]


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG signature"
    assert data[12:16] == b"IHDR"
    assert data[-8:-4] == b"IEND", "PNG not terminated"
    return struct.unpack(">II", data[16:24])


@pytest.fixture
def unclean_decisions(tmp_path: Path) -> Path:
    return write_decisions(tmp_path / "decisions.jsonl", UNCLEAN_STORY)


def test_series_of_an_unclean_story_match_the_decisions(
    unclean_decisions: Path, tmp_path: Path
) -> None:
    series = timeline(str(unclean_decisions), "t-0", str(tmp_path / "t-0.png"))
    assert as_rows(series) == UNCLEAN_EXPECTED
    assert list(series["isr_size"]) == [len(isr) for _, _, isr, *_ in UNCLEAN_EXPECTED]


def test_series_take_the_newest_state_of_each_cause(unclean_decisions: Path) -> None:
    decisions = load_decisions(str(unclean_decisions))
    lair = decisions[(decisions["type"] == "LeaderAndIsr") & (decisions["topic"] == "t")]
    assert lair.groupby("cause_offset").size().max() > 1, (
        "the story must have a cause with several LeaderAndIsr"
    )
    series = partition_series(decisions, "t", 0)
    for row in series.itertuples(index=False):
        cause = lair[lair["cause_offset"] == row.cause_offset]
        assert row.partition_epoch == cause["partition_epoch"].max()
        assert row.leader_epoch == cause["leader_epoch"].max()


def test_series_include_accepted_alter_partition(tmp_path: Path) -> None:
    events = [
        json.loads(line)
        for line in (ROOT / "examples" / "three-brokers.jsonl").read_text().splitlines()
    ]
    path = write_decisions(tmp_path / "decisions.jsonl", events)
    assert as_rows(partition_series(load_decisions(str(path)), "orders", 0)) == ORDERS_EXPECTED


def test_file_output_directory_reads_like_one_file(unclean_decisions: Path, tmp_path: Path) -> None:
    lines = unclean_decisions.read_text().splitlines()
    out = tmp_path / "out"
    out.mkdir()
    for n, start in enumerate(range(0, len(lines), 4)):
        (out / f"decisions-{n:012d}.jsonl").write_text(
            "".join(line + "\n" for line in lines[start : start + 4])
        )
    assert as_rows(timeline(str(out), "t-0", str(tmp_path / "dir.png"))) == UNCLEAN_EXPECTED


def test_png_is_written_and_readable(unclean_decisions: Path, tmp_path: Path) -> None:
    from matplotlib import image

    out = tmp_path / "t-0.png"
    timeline(str(unclean_decisions), "t-0", str(out))
    width, height = png_size(out)
    assert 1000 <= width <= 2400 and 600 <= height <= 1600, (width, height)
    assert 20_000 < out.stat().st_size < 2_000_000
    pixels = image.imread(str(out))
    assert pixels.shape[:2] == (height, width)
    assert pixels[..., :3].std() > 0.05, "the image is blank"


def run_cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="shadow-controller")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


def test_cli_writes_the_png(
    unclean_decisions: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cli.png"
    assert (
        run_cli(
            [
                "timeline",
                "--decisions",
                str(unclean_decisions),
                "--partition",
                "t-0",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert png_size(out)[0] > 0
    assert f"wrote {out}: {len(UNCLEAN_EXPECTED)} causes for t-0" in capsys.readouterr().out


def test_cli_refuses_a_partition_without_state_records_and_draws_nothing(
    unclean_decisions: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing to draw is said and exits 2; no blank picture is left behind as if it were
    an answer."""
    from shadow_controller.cli import main

    out = tmp_path / "none.png"
    argv = ["timeline", "--decisions", str(unclean_decisions), "--partition", "t-7"]
    assert main([*argv, "--out", str(out)]) == USAGE
    [line] = capsys.readouterr().err.splitlines()
    assert line == (
        f"shadow-controller timeline: t-7: no LeaderAndIsr or accepted AlterPartition in "
        f"{unclean_decisions} sets its state; nothing to draw"
    )
    assert not out.exists()


# UNCLEAN_STORY under the KRaft rules, worked out from the quorum controller's: the
# controlled shutdown moves leadership and drops 1 from the ISR
# (`handleBrokerInControlledShutdown`); broker 1's fencing changes nothing more of t-0;
# each failure moves leadership to the last live ISR member, and the last one leaves the
# partition leaderless with its ISR kept (no ELR at 3.9-IV0); broker 1 unfenced is elected
# from outside the ISR, as the topic allows (an unclean election: ISR [1]). Every leader
# set bumps the leader epoch (`PartitionRegistration.merge`).
KRAFT_UNCLEAN_EXPECTED = [
    (4, 1, [1, 2, 3], 0, 0, None, "create-t"),
    (5, 2, [2, 3], 1, 1, None, "shutdown-1"),
    (7, 3, [3], 2, 2, None, "b2-down"),
    (8, -1, [3], 3, 3, None, "b3-down"),
    (9, 1, [1], 4, 4, "unclean", "b1-back"),
]


def test_kraft_decisions_are_replayed_into_the_series(tmp_path: Path) -> None:
    from tests.tools.test_audit_kraft import kraft_decisions

    path = tmp_path / "kraft.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in kraft_decisions(UNCLEAN_STORY)))
    out = tmp_path / "kraft.png"
    series = timeline(str(path), "t-0", str(out))
    assert as_rows(series) == KRAFT_UNCLEAN_EXPECTED
    assert set(series["record"]) == {"PartitionRecord", "PartitionChangeRecord"}
    assert png_size(out)[0] > 0


def test_cli_refuses_a_malformed_partition(unclean_decisions: Path, tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        run_cli(
            [
                "timeline",
                "--decisions",
                str(unclean_decisions),
                "--partition",
                "t",
                "--out",
                str(tmp_path / "x.png"),
            ]
        )
