"""The audit's Data Docs render styled with no network, and show where a rule broke.

The browser test opens the rendered index.html in headless Chromium (Debian's `chromium`,
installed by bin/setup) with every host name unresolvable and a dead proxy, so any request
for a CDN stylesheet, script, font or image fails, then checks the screenshot for what only
the report's own stylesheet draws, and the page for the broken rule's partition."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from shadow_controller import audit
from shadow_controller.audit_report import STYLESHEET, offline_page
from streaming.exits import CHECK_FAILED
from tests.tools.test_audit import ROOT, decisions_of

# a request for anything off this machine fails
OFFLINE = [
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--proxy-server=http://127.0.0.1:9",
    "--proxy-bypass-list=<-loopback>",
]
REMOTE = [
    re.compile(
        r"""<(?:link|script|img|source|iframe)\b[^>]*\b(?:href|src)\s*=\s*["']?(?:https?:)?//""",
        re.I,
    ),
    re.compile(r"""url\(\s*["']?(?:https?:)?//""", re.I),
    re.compile(r"@import", re.I),
]
FAILED_RED = (220, 53, 69)  # the audit section's header on a failed run: only REPORT_CSS paints it


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.fail(
            "headless Chromium is not installed; this test needs it: run bin/setup as root, "
            "or `apt-get install -y chromium`"
        )
    return path


def browse(page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            *OFFLINE,
            *args,
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )


@pytest.fixture(scope="module")
def one_broken_rule(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    """The three-brokers story with one orders-0 record's partition epoch set back to 0,
    which breaks partition_epoch_increases_on_change and nothing else; its audit's JSON and
    the report's index.html."""
    tmp = tmp_path_factory.mktemp("audit-report")
    events = [
        json.loads(line)
        for line in (ROOT / "examples" / "three-brokers.jsonl").read_text().splitlines()
    ]
    records = decisions_of(events)
    for r in records:
        if (
            r["type"] == "LeaderAndIsr"
            and r["topic"] == "orders"
            and r["partition"] == 0
            and r["leader_epoch"] == 2
        ):
            r["partition_epoch"] = 0
            break
    path = tmp / "decisions.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        code = audit.main(str(path), str(tmp / "report"), json_output=True)
    assert code == CHECK_FAILED, stdout.getvalue()
    result = json.loads(stdout.getvalue())
    assert [r["rule"] for r in result["rules"] if not r["success"]] == [
        "partition_epoch_increases_on_change"
    ]
    return result, Path(result["report"])


def test_no_page_loads_anything_from_the_network(one_broken_rule: tuple[dict, Path]) -> None:
    _, index = one_broken_rule
    site = index.parent
    pages = sorted(site.rglob("*.html"))
    assert len(pages) >= 3, pages  # the index, the suite, this run's validation result
    for page in pages:
        text = page.read_text()
        for pattern in REMOTE:
            assert not pattern.search(text), (
                f"{page.relative_to(site)}: {pattern.search(text).group(0)}"
            )
        assert STYLESHEET in text, f"{page.relative_to(site)} does not link the report's stylesheet"
    for css in site.rglob("*.css"):
        assert not REMOTE[1].search(css.read_text()) and "@import" not in css.read_text(), css


@pytest.mark.browser
def test_the_report_renders_styled_offline_and_names_the_broken_partition(
    one_broken_rule: tuple[dict, Path], tmp_path: Path
) -> None:
    from PIL import Image

    result, index = one_broken_rule
    [broken] = [r for r in result["rules"] if not r["success"]]
    [where] = broken["partitions"]
    dom = browse(index, tmp_path / "profile", "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    section = dom.stdout[dom.stdout.index('id="shadow-controller-audit"') :]
    section = section[: section.index("</section>")]
    assert "partition_epoch_increases_on_change" in section
    offsets = ", ".join(str(x) for x in where["cause_offsets"])
    assert f"<code>orders-0</code> at cause_offset {offsets}" in section, section

    shot = tmp_path / "index.png"
    run = browse(index, tmp_path / "profile", "--window-size=1280,900", f"--screenshot={shot}")
    assert run.returncode == 0 and shot.is_file(), run.stderr[-2000:]
    image = Image.open(shot).convert("RGB")
    width, height = image.size
    red = [
        (x, y)
        for y in range(0, height, 2)
        for x in range(0, width, 2)
        if all(abs(c - e) <= 3 for c, e in zip(image.getpixel((x, y)), FAILED_RED, strict=False))
    ]
    # an unstyled page has no red area at all; styled, the failed audit's header is a red
    # bar in the grid's right-hand column (Bootstrap's grid, redrawn by REPORT_CSS)
    assert len(red) > 2000, f"no red header: the page rendered unstyled ({len(red)} red samples)"
    assert min(x for x, _ in red) > width * 0.1, (
        "the header starts at the page's edge: no grid layout"
    )


def test_offline_page_drops_remote_assets_and_links_the_local_stylesheet(tmp_path: Path) -> None:
    (tmp_path / "logo-long.png").write_bytes(b"png")
    page = """<html><head><title>t</title>
<link rel="stylesheet" href="https://cdn.example/bootstrap.min.css"/>
<style>.a { background: url('https://assets.example/full_logo_dark.png') }</style>
<script src="https://code.example/jquery.min.js" integrity="x" crossorigin="anonymous"></script>
</head><body><img src="https://assets.example/logo-long.png?d=1" alt="GX"><img src="https://x.example/gone.png">
<script>$(".x").modal()</script><a href="https://greatexpectations.io">GX</a></body></html>"""
    once = offline_page(page, "../..", tmp_path)
    assert "cdn.example" not in once and "code.example" not in once and "<script" not in once
    assert "assets.example" not in once and "gone.png" not in once
    assert '<img src="../../static/images/logo-long.png" alt="GX">' in once
    assert f'<link rel="stylesheet" href="../../{STYLESHEET}">' in once
    assert once.index(STYLESHEET) < once.index("<style>"), (
        "GE's own styles must still override ours"
    )
    assert '<a href="https://greatexpectations.io">' in once, "links to read are not loads"
    assert offline_page(once, "../..", tmp_path) == once
    assert not any(p.search(once) for p in REMOTE)
