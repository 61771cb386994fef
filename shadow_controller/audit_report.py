"""The audit's Data Docs as a static site that renders fully offline.

Great Expectations 1.24 renders pages that load Bootstrap 4.3, bootstrap-table, its
filter-control extension, jQuery, Popper, Font Awesome 6, bootstrap-datepicker,
bootstrap-dark and Vega from CDNs, and its logo from S3. The wheel ships only its own
stylesheet, fonts and images; none of those libraries is in any installed package at the
versions the markup needs (pyspark's UI jar has Bootstrap 5, whose classes differ), and
bootstrap-table is on no Python index at all. So after GE renders, `make_offline` turns
each page into a static document:

- every `<link>` and `<script>` that loads from http(s) goes, and so do the inline scripts,
  which only drive those libraries (an offline page without them would log errors);
- GE's footers go (its newsletter's "Subscribe" line and its hidden tutorial banner), and
  so does the index's box of the site's name above the tables of runs, which only a
  script fills: left, it is an empty box under the audit;
- images point at the copies GE already writes to `static/images/`;
- `REPORT_CSS`, our own stylesheet written to `static/styles/`, styles the Bootstrap 4
  classes GE's templates use, draws the status icons with text glyphs, makes "Show more
  info..." work without a script (`:target`), and hides what only a script could fill or
  drive (the index's tables of runs, the validation filter buttons).

`add_summary` then puts the audit itself at the top of `index.html`: each rule, whether it
held, and for a broken rule the records that broke it by partition and cause offset, with
links to this run's validation page and to earlier runs. That section is what an operator
opens the report for, and it needs no script either.
"""

from __future__ import annotations

import html
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .audit_outcome import RuleOutcome

STYLESHEET = "static/styles/shadow-controller-report.css"
SUMMARY_ID = "shadow-controller-audit"

_REMOTE = r"""["']?https?://"""
_REMOTE_LINK = re.compile(r"<link\b[^>]*\bhref\s*=\s*" + _REMOTE + r"[^>]*>", re.I)
_SCRIPT = re.compile(r"<script\b[^>]*>.*?</script\s*>", re.I | re.S)
_REMOTE_IMG = re.compile(
    r"""<img\b[^>]*?\bsrc\s*=\s*["'](https?://[^"']*)["'][^>]*>""", re.I | re.S
)
_REMOTE_CSS_URL = re.compile(r"""url\(\s*["']?https?://[^)]*\)""", re.I)
_OWN_LINK = re.compile(r"<link\b[^>]*" + re.escape(STYLESHEET) + r"[^>]*>", re.I)
_SUMMARY = re.compile(rf'<section id="{SUMMARY_ID}".*?</section>\n?', re.S)
_FOOTER = re.compile(r"[ \t]*<footer\b.*?</footer\s*>\n?", re.I | re.S)
# the index's section holding only the site's name box and the script-filled tabs of runs
_INDEX_SECTION = re.compile(
    r'<div id="section-1" class="ge-section[^"]*"[^>]*>(?=(?:(?!<div id="section-2").)*'
    r"ge-index-page-site-name-title)",
    re.S,
)
_DIV = re.compile(r"<div\b|</div\s*>", re.I)
AUDIT_PLACE = "<!-- shadow-controller: the audit goes here -->"


def make_offline(site_dir: str | Path) -> list[Path]:
    """Rewrite every page under `site_dir` so it loads nothing from the network; return
    the pages. Idempotent: a page already rewritten stays as it is."""
    site = Path(site_dir)
    (site / STYLESHEET).parent.mkdir(parents=True, exist_ok=True)
    (site / STYLESHEET).write_text(REPORT_CSS, encoding="utf-8")
    # GE also copies its stylesheet template, which no page links (each inlines it)
    for css in site.rglob("*.css"):
        text = css.read_text(encoding="utf-8")
        if _REMOTE_CSS_URL.search(text):
            css.write_text(_REMOTE_CSS_URL.sub("none", text), encoding="utf-8")
    pages = sorted(site.rglob("*.html"))
    for page in pages:
        text = page.read_text(encoding="utf-8")
        new = offline_page(text, _root_of(page, site), site / "static" / "images")
        if new != text:
            page.write_text(new, encoding="utf-8")
    return pages


