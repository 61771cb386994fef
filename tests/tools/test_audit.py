"""`shadow-controller audit`: the Great Expectations suite passes on the engine's decisions
and fails on tampered ones, naming the broken rule and where it broke; input with nothing
to audit is a usage error of one line; `--json` and the progress bar."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from shadow_controller import audit as audit_mod
from shadow_controller import audit_load, audit_zk
from state_machines.engine import Engine
from state_machines.events import parse_event
from streaming.exits import CHECK_FAILED, USAGE, UsageError
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
    return audit_path(tmp_path, path)


def audit_path(tmp_path: Path, path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "shadow_controller.cli",
            "audit",
            str(path),
            "--report",
            str(tmp_path / "report"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def story() -> list[dict]:
    events = [
        json.loads(line)
        for line in (ROOT / "examples" / "three-brokers.jsonl").read_text().splitlines()
    ]
    return decisions_of(events) + [
        {**r, "cause_offset": r["cause_offset"] + 1000}
        for r in decisions_of(generate_log(4, n_events=60))
        if r.get("topic") not in ("orders", "audit")
    ]


def test_a_correct_log_passes_and_renders_data_docs(tmp_path: Path, story: list[dict]) -> None:
    run = audit(tmp_path, story)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "FAILED" not in run.stdout
    assert run.stderr == "", (
        "stderr is not a terminal: no progress output, ours or Great Expectations'"
    )
    assert list((tmp_path / "report").rglob("index.html")), "Data Docs were not rendered"


def _tamper(records: list[dict], change) -> list[dict]:
    out = [dict(r) for r in records]
    for r in out:
        if (
            r["type"] == "LeaderAndIsr"
            and r["topic"] == "orders"
            and r["partition"] == 0
            and r["leader_epoch"] == 2
        ):
            change(r)
            return out
    raise AssertionError("the story has no orders-0 LeaderAndIsr at leader epoch 2")


@pytest.mark.parametrize(
    ("rule", "change"),
    [
        (
            "leader_in_isr_unless_unclean",
            lambda r: r.update(isr=[x for x in r["isr"] if x != r["leader"]] or [99]),
        ),
        (
            "leader_epoch_never_decreases",
            lambda r: r.update(leader_epoch=0, partition_epoch=r["partition_epoch"]),
        ),
        (
            "one_leader_per_epoch",
            lambda r: r.update(
                leader=[x for x in r["replicas"] if x != r["leader"]][0], isr=r["replicas"]
            ),
        ),
        ("isr_within_replicas", lambda r: r.update(isr=r["isr"] + [42])),
        ("partition_epoch_increases_on_change", lambda r: r.update(partition_epoch=0)),
    ],
)
def test_a_tampered_log_fails_naming_the_rule(
    tmp_path: Path, story: list[dict], rule: str, change
) -> None:
    run = audit(tmp_path, _tamper(story, change))
    assert run.returncode == CHECK_FAILED, run.stdout + run.stderr
    failed = {line.split()[0]: line for line in run.stdout.splitlines() if "FAILED" in line}
    assert rule in failed, run.stdout
    # the rule's line says how many records broke it and where: partition and cause offset
    assert "record" in failed[rule] and "orders-0 at cause_offset " in failed[rule], failed[rule]
    assert "Unexpected Value" not in run.stdout


def _file(text: str):
    def make(d: Path) -> Path:
        (d / "decisions.jsonl").write_text(text)
        return d / "decisions.jsonl"

    return make


def _empty_dir(d: Path) -> Path:
    (d / "out").mkdir()
    (d / "out" / "dlq").mkdir()
    return d / "out"


@pytest.mark.parametrize(
    "make",
    [_file(""), _file("\n  \n"), _empty_dir],
    ids=["empty file", "blank lines", "directory without decisions"],
)
def test_nothing_to_audit_is_a_usage_error_of_one_line(tmp_path: Path, make) -> None:
    path = make(tmp_path)
    run = audit_path(tmp_path, path)
    assert run.returncode == USAGE, run.stdout + run.stderr
    assert run.stderr.splitlines() == [f"shadow-controller audit: no decision records in {path}"], (
        run.stderr
    )
    assert "ok" not in run.stdout


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ('{"type": "LeaderAndIsr", oops', "not JSON"),
        ("[1, 2]", "not a decision record"),
        ('{"v": 1, "cause_offset": 3}', "not a decision record"),
        (
            '{"type": "LeaderAndIsr", "cause_offset": 3, "topic": "t", "partition": 0}',
            "LeaderAndIsr record without",
        ),
    ],
)
def test_a_garbage_line_names_its_file_and_line(
    tmp_path: Path, story: list[dict], line: str, reason: str
) -> None:
    path = tmp_path / "decisions.jsonl"
    path.write_text(
        "".join(json.dumps(r) + "\n" for r in story[:5]) + line + "\n" + json.dumps(story[5]) + "\n"
    )
    run = audit_path(tmp_path, path)
    assert run.returncode == USAGE, run.stdout + run.stderr
    [message] = run.stderr.splitlines()
    assert message.startswith(f"shadow-controller audit: {path}:6: {reason}"), message
    assert "Traceback" not in run.stderr


def test_json_names_each_rule_with_its_offending_partitions(
    tmp_path: Path, story: list[dict], capsys
) -> None:
    path = tmp_path / "decisions.jsonl"
    tampered = _tamper(
        story, lambda r: r.update(isr=[x for x in r["isr"] if x != r["leader"]] or [99])
    )
    path.write_text("".join(json.dumps(r) + "\n" for r in tampered))
    code = audit_mod.main(str(path), str(tmp_path / "report"), json_output=True)
    result = json.loads(capsys.readouterr().out)  # stdout is the JSON object and nothing else
    assert code == CHECK_FAILED and result["success"] is False
    rules = {r["rule"]: r for r in result["rules"]}
    assert set(rules) == set(audit_zk.RULES)
    broken = rules["leader_in_isr_unless_unclean"]
    assert broken["success"] is False and broken["broken_records"] == 1
    [where] = broken["partitions"]
    assert (where["topic"], where["partition"], where["records"]) == ("orders", 0, 1)
    assert where["cause_offsets"] == [
        next(t["cause_offset"] for o, t in zip(story, tampered, strict=True) if o != t)
    ]
    assert all(
        r["success"] and r["partitions"] == [] for r in rules.values() if r["broken_records"] == 0
    )
    assert result["decision_records"] == len(story) and result["leader_and_isr_records"] > 0
    assert Path(result["report"]).is_file()


def test_nothing_to_audit_raises_usage_error(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(UsageError, match=r"^no decision records in .*empty\.jsonl$"):
        audit_mod.main(str(tmp_path / "empty.jsonl"), str(tmp_path / "report"))


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_only_on_a_terminal(tmp_path: Path, story: list[dict], monkeypatch) -> None:
    path = tmp_path / "decisions.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in story))
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    frame = audit_load.load_decisions(str(path), progress_delay=0)
    assert len(frame) == len(story)
    assert "loading decisions" in terminal.getvalue()
    piped = io.StringIO()
    monkeypatch.setattr(sys, "stderr", piped)
    audit_load.load_decisions(str(path), progress_delay=0)
    assert piped.getvalue() == ""
