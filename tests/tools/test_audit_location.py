"""Where `audit` writes its report: only where asked (`--report DIR`), else in a new
temporary directory that the output names; nothing lands in the working directory, and a
refused input leaves no directory behind. The report's pages carry no Great Expectations
newsletter footer or tutorial banner, and the index no empty box of the site's name."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from streaming.exits import OK, USAGE
from tests.tools.test_audit_kraft import story

ROOT = Path(__file__).resolve().parents[2]


def run_audit(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "shadow_controller.cli", "audit", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "TMPDIR": str(cwd / "tmp")},
    )


def test_without_report_it_writes_to_a_temporary_directory_it_names(tmp_path: Path) -> None:
    decisions = tmp_path / "decisions.jsonl"
    decisions.write_text("".join(json.dumps(r) + "\n" for r in story()))
    work = tmp_path / "work"
    work.mkdir()
    (work / "tmp").mkdir()
    run = run_audit(work, str(decisions))
    assert run.returncode == OK, run.stdout + run.stderr
    [line] = [x for x in run.stdout.splitlines() if x.startswith("Data Docs: ")]
    match = re.fullmatch(
        r"Data Docs: file://(\S+/index\.html) \(in a temporary directory; --report DIR writes "
        r"it where you choose\)",
        line,
    )
    assert match, line
    index = Path(match.group(1))
    assert index.is_file() and index.is_relative_to(work / "tmp"), index
    assert sorted(p.name for p in work.iterdir()) == ["tmp"], "nothing in the working directory"

    pages = sorted(index.parent.rglob("*.html"))
    assert len(pages) >= 3
    for page in pages:
        text = page.read_text()
        assert "newsletter" not in text and "<footer" not in text, page
    index_text = index.read_text()
    assert "| local_site" not in index_text  # the site's name box
    assert 'class="col-12 ge-index-page-site-name-title"' not in index_text
    assert index_text.count("<div") == index_text.count("</div")
    assert 'id="shadow-controller-audit"' in index_text


def test_with_report_it_writes_there_and_a_refusal_leaves_nothing(tmp_path: Path) -> None:
    decisions = tmp_path / "decisions.jsonl"
    decisions.write_text("".join(json.dumps(r) + "\n" for r in story()))
    work = tmp_path / "work"
    work.mkdir()
    (work / "tmp").mkdir()
    run = run_audit(work, str(decisions), "--report", str(tmp_path / "here"))
    assert run.returncode == OK, run.stdout + run.stderr
    assert f"Data Docs: file://{tmp_path / 'here'}/" in run.stdout
    assert "temporary" not in run.stdout
    assert list((work / "tmp").iterdir()) == []

    (tmp_path / "empty.jsonl").write_text("")
    run = run_audit(work, str(tmp_path / "empty.jsonl"))
    assert run.returncode == USAGE and list((work / "tmp").iterdir()) == []