def offline_page(text: str, root: str, images: Path) -> str:
    """One page's HTML with no remote stylesheet, script, font or image; `root` is the
    site's root relative to the page (`.` or `../..`)."""
    text = _REMOTE_LINK.sub("", text)
    text = _SCRIPT.sub("", text)
    text = _FOOTER.sub("", text)
    section = _INDEX_SECTION.search(text)
    if section:
        text = _without_div(text, section.start(), AUDIT_PLACE)

    def local_image(match: re.Match[str]) -> str:
        name = match.group(1).split("?")[0].rsplit("/", 1)[-1]
        if not (images / name).is_file():
            return ""
        return match.group(0).replace(match.group(1), f"{root}/static/images/{name}")

    text = _REMOTE_IMG.sub(local_image, text)
    # GE's own stylesheet swaps the logo for a dark one from S3 in dark mode; REPORT_CSS
    # shows the local logo instead
    text = _REMOTE_CSS_URL.sub("none", text)
    if not _OWN_LINK.search(text):
        # before GE's inline styles, where Bootstrap was, so GE's theme still overrides it
        link = f'<link rel="stylesheet" href="{root}/{STYLESHEET}">\n    '
        at = text.find("<style")
        at = at if at >= 0 else text.find("</head>")
        text = text[:at] + link + text[at:] if at >= 0 else link + text
    return text


def _without_div(text: str, start: int, instead: str) -> str:
    """`text` with the `<div>` element that opens at `start` (its nested divs counted)
    replaced by `instead`."""
    depth = 0
    for m in _DIV.finditer(text, start):
        depth += 1 if m.group(0).startswith("<div") else -1
        if depth == 0:
            return text[:start] + instead + text[m.end() :]
    return text


def add_summary(
    index: str | Path,
    outcomes: Sequence[RuleOutcome],
    *,
    decisions: str,
    decision_records: int,
    records: int,
    success: bool,
    run_page: str | None,
    limit: int = 20,
    audited: str = "LeaderAndIsr",
) -> None:
    """Put this run's audit at the top of the site's `index.html` (replacing an earlier
    one). A broken rule lists up to `limit` partitions, each with its cause offsets."""
    index = Path(index)
    site = index.parent
    e = html.escape
    verdict = (
        "all rules held"
        if success
        else f"{sum(not o.success for o in outcomes)} of {len(outcomes)} rules broke"
    )
    rows = []
    for o in outcomes:
        if o.success:
            status, detail = '<span class="sc-ok">&#10004; ok</span>', e(o.description)
        else:
            status = (
                '<span class="sc-failed">&#10008; FAILED</span><br>'
                f"<small>{o.broken_records} {_records(o.broken_records)}</small>"
            )
            items = "".join(
                f"<li><code>{e(name)}</code> at cause_offset "
                f"{', '.join(str(x) for x in offsets)}</li>"
                for name, offsets in o.partitions[:limit]
            )
            more = (
                f"<li>and {len(o.partitions) - limit} more partitions</li>"
                if len(o.partitions) > limit
                else ""
            )
            detail = f'{e(o.description)}<ul class="sc-partitions">{items}{more}</ul>'
        rows.append(
            f'<tr class="{"sc-row-ok" if o.success else "sc-row-failed"}" data-rule="{e(o.rule)}">'
            f"<td><code>{e(o.rule)}</code></td><td>{status}</td><td>{detail}</td></tr>"
        )
    links = []
    if run_page:
        links.append(f'<a href="{e(run_page)}">this run\'s validation result</a>')
    suites = sorted(site.glob("expectations/*.html"))
    links += [
        f'<a href="{e(p.relative_to(site).as_posix())}">the expectation suite</a>' for p in suites
    ]
    earlier = [p.relative_to(site).as_posix() for p in _validation_pages(site)]
    earlier = [p for p in earlier if p != run_page][:limit]
    earlier_html = "".join(f'<li><a href="{e(p)}">{e(_run_label(p))}</a></li>' for p in earlier)
    state = "sc-success" if success else "sc-failure"
    section = (
        f'<section id="{SUMMARY_ID}" class="card mb-4 {state}">\n'
        '<div class="card-header"><strong>Controller invariants audit</strong>: '
        f"{e(verdict)}</div>\n"
        f'<div class="card-body"><p class="card-text">{records} {e(audited)} records of '
        f"{decision_records} decision records in <code>{e(decisions)}</code>. See "
        f"{', '.join(links) or 'the pages below'}.</p>\n"
        '<table class="table table-sm table-bordered"><thead><tr><th>rule</th><th>status</th>'
        "<th>what it checks; where it broke</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>\n"
        + (
            f'<p class="mb-1">Earlier runs in this report:</p><ul>{earlier_html}</ul>'
            if earlier_html
            else ""
        )
        + "</div>\n</section>\n"
    )
    text = _SUMMARY.sub("", index.read_text(encoding="utf-8"))
    at = text.find(AUDIT_PLACE)
    if at < 0:
        at = text.find('<div id="section-1"')
    if at < 0:
        at = text.find(">", text.find("<body")) + 1
    index.write_text(text[:at] + section + text[at:], encoding="utf-8")


