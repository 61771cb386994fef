"""A run refuses a checkpoint whose state was laid out under other settings (scale mode's
bucket count, the shuffle partitions its labels are balanced over, the bucket layout):
otherwise every partition's state would be looked up under keys it was never stored
under, and the controller would silently start from nothing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from shadow_controller.cli import main as cli_main
from streaming.settings.checkpoint import (
    SETTINGS_FILE,
    STATE_LAYOUT,
    CheckpointMismatch,
    check_frozen,
    save_settings,
)
from streaming.settings.schema import JobSettings


def _checkpoint(tmp_path, **settings) -> tuple[str, JobSettings]:
    ckpt = str(tmp_path / "ckpt")
    job = JobSettings(input="file:in", output="file:out", checkpoint=ckpt, **settings)
    save_settings(job, ckpt)
    os.makedirs(os.path.join(ckpt, "query"))  # a query has run on it
    return ckpt, job


def test_the_same_layout_runs_and_a_new_checkpoint_takes_any(tmp_path):
    ckpt, job = _checkpoint(tmp_path, partition_buckets=64, shuffle_partitions=2)
    check_frozen(job, ckpt)
    check_frozen(
        JobSettings(input="", output="", checkpoint="", partition_buckets=8), str(tmp_path / "new")
    )


@pytest.mark.parametrize(
    "field, value", [("partition_buckets", 32), ("partition_buckets", 0), ("shuffle_partitions", 4)]
)
def test_a_changed_frozen_setting_is_refused(tmp_path, field, value):
    ckpt, job = _checkpoint(tmp_path, partition_buckets=64, shuffle_partitions=2)
    setattr(job, field, value)
    with pytest.raises(CheckpointMismatch, match=f"{field} is frozen"):
        check_frozen(job, ckpt)


def test_scale_mode_state_of_another_layout_is_refused(tmp_path):
    ckpt, job = _checkpoint(tmp_path, partition_buckets=64)
    path = os.path.join(ckpt, SETTINGS_FILE)
    doc = json.loads(Path(path).read_text())
    doc["state_layout"] = STATE_LAYOUT - 1
    Path(path).write_text(json.dumps(doc))
    with pytest.raises(CheckpointMismatch, match="layout"):
        check_frozen(job, ckpt)
    per_partition, job = _checkpoint(tmp_path / "pp")
    doc = json.loads(Path(per_partition, SETTINGS_FILE).read_text())
    del doc["state_layout"]  # per-partition state has one layout; an older file is fine
    Path(per_partition, SETTINGS_FILE).write_text(json.dumps(doc))
    check_frozen(job, per_partition)


def test_run_says_why_and_exits_2_without_starting_spark(tmp_path, capsys):
    ckpt, _ = _checkpoint(tmp_path, partition_buckets=64)
    code = cli_main(
        [
            "run",
            "--input",
            f"file:{tmp_path}/in",
            "--output",
            f"file:{tmp_path}/out",
            "--checkpoint",
            ckpt,
            "--set",
            "job.partition_buckets=16",
        ]
    )
    assert code == 2
    assert "partition_buckets is frozen" in capsys.readouterr().err
