"""`bench/job_bench.py --record` and `bench/chart.py` as a user runs them: a real (engine-only,
small) run on record, its chart, and every mistake as one line on stderr with exit 2."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def bench(script: str, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def assert_one_line_usage_error(done: subprocess.CompletedProcess, *words: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr
    for word in words:
        assert word in done.stderr, done.stderr


def test_a_recorded_run_holds_the_commit_the_machine_and_each_steps_figures_and_charts(
    tmp_path: Path,
) -> None:
    results = tmp_path / "results"
    done = bench(
        "job_bench.py",
        "--partitions",
        "300",
        "--brokers",
        "5",
        "--modes",
        "engine",
        "--record",
        "--results-dir",
        str(results),
    )
    assert done.returncode == 0, done.stderr
    (path,) = results.glob("*.json")
    assert f"recorded {path}" in done.stdout
    doc = json.loads(path.read_text())
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    assert doc["commit"]["sha"] == head and isinstance(doc["commit"]["dirty"], bool)
    assert doc["machine"]["cpus"] >= 1 and doc["machine"]["python"].startswith("3.11")
    assert doc["machine"]["java"] and doc["machine"]["spark"]
    work = doc["machine"]["python_work_s"]
    assert set(work) == {"start", "end"} and all(0 < v < 60 for v in work.values())
    assert f"{work['start']:.3f} s at the start, {work['end']:.3f} s at the end" in done.stdout
    assert doc["args"]["partitions"] == 300 and doc["args"]["modes"] == "engine"
    steps = {s["step"]: s for s in doc["steps"]}
    assert steps["create 300 partitions"]["decisions"] > 0
    assert all(s["engine"]["seconds"] >= 0 for s in doc["steps"])
    assert all(
        len(s["engine"]["python_work_s"]) == 2 and min(s["engine"]["python_work_s"]) > 0
        for s in doc["steps"]
    )
    assert doc["peak_memory_mib"]["driver"] > 0

    png = tmp_path / "steps.png"
    drawn = bench("chart.py", str(results), "--out", str(png))
    assert drawn.returncode == 0, drawn.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "points from 1 result files" in drawn.stdout


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--nosuch"], ["unrecognized arguments: --nosuch"]),
        (["--modes", "engine,spark"], ["--modes engine,spark"]),
        (["--partitions", "0"], ["--partitions 0"]),
        (["--brokers", "2"], ["--brokers 2"]),
        (["--partitions", "many"], ["--partitions", "invalid int value"]),
        (
            ["--spark-conf", "maxRecordsPerBatch=1000"],
            ["--spark-conf maxRecordsPerBatch=1000", "KEY=VALUE"],
        ),
    ],
)
def test_job_bench_refuses_a_wrong_flag_in_one_line(argv: list[str], words: list[str]) -> None:
    assert_one_line_usage_error(bench("job_bench.py", *argv), "job_bench.py:", *words)


def test_chart_keeps_runs_of_other_broker_counts_apart(tmp_path: Path) -> None:
    # a broker event at 100k with 10 brokers reaches three times the partitions it does
    # with 30: two lines, not one median of both
    from bench.chart import load

    for name, brokers, seconds in (("a", 10, 3.0), ("b", 10, 5.0), ("c", 30, 1.0)):
        (tmp_path / f"{name}.json").write_text(
            json.dumps(
                {
                    "args": {"partitions": 100000, "brokers": brokers, "buckets": 64},
                    "steps": [
                        {
                            "step": "broker 1 fails",
                            "engine": {"seconds": seconds},
                            "file": {"seconds": seconds * 2},
                        }
                    ],
                }
            )
        )
    series = load(sorted(tmp_path.glob("*.json")))
    assert series == {
        ("engine, 10 brokers", "broker 1 fails"): {100000: [3.0, 5.0]},
        ("file, 10 brokers, 64 buckets", "broker 1 fails"): {100000: [6.0, 10.0]},
        ("engine, 30 brokers", "broker 1 fails"): {100000: [1.0]},
        ("file, 30 brokers, 64 buckets", "broker 1 fails"): {100000: [2.0]},
    }


def test_chart_refuses_missing_empty_and_malformed_results_in_one_line(tmp_path: Path) -> None:
    assert_one_line_usage_error(bench("chart.py", "--bogus"), "unrecognized arguments: --bogus")
    assert_one_line_usage_error(
        bench("chart.py", str(tmp_path / "nowhere")), "no results in", "no such directory"
    )
    assert_one_line_usage_error(
        bench("chart.py", str(tmp_path / "run.json")), "run.json: no such file"
    )
    assert_one_line_usage_error(bench("chart.py", str(tmp_path)), f"no results in {tmp_path}")
    (tmp_path / "bad.json").write_text("{")
    assert_one_line_usage_error(
        bench("chart.py", str(tmp_path)), "bad.json: not a benchmark record"
    )
    (tmp_path / "bad.json").write_text('{"args": {}}')
    assert_one_line_usage_error(
        bench("chart.py", str(tmp_path)), "bad.json: not a benchmark record"
    )


def test_job_stages_times_the_jobs_python_work_of_one_step_piece_by_piece() -> None:
    done = bench(
        "job_stages.py",
        "--step",
        "controlled shutdown",
        "--partitions",
        "300",
        "--brokers",
        "5",
        "--profile",
        "--top",
        "3",
    )
    assert done.returncode == 0, done.stderr
    head, *rest = done.stdout.splitlines()
    # the step's event, then the partitions' summaries: two micro-batches, as the job runs it
    assert head.startswith("broker 3 controlled shutdown (leads 60): 1 events, 2 micro-batches, ")
    assert "of the job's Python work (300 partitions, 5 brokers, 64 buckets)" in head
    pieces = [line.rsplit(None, 2) for line in rest[:6]]  # "  partition stage     0.03 s"
    assert [name.strip() for name, _, _ in pieces] == [
        "sequencer",
        "pack work",
        "unpack work",
        "partition stage",
        "pack outputs",
        "assemble",
    ]
    assert all(float(seconds) >= 0 and unit == "s" for _, seconds, unit in pieces)
    assert "Ordered by: internal time" in done.stdout


@pytest.mark.parametrize(
    "argv, words",
    [
        ([], ["the following arguments are required: --step"]),
        (
            ["--step", "nosuch", "--partitions", "300", "--brokers", "5"],
            ["no step matches 'nosuch'", "broker 1 fails"],
        ),
        (["--step", "fails", "--brokers", "2"], ["--brokers 2"]),
        (["--step", "fails", "--buckets", "-1"], ["--buckets -1"]),
        (["--step", "fails", "--partitions", "many"], ["--partitions", "invalid int value"]),
    ],
)
def test_job_stages_refuses_a_wrong_flag_in_one_line(argv: list[str], words: list[str]) -> None:
    assert_one_line_usage_error(bench("job_stages.py", *argv), "job_stages.py:", *words)


def test_fold_steps_replays_each_steps_folds_with_a_digest_of_their_replies() -> None:
    done = bench("fold_steps.py", "--partitions", "300", "--brokers", "5", "--repeat", "2")
    assert done.returncode == 0, done.stderr
    first, *lines = done.stdout.splitlines()
    assert first == f"replaying {ROOT / 'state_machines'}"
    rows = {line[:44].strip(): line.split() for line in lines}
    assert list(rows) == [
        "create 300 partitions",
        "controller failover (300)",
        "broker 1 fails",
        "broker 3 controlled shutdown (leads 60)",
        "broker 1 returns",
        "preferred election (all)",
    ]
    create, failover = rows["create 300 partitions"], rows["controller failover (300)"]
    assert create[-10:-6] == ["300", "folds", "2700", "decisions"]
    assert failover[-10:-6] == ["300", "folds", "300", "decisions"]
    assert all(float(r[-6]) > 0 and len(r[-1]) == 12 for r in rows.values())
    assert len({r[-1] for r in rows.values()}) == 6


def test_fold_steps_replays_the_tree_its_root_names(tmp_path: Path) -> None:
    # the parser imports this tree's core before --root is read: the other tree's must
    # be the one replayed all the same, and its replies are its own
    other = tmp_path / "other"
    for part in ("state_machines", "bench"):
        shutil.copytree(ROOT / part, other / part, ignore=shutil.ignore_patterns("__pycache__"))
    fold = other / "state_machines" / "fold.py"
    # the other tree's fold numbers a partition's decisions in twos
    fold.write_text(fold.read_text().replace("seq_next += 1", "seq_next += 2"))
    argv = ("--partitions", "300", "--brokers", "5", "--repeat", "1")
    ours, theirs = (
        bench("fold_steps.py", *argv),
        bench("fold_steps.py", "--root", str(other), *argv),
    )
    assert theirs.returncode == 0, theirs.stderr
    assert theirs.stdout.splitlines()[0] == f"replaying {other / 'state_machines'}"
    digests = [
        {line[:44]: line.split()[-1] for line in done.stdout.splitlines()[1:]}
        for done in (ours, theirs)
    ]
    assert digests[0].keys() == digests[1].keys()
    assert (
        digests[0]["create 300 partitions".ljust(44)]
        != digests[1]["create 300 partitions".ljust(44)]
    )


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--root", "/nowhere"], ["--root /nowhere: no state_machines/fold.py there"]),
        (["--brokers", "2"], ["--brokers 2"]),
        (["--repeat", "0"], ["--repeat must be at least 1"]),
        (["--repeat", "x"], ["--repeat", "invalid int value"]),
    ],
)
def test_fold_steps_refuses_a_wrong_flag_in_one_line(argv: list[str], words: list[str]) -> None:
    assert_one_line_usage_error(bench("fold_steps.py", *argv), "fold_steps.py:", *words)