def _records(n: int) -> str:
    return "record broke it" if n == 1 else "records broke it"


def _root_of(page: Path, site: Path) -> str:
    return Path(os.path.relpath(site, page.parent)).as_posix()


def _validation_pages(site: Path) -> list[Path]:
    """Validation result pages, newest run first (GE names run directories by UTC time)."""
    return sorted(site.glob("validations/**/*.html"), key=lambda p: p.parent.name, reverse=True)


def _run_label(page: str) -> str:
    parts = page.split("/")
    return parts[-2] if len(parts) >= 2 else page


def _spacing() -> str:
    """Bootstrap 4's margin and padding utilities (`mt-3`, `px-0`, `pl-md-4`), generated:
    a hand-written list would miss the next class a GE template starts using."""
    sizes = ("0", ".25rem", ".5rem", "1rem", "1.5rem", "3rem")
    sides = {
        "": ("",),
        "t": ("-top",),
        "b": ("-bottom",),
        "l": ("-left",),
        "r": ("-right",),
        "x": ("-left", "-right"),
        "y": ("-top", "-bottom"),
    }
    out = []
    for bp, width in (("", 0), ("-sm", 576), ("-md", 768), ("-lg", 992)):
        rules = []
        for prop, p in (("margin", "m"), ("padding", "p")):
            for side, suffixes in sides.items():
                for n, size in enumerate(sizes):
                    decl = ";".join(f"{prop}{s}:{size}!important" for s in suffixes)
                    rules.append(f".{p}{side}{bp}-{n}{{{decl}}}")
            if prop == "margin":
                rules += (
                    [
                        ".mr-auto{margin-right:auto!important}",
                        ".ml-auto{margin-left:auto!important}",
                    ]
                    if not bp
                    else []
                )
        block = "\n".join(rules)
        out.append(block if not width else f"@media (min-width:{width}px){{\n{block}\n}}")
    return "\n".join(out)


def _grid() -> str:
    """The 12-column grid at Bootstrap 4's breakpoints."""
    breakpoints = (("", 0), ("-xs", 0), ("-sm", 576), ("-md", 768), ("-lg", 992))
    every = ",".join(f".col{bp}-{n}" for bp, _ in breakpoints for n in range(1, 13))
    out = [
        ".row{display:flex;flex-wrap:wrap;margin-right:-15px;margin-left:-15px}",
        every + "{position:relative;width:100%;padding-right:15px;padding-left:15px}",
    ]
    for bp, width in breakpoints:
        cols = "\n".join(
            f".col{bp}-{n}{{flex:0 0 {n / 12:.6%};max-width:{n / 12:.6%}}}" for n in range(1, 13)
        )
        display = "\n".join(
            f".d{bp}-{d}{{display:{d}!important}}" for d in ("none", "block", "inline-flex", "flex")
        )
        flex = (
            f".flex{bp}-row{{flex-direction:row!important}}\n"
            f".flex{bp}-column{{flex-direction:column!important}}"
        )
        block = f"{cols}\n{display}\n{flex}"
        out.append(block if not width else f"@media (min-width:{width}px){{\n{block}\n}}")
    return "\n".join(out)


