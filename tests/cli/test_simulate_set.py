"""`simulate --set SECTION.KEY=VALUE` reads a setting as `run --set` does (same names,
aliases and checks), over `--config`; a setting simulate cannot use is refused in one line,
not ignored."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from streaming.exits import OK, USAGE

ROOT = Path(__file__).resolve().parents[2]
EVENTS = str(ROOT / "examples" / "three-brokers.jsonl")


def simulate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "shadow_controller.cli", "simulate", EVENTS, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_set_is_read_as_a_config_file_is(tmp_path: Path) -> None:
    config = tmp_path / "kraft.toml"
    config.write_text('[controller]\nmode = "kraft"\n')
    by_file = simulate("--config", str(config))
    by_set = simulate("--set", "controller.mode=kraft")
    assert by_file.returncode == by_set.returncode == OK, by_set.stderr
    assert by_set.stdout == by_file.stdout
    assert '"type":"PartitionChangeRecord"' in by_set.stdout
    # --set overrides --config
    back = simulate("--config", str(config), "--set", "controller.mode=zk")
    assert '"type":"LeaderAndIsr"' in back.stdout and "PartitionChangeRecord" not in back.stdout


def test_an_input_bound_applies_to_the_decoder() -> None:
    run = simulate("--set", "input.max_record_bytes=100")
    assert run.returncode == OK
    assert "skipped (offset 4): record is 119 bytes, over the limit of 100" in run.stderr


def test_a_setting_simulate_cannot_use_or_a_typo_is_one_line() -> None:
    for item, message in (
        ("job.checkpoint=/tmp/x", "--set job.checkpoint: simulate runs in process and reads only"),
        ("controller.mod=kraft", "unknown setting controller.mod; did you mean controller.mode?"),
        ("controller.mode=raft", "controller.mode"),
    ):
        run = simulate("--set", item)
        assert run.returncode == USAGE, run.stderr
        [line] = run.stderr.splitlines()
        assert line.startswith("shadow-controller simulate: ") and message in line, line
        assert run.stdout == ""
