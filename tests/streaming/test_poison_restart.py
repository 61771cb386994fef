"""Crash and restart with poison records interleaved (file mode): SIGKILL mid-run, then a
restart on the same checkpoint. Every decision of the clean log appears once, and every
bad line is dead-lettered once, with its original bytes (or their prefix) and its line."""

from __future__ import annotations

import base64
import glob
import json
import os
import random
import signal
from collections import Counter
from pathlib import Path

import pytest

from tests.poison import fuzzed, named_poisons, poisoned_log, remap
from tests.property.generator import generate_log
from tests.streaming.spark_helpers import (
    canonical,
    read_dlq,
    read_output,
    simulate_records,
    write_input,
)
from tests.streaming.test_restart import RESTART_MAX_OFFSETS, run_cli, wait_for

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def file_poisons(clean: list[bytes]) -> list[tuple[str, bytes]]:
    """The poisons a file can hold: one line each (no tombstone, no line breaks)."""
    out = []
    for what, value in named_poisons() + fuzzed(random.Random(8), clean, 25):
        if value is None:
            continue
        out.append((what, value.replace(b"\n", b"?").replace(b"\r", b"?")))
    return out


# 52 clean events, the 50th a topic deletion (line 83 of the 87 with the poisons): after a
# pending deletion the job admits one line a micro-batch until its reports come back
# through the feedback files, so a deletion near the end keeps its feedback rounds and a
# poison line behind it without a micro-batch for each line after it (generate_log(31, 60)
# put its first deletion at line 80 of 101, and each of the 20 lines after it took one)
CLEAN_EVENTS = 46


def test_sigkill_with_poison_interleaved_then_restart_loses_nothing(tmp_path: Path) -> None:
    clean = [json.dumps(e).encode() for e in generate_log(31, n_events=CLEAN_EVENTS)]
    log = poisoned_log(clean, file_poisons(clean), seed=5)
    write_input(tmp_path / "in", log.lines, files=2)

    first = run_cli(tmp_path)
    try:
        wait_for(
            lambda: len(glob.glob(str(tmp_path / "out" / "decisions-*.jsonl"))) >= 3,
            240,
            "three committed micro-batches",
            first,
        )
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    assert len(glob.glob(str(tmp_path / "out" / "decisions-*.jsonl"))) < len(log.lines) // 6, (
        "the kill lands mid-run"
    )

    second = run_cli(tmp_path, "--available-now", max_offsets=RESTART_MAX_OFFSETS)
    out, _ = second.communicate(timeout=600)
    assert second.returncode == 0, out.decode()[-3000:]
    assert b"deletion reports" in out, "the restart reads deletion reports from the feedback"

    got = Counter(canonical(remap(r, log)) for r in read_output(tmp_path / "out"))
    assert got == Counter(simulate_records(clean))

    letters = read_dlq(tmp_path / "out")
    assert sorted(d["offset"] for d in letters) == sorted(log.bad), (
        "every bad line once, nothing else"
    )
    for d in letters:
        what, original = log.bad[d["offset"]]
        kept = base64.b64decode(d["value_base64"])
        assert kept == original or (
            d.get("truncated") and original.startswith(kept) and d["original_size"] == len(original)
        ), what