_BASE_CSS = """\
/* shadow-controller: the Bootstrap 4 subset Great Expectations' Data Docs use, so the
   report renders styled with no network (see shadow_controller/audit_report.py). */
:root{--sc-fg:#212529;--sc-bg:#fff;--sc-muted:#6c757d;--sc-line:#dee2e6;--sc-soft:#f8f9fa;
  --sc-soft2:#e2e3e5;
  --sc-link:#007bff;--sc-ok:#28a745;--sc-bad:#dc3545;--sc-info:#17a2b8;color-scheme:light dark}
*,*::before,*::after{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;
  font-family:-apple-system,BlinkMacSystemFont,"Segoe UI",Roboto,"Helvetica Neue",Arial,"Noto Sans",
  "Liberation Sans",sans-serif;font-size:1rem;font-weight:400;line-height:1.5;color:var(--sc-fg);
  background:var(--sc-bg)}
h1,h2,h3,h4,h5,h6,.h6{margin:0 0 .5rem;font-weight:500;line-height:1.2}
h1{font-size:2.5rem}h2{font-size:2rem}h3{font-size:1.75rem}h4{font-size:1.5rem}h5{font-size:1.25rem}h6,.h6{font-size:1rem}
p{margin:0 0 1rem}ul,ol{margin:0 0 1rem}
a{color:var(--sc-link);text-decoration:none;
  background:transparent}a:hover{text-decoration:underline}
code{font-family:SFMono-Regular,Menlo,Monaco,Consolas,"Liberation Mono","Courier New",monospace;
  font-size:87.5%;
  color:#e83e8c;word-wrap:break-word}
small{font-size:80%}strong{font-weight:bolder}img{vertical-align:middle;border-style:none}
.lead{font-size:1.25rem;font-weight:300}
.text-center{text-align:center!important}.text-danger{color:var(--sc-bad)!important}
.text-success{color:var(--sc-ok)!important}
.float-left{float:left!important}.h-100{height:100%!important}
.align-items-center{align-items:center!important}.justify-content-center{justify-content:center!important}
.invisible{visibility:hidden!important}
.sticky-top{position:sticky;top:0;z-index:1020}
.fixed-bottom{position:fixed;right:0;bottom:0;left:0;z-index:1030}
.border{border:1px solid var(--sc-line)!important}
.border-bottom{border-bottom:1px solid var(--sc-line)!important}
.border-info{border-color:var(--sc-info)!important}
.rounded{border-radius:.25rem!important}.rounded-0{border-radius:0!important}
.bg-light{background-color:var(--sc-soft)!important}
.container-fluid{width:100%;padding-right:15px;padding-left:15px;margin-right:auto;margin-left:auto}
.navbar{position:relative;display:flex;flex-wrap:wrap;align-items:center;
  justify-content:space-between;
  padding:.5rem 1rem;background:var(--sc-bg)}
.navbar-brand{display:inline-block;padding:.3125rem 0;margin-right:1rem;font-size:1.25rem;
  white-space:nowrap}
.nav{display:flex;flex-wrap:wrap;padding-left:0;margin-bottom:0;list-style:none}
.nav-link{display:block;padding:.5rem 1rem}
.nav-tabs{border-bottom:1px solid var(--sc-line)}
.nav-pills .nav-link{border-radius:.25rem}
.breadcrumb{display:flex;flex-wrap:wrap;padding:.75rem 1rem;margin-bottom:1rem;list-style:none;
  border-radius:.25rem}
.breadcrumb-item+.breadcrumb-item{padding-left:.5rem}
.breadcrumb-item+.breadcrumb-item::before{display:inline-block;padding-right:.5rem;
  color:var(--sc-muted);content:"/"}
.breadcrumb-item.active{color:var(--sc-muted)}
.alert{position:relative;padding:.75rem 1.25rem;margin-bottom:1rem;border:1px solid transparent;
  border-radius:.25rem}
.alert-secondary{color:#383d41;background-color:var(--sc-soft2);border-color:#d6d8db}
.alert-info{color:#0c5460;background-color:#d1ecf1;border-color:#bee5eb}
.alert-heading{color:inherit}.alert-dismissible{padding-right:4rem}
.close{float:right;font-size:1.5rem;font-weight:700;line-height:1;opacity:.5;
  background:transparent;border:0}
.badge{display:inline-block;padding:.25em .4em;font-size:75%;font-weight:700;line-height:1;
  text-align:center;
  white-space:nowrap;vertical-align:baseline;border-radius:.25rem}
.badge-secondary{color:#fff;background-color:var(--sc-muted)}
.btn{display:inline-block;font-weight:400;text-align:center;vertical-align:middle;
  border:1px solid transparent;
  padding:.375rem .75rem;font-size:1rem;line-height:1.5;border-radius:.25rem;cursor:pointer}
.btn-sm{padding:.25rem .5rem;font-size:.875rem;line-height:1.5;border-radius:.2rem}
.btn-primary{color:#fff;background-color:var(--sc-link);border-color:var(--sc-link)}
.btn-secondary{color:#fff;background-color:var(--sc-muted);border-color:var(--sc-muted)}
.btn-group{position:relative;display:inline-flex;vertical-align:middle}
.card{position:relative;display:flex;flex-direction:column;min-width:0;word-wrap:break-word;
  background:var(--sc-bg);
  border:1px solid rgba(0,0,0,.125);border-radius:.25rem}
.card-header{padding:.75rem 1.25rem;margin-bottom:0;background-color:rgba(0,0,0,.03);
  border-bottom:1px solid rgba(0,0,0,.125)}
.card-body{flex:1 1 auto;padding:1.25rem}
.table{width:100%;margin-bottom:1rem;color:var(--sc-fg);border-collapse:collapse}
.table th,.table td{padding:.75rem;vertical-align:top;border-top:1px solid var(--sc-line);
  text-align:inherit}
.table thead th{vertical-align:bottom;border-bottom:2px solid var(--sc-line)}
.table-sm th,.table-sm td{padding:.3rem}
table.table-sm{border-collapse:collapse}
.table-bordered,.table-bordered th,.table-bordered td{border:1px solid var(--sc-line)}
.table-responsive{display:block;width:100%;overflow-x:auto}
.tab-content>.tab-pane{display:none}.tab-content>.active{display:block}
.fade:not(.show){opacity:0}
/* "Show more info..." toggles by link target, not by script */
.collapse:not(.show){display:none}.collapse:target{display:block}
/* Font Awesome's status icons as text glyphs */
.fas{font-style:normal;font-weight:700;display:inline-block}
.fa-check-circle::before{content:"\\2714"}.fa-times::before{content:"\\2718"}.fa-question-circle::before{content:"?"}
/* only a script could fill or drive these: the index's run and suite tables (the audit
   section lists the runs instead), table toolbars and the validation filter buttons */
.ge-index-page-tabs-container,[id$="-table-toolbar"],.card:has(.btn-group-toggle){display:none!important}
/* the audit section */
#shadow-controller-audit.sc-failure{border-color:var(--sc-bad)}
#shadow-controller-audit.sc-failure>.card-header{color:#fff;background:var(--sc-bad)}
#shadow-controller-audit.sc-success>.card-header{color:#fff;background:var(--sc-ok)}
.sc-ok{color:var(--sc-ok);font-weight:700}.sc-failed{color:var(--sc-bad);font-weight:700;
  white-space:nowrap}
.sc-partitions{margin:.25rem 0 0;padding-left:1.25rem}
@media (prefers-color-scheme:dark){
  :root{--sc-fg:#f1f1f1;--sc-bg:#212529;--sc-soft:#343a40;--sc-soft2:#343a40;--sc-line:#495057;
  --sc-link:#6ea8fe}
  .alert-secondary{color:#f1f1f1;border-color:#495057}
  .navbar-brand a img{visibility:visible!important}
  code{color:#f783ac}
}
"""

REPORT_CSS = _BASE_CSS + _grid() + "\n" + _spacing() + "\n"
