"""A command whose output's reader goes away stops quietly: `simulate LOG | head` prints
no traceback and exits 141 (128 + SIGPIPE, what a shell reports for a filter it ended),
the code streaming/exits.py lists."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from streaming.exits import PIPE_CLOSED

REPO = Path(__file__).resolve().parents[2]
COMMAND = REPO / ".venv" / "bin" / "shadow-controller"


def test_simulate_into_a_closed_pipe_stops_quietly(tmp_path: Path) -> None:
    # enough decisions to overflow the pipe's buffer (64 KiB) after the reader left
    events = [
        {"v": 1, "type": "BrokerStartup", "broker_id": b, "broker_epoch": 100 + b}
        for b in (1, 2, 3)
    ]
    events.append({"v": 1, "type": "ControllerFailover", "controller_id": 1, "controller_epoch": 1})
    partitions = {str(p): [1 + p % 3, 1 + (p + 1) % 3] for p in range(2000)}
    events.append({"v": 1, "type": "TopicCreation", "topic": "t", "partitions": partitions})
    log = tmp_path / "events.jsonl"
    log.write_text("".join(json.dumps(e) + "\n" for e in events))

    proc = subprocess.Popen(
        [str(COMMAND), "simulate", str(log)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # the reader goes away, as `head -1` does
    stderr = proc.stderr.read().decode()
    code = proc.wait(timeout=120)

    assert json.loads(first)["type"] == "UpdateMetadata"
    assert "Traceback" not in stderr, stderr
    assert stderr == ""
    assert code == PIPE_CLOSED
