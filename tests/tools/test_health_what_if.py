"""`health` and `what-if` on a real checkpoint: the job runs the scenario in file mode
(tests/tools/health_scenario.py), `health` reads its state back and lists exactly the one
offline partition, the one under-min-ISR partition and the one stuck reassignment;
`what-if` leaves every file of the checkpoint as it was, and decides what the job decides
when the same events are appended to its input and it continues from that batch."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from shadow_controller import controller_state, health
from shadow_controller.branch import branch_checkpoint
from shadow_controller.cli import main as cli_main
from shadow_controller.inspect import committed_batches
from streaming import exits
from streaming.settings.checkpoint import save_settings
from streaming.settings.schema import JobSettings
from tests.streaming.spark_helpers import (
    assert_same_multiset,
    canonical,
    read_output,
    run_file_job,
    run_to_end,
)
from tests.tools.health_scenario import EVENTS, HYPOTHETICAL, lines

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def job(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("health")
    run_file_job(spark, base, lines(EVENTS))
    ckpt = str(base / "ckpt")
    # what `shadow-controller run` records; the tools read the controller settings from it
    save_settings(
        JobSettings(input=f"file:{base / 'in'}", output=f"file:{base / 'out'}", checkpoint=ckpt),
        ckpt,
    )
    return {"base": base, "checkpoint": ckpt}


def digests(directory: str) -> dict[str, str]:
    return {
        str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(Path(directory).rglob("*"))
        if p.is_file()
    }


def test_health_lists_exactly_the_offline_under_min_isr_and_stuck(
    spark: Any, job: dict[str, Any]
) -> None:
    result = health.report(controller_state.load(spark, job["checkpoint"]))
    assert [r["partition"] for r in result["offline"]] == ["logs-0"]
    assert [r["partition"] for r in result["under_min_isr"]] == ["orders-0"]
    assert [
        (r["partition"], r["target_not_in_isr"]) for r in result["reassignments"] if r["stuck"]
    ] == [("events-0", [3, 4])]
    assert result["reassignments"][0]["age_ms"] == 3_000
    assert result["shutting_down"][0]["broker"] == 6


def test_health_command_text_json_and_exit_code(
    job: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_main(["health", "--checkpoint", job["checkpoint"]]) == exits.OFFLINE
    text = capsys.readouterr().out
    assert "offline partitions: 1\n  logs-0  OfflinePartition" in text
    assert "under min ISR: 1\n  orders-0  leader 1  isr [1]" in text
    assert "reassignments in progress: 1\n  events-0  [3,4,1,2] -> [3,4]" in text
    assert text.endswith(
        "status: OFFLINE partitions; 1 offline, 1 under min ISR, 1 of 5 under-replicated\n"
    )
    assert cli_main(["health", "--checkpoint", job["checkpoint"], "--json"]) == exits.OFFLINE
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "offline" and doc["batch"] == committed_batches(job["checkpoint"])[-1]


def test_what_if_leaves_the_checkpoint_byte_identical(
    job: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    before = digests(job["checkpoint"])
    argv = [
        "what-if",
        "--checkpoint",
        job["checkpoint"],
        *(a for e in HYPOTHETICAL for a in ("--event", json.dumps(e))),
    ]
    # health's exit code for the state after the events: logs-0 is still offline
    assert cli_main(argv) == exits.OFFLINE
    assert "controlled shutdown of broker 3: accepted" in capsys.readouterr().out
    assert cli_main(["health", "--checkpoint", job["checkpoint"], "--json"]) == exits.OFFLINE
    capsys.readouterr()
    assert digests(job["checkpoint"]) == before


def test_what_if_decides_what_the_job_decides_when_it_continues(
    spark: Any, job: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events_file = tmp_path / "what-if.jsonl"
    events_file.write_bytes(b"".join(line + b"\n" for line in lines(HYPOTHETICAL)))
    assert (
        cli_main(
            ["what-if", "--checkpoint", job["checkpoint"], "--events", str(events_file), "--json"]
        )
        == exits.OFFLINE
    )
    predicted = json.loads(capsys.readouterr().out)
    assert predicted["impact"]["unclean_elections"] and predicted["impact"]["controlled_shutdown"]

    # the job continues from the same batch (a branch of the checkpoint) with the events
    # appended to its input
    batch = committed_batches(job["checkpoint"])[-1]
    branch = tmp_path / "branch"
    branch_checkpoint(job["checkpoint"], batch, str(branch))
    inputs = tmp_path / "in"
    shutil.copytree(job["base"] / "in", inputs)
    (inputs / "0001.jsonl").write_bytes(events_file.read_bytes())
    run_to_end(
        spark,
        JobSettings(
            input=f"file:{inputs}", output=f"file:{tmp_path / 'out'}", checkpoint=str(branch)
        ),
    )
    decided = read_output(tmp_path / "out")
    assert {d["cause_offset"] for d in decided} <= set(
        range(len(EVENTS), len(EVENTS) + len(HYPOTHETICAL))
    )
    assert_same_multiset(decided, [canonical(d) for d in predicted["decisions"]])


def test_a_checkpoint_spark_cannot_read_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Committed batches and settings, but no state: the command says so in one line
    (exit 2), as it does when Spark's readers fail, rather than with a JVM stack trace."""
    ckpt = tmp_path / "ckpt"
    save_settings(
        JobSettings(
            input=f"file:{tmp_path}/in", output=f"file:{tmp_path}/out", checkpoint=str(ckpt)
        ),
        str(ckpt),
    )
    (ckpt / "query" / "commits").mkdir(parents=True)
    (ckpt / "query" / "commits" / "0").write_text("v1\n{}\n")
    (ckpt / "query" / "offsets").mkdir()
    (ckpt / "query" / "offsets" / "0").write_text('v1\n{}\n{"line":1}\n')
    assert cli_main(["health", "--checkpoint", str(ckpt)]) == exits.USAGE
    captured = capsys.readouterr()
    [line] = captured.err.splitlines()
    assert line.startswith(
        f"shadow-controller health: {ckpt}: no state of the job's two operators (found: none; "
    ), line
    assert captured.out == ""
