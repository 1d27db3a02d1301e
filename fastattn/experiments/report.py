"""The report of a `fastattn reproduce` folder: `claims.json` (the ledger) and `index.html`.

The page is one self-contained file (inline CSS and a little JS, images by relative link) that works
from `file://` with no network: a summary per paper, then per paper its figures (thumbnail, click to
enlarge, caption, command, wall time) and its claims table; filters by paper and status; the
environment of the run.
"""

from __future__ import annotations

import html
import json
import os
import platform
import re
from pathlib import Path
from typing import Any

from fastattn._validate import read_json
from fastattn.experiments.claims import STATUSES, headline, ledger, tally
from fastattn.training.records import atomic_write, git_revision, to_jsonable

_COLOURS = {"reproduced": "#1a7f37", "erratum": "#8250df", "not_reproduced": "#cf222e",
            "not_run": "#6e7781", "failed": "#cf222e", "done": "#1a7f37", "cached": "#1a7f37"}

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1400px;
padding:1rem 2rem;color:#1f2328;line-height:1.4}
h1{margin-bottom:.2rem}h2{border-bottom:2px solid #d0d7de;padding-bottom:.2rem;margin-top:2.5rem}
table{border-collapse:collapse;width:100%;margin:.5rem 0 1rem;font-size:.9rem}
th,td{border:1px solid #d0d7de;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.badge{display:inline-block;color:#fff;border-radius:1em;padding:0 .6em;font-size:.8rem;
white-space:nowrap}
.figs{display:grid;grid-template-columns:repeat(auto-fill,minmax(320px,1fr));gap:1rem}
figure{margin:0;border:1px solid #d0d7de;border-radius:6px;padding:.5rem;background:#fff;
font-size:.85rem}
figure img{width:100%;height:auto;cursor:zoom-in;display:block}
figcaption{font-size:1rem;margin-bottom:.3rem}code{background:#f6f8fa;padding:0 .2em;font-size:.8rem;
word-break:break-all}
.filters{position:sticky;top:0;background:#fffe;padding:.5rem 0;border-bottom:1px solid #d0d7de;
z-index:1}
.filters label{margin-right:1rem}
#lightbox{display:none;position:fixed;inset:0;background:#000c;z-index:2;cursor:zoom-out;
align-items:center;justify-content:center}
#lightbox img{max-width:95vw;max-height:95vh;background:#fff}
.error{color:#cf222e}.muted{color:#57606a}
"""

_JS = """
function applyFilters(){
  var paper=document.getElementById('paper-filter').value;
  var on={};
  document.querySelectorAll('input.status-filter').forEach(function(b){on[b.value]=b.checked;});
  document.querySelectorAll('section.paper').forEach(function(s){
    s.style.display=(paper==='all'||s.dataset.paper===paper)?'':'none';});
  document.querySelectorAll('tr.claim').forEach(function(r){
    var show=(paper==='all'||r.dataset.paper===paper)&&on[r.dataset.status];
    r.style.display=show?'':'none';});
  document.querySelectorAll('tr.paper-row').forEach(function(r){
    r.style.display=(paper==='all'||r.dataset.paper===paper)?'':'none';});
}
function enlarge(img){
  var box=document.getElementById('lightbox');
  box.querySelector('img').src=img.getAttribute('src');
  box.style.display='flex';
}
document.addEventListener('DOMContentLoaded',function(){
  document.getElementById('paper-filter').addEventListener('change',applyFilters);
  document.querySelectorAll('input.status-filter').forEach(function(b){
    b.addEventListener('change',applyFilters);});
  document.querySelectorAll('figure img').forEach(function(img){
    img.addEventListener('click',function(){enlarge(img);});});
  document.getElementById('lightbox').addEventListener('click',function(){
    this.style.display='none';});
  applyFilters();
});
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _badge(status: str, label: str | None = None) -> str:
    return (f'<span class="badge" style="background:{_COLOURS.get(status, "#6e7781")}">'
            f"{_e(label or status.replace('_', ' '))}</span>")


def tally_table_html(rows: list[dict[str, Any]]) -> str:
    """The claims by kind × source × status (reproductions of paper/derived numbers first)."""
    out = ['<table id="tally"><tr><th>kind</th><th>source</th>'
           + "".join(f"<th>{_badge(s)}</th>" for s in STATUSES) + "<th>claims</th></tr>"]
    for t in tally(rows):
        out.append(f"<tr><td>{_e(t['kind'])}</td><td>{_e(t['source'])}</td>"
                   + "".join(f'<td class="num">{t[s]}</td>' for s in STATUSES)
                   + f'<td class="num">{t["total"]}</td></tr>')
    out.append("</table>")
    return "".join(out)


def tally_text(rows: list[dict[str, Any]]) -> str:
    """`tally` as a plain-text table (for `fastattn report` and the README)."""
    head = ["kind", "source", *STATUSES, "claims"]
    lines = ["| " + " | ".join(h.replace("_", " ") for h in head) + " |",
             "|" + "---|" * len(head)]
    for t in tally(rows):
        lines.append("| " + " | ".join([t["kind"], t["source"], *(str(t[s]) for s in STATUSES),
                                        str(t["total"])]) + " |")
    return "\n".join(lines)


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.6g}"
    return _e(value)


def _status_label(row: dict[str, Any]) -> str:
    """The status as shown: "not run (quick)" for a full-settings claim of a quick folder."""
    if row["status"] == "not_run" and row.get("not_run_reason") == "quick":
        return "not run (quick)"
    return row["status"].replace("_", " ")


def _measured(row: dict[str, Any], fmt=None) -> str:
    """The measured value, with its standard error where the claim has one."""
    fmt = fmt or _plain
    text = fmt(row["measured"])
    if row.get("se") is not None and row["measured"] is not None:
        text += f" ± {fmt(row['se'])}"
    return text


def _tolerance(row: dict[str, Any]) -> str:
    tol = row["tolerance"]
    text = f"{tol:.3g}" + (" s.e." if row.get("tolerance_in_se")
                           else " rel." if row["relative"] else " abs.")
    if row["compare"] == "at_most":
        text = "≤ paper + " + text
    elif row["compare"] == "at_least":
        text = "≥ paper − " + text
    return text


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return f"{line.split(':', 1)[1].strip()} ({os.cpu_count()} logical CPUs)"
    except OSError:
        pass
    return f"{platform.processor() or platform.machine()} ({os.cpu_count()} logical CPUs)"


def _figures(folder: Path) -> dict[str, dict[str, Any]]:
    """Each figure's JSON in `folder` (name → document), in index order, plus failed figures from
    the manifest (name → {"failed": error})."""
    from fastattn.experiments.registry import FIGURES

    manifest: dict[str, Any] = {}
    if (folder / "reproduce.json").exists():
        manifest = read_json(folder / "reproduce.json").get("figures", {})
    out: dict[str, dict[str, Any]] = {}
    for name in FIGURES:
        path = folder / f"{name}.json"
        if path.exists():
            out[name] = read_json(path)
        elif manifest.get(name, {}).get("status") == "failed":
            out[name] = {"failed": manifest[name].get("error", "")}
    return out


def folder_mode(folder: Path, figures: dict[str, dict[str, Any]] | None = None) -> str:
    """"quick" or "full": the mode `fastattn reproduce --all` recorded in the folder's manifest, else
    (figures run one at a time write none) "quick" if any figure in it is quick. The page and
    `report --docs` both label a folder by this rule."""
    if (folder / "reproduce.json").exists():
        mode = read_json(folder / "reproduce.json").get("mode")
        if mode:
            return mode
    figures = _figures(folder) if figures is None else figures
    return "quick" if any(d.get("quick") for d in figures.values()) else "full"


def page(folder: Path, rows: list[dict[str, Any]]) -> str:
    """The report page's HTML for `folder` with ledger `rows`."""
    from fastattn import papers
    from fastattn.experiments.registry import FIGURES

    order = papers.names()
    figures = _figures(folder)
    manifest = read_json(folder / "reproduce.json") if (folder / "reproduce.json").exists() else {}
    mode = folder_mode(folder, figures)
    meta = next((d["meta"] for d in figures.values() if "meta" in d), {})
    parts = [f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
             f"<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
             f"<title>fastattn reproduce: {len(rows)} claims, {len(figures)} figures</title>"
             f"<style>{_CSS}</style><script>{_JS}</script></head><body>"]
    parts.append(f"<h1>fastattn: {len(order)} papers reproduced</h1>")
    parts.append(f'<p class="muted">Mode <b>{_e(mode)}</b>'
                 + (" (small settings: many claims are measured only by the full run)"
                    if mode == "quick" else "")
                 + f" · {len(figures)} figures · {len(rows)} claims · "
                 f"command <code>fastattn reproduce --all{' --quick' if mode == 'quick' else ''}"
                 f" --out DIR</code></p>")

    # summary: reproductions of the papers' numbers first, then the rest (kind × source × status)
    parts.append(f"<p><b>{_e(headline(rows))}</b></p>")
    parts.append(tally_table_html(rows))
    parts.append('<table id="summary"><tr><th>paper</th><th>figures (ok / failed / listed)</th>'
                 "<th>figure wall time</th>"
                 + "".join(f"<th>{_badge(s)}</th>" for s in STATUSES) + "<th>claims</th></tr>")
    for paper in order:
        names = [n for n in FIGURES if n.startswith(paper + "-")]
        ok = [n for n in names if n in figures and "failed" not in figures[n]]
        failed = [n for n in names if n in figures and "failed" in figures[n]]
        wall = sum(figures[n].get("wall_time", 0.0) for n in ok)
        mine = [r for r in rows if r["paper"] == paper]
        counts = [sum(r["status"] == s for r in mine) for s in STATUSES]
        parts.append(f'<tr class="paper-row" data-paper="{_e(paper)}"><td><a href="#{_e(paper)}">'
                     f"{_e(paper)}</a></td><td class=\"num\">{len(ok)} / {len(failed)} / "
                     f"{len(names)}</td><td class=\"num\">{wall:.1f} s</td>"
                     + "".join(f'<td class="num">{c}</td>' for c in counts)
                     + f'<td class="num">{len(mine)}</td></tr>')
    total = manifest.get("wall_time")
    parts.append("</table>")
    if total is not None:
        parts.append(f'<p class="muted">Wall time of the last <code>reproduce</code> command: '
                     f"{total:.1f} s (figures finished by earlier commands are not recomputed; "
                     "the per-paper column sums each figure's own wall time).</p>")

    # filters
    parts.append('<div class="filters"><label>paper <select id="paper-filter">'
                 '<option value="all">all</option>'
                 + "".join(f'<option value="{_e(p)}">{_e(p)}</option>' for p in order)
                 + "</select></label>status "
                 + "".join(f'<label><input type="checkbox" class="status-filter" value="{s}" '
                           f"checked> {_badge(s)}</label>" for s in STATUSES)
                 + "</div>")

    for paper in order:
        parts.append(f'<section class="paper" data-paper="{_e(paper)}" id="{_e(paper)}">'
                     f"<h2>{_e(paper)}</h2>")
        mine = [r for r in rows if r["paper"] == paper]
        parts.append(f"<h3>Claims ({len(mine)})</h3>")
        parts.append('<table class="claims"><tr><th>claim</th><th>kind · source (where)</th>'
                     "<th>figure · field</th><th>paper</th><th>measured</th>"
                     "<th>tolerance (why)</th><th>status</th><th>note</th></tr>")
        for r in mine:
            where = (f'<a href="#fig-{_e(r["figure"])}">{_e(r["figure"])}</a>'
                     if r["figure"] else "closed form")
            paper_value = _fmt(r["paper_value"]) + (
                f'<br><span class="muted">correct: {_fmt(r["corrected"])}</span>'
                if r["corrected"] is not None else "")
            parts.append(
                f'<tr class="claim" data-paper="{_e(paper)}" data-status="{_e(r["status"])}">'
                f"<td>{_e(r['claim'])}</td><td>{_e(_provenance(r))}"
                + (f'<br><span class="muted">“{_e(r["quote"])}”</span>' if r.get("quote") else "")
                + f"</td><td>{where}<br><code>{_e(r['field'])}</code></td>"
                f'<td class="num">{paper_value}</td><td class="num">{_measured(r, _fmt)}</td>'
                f"<td>{_e(_tolerance(r))}<br><span class=\"muted\">{_e(r['tolerance_reason'])}"
                f"</span></td><td>{_badge(r['status'], _status_label(r))}</td>"
                f"<td>{_e(r['note'])}</td></tr>")
        parts.append("</table>")
        parts.append('<h3>Figures</h3><div class="figs">')
        for name in [n for n in FIGURES if n.startswith(paper + "-")]:
            doc = figures.get(name)
            command = f"fastattn reproduce {name} --out DIR" + (" --quick" if mode == "quick"
                                                                 else "")
            if doc is None:
                body = '<p class="muted">not run</p>'
            elif "failed" in doc:
                body = f'<p class="error">{_badge("failed")} {_e(doc["failed"])}</p>'
            else:
                body = (f'<img src="{_e(doc["png"])}" alt="{_e(name)}">'
                        f"{_e(doc.get('caption', ''))}<br>"
                        f'<span class="muted">{doc.get("wall_time", 0.0):.1f} s, '
                        f"{len(doc.get('runs', {}))} runs</span><br>")
            title = (doc or {}).get("title") or FIGURES[name].title     # a quick one says so
            parts.append(f'<figure id="fig-{_e(name)}"><figcaption><b>{_e(title)}'
                         f"</b></figcaption>{body}<code>{_e(command)}</code></figure>")
        parts.append("</div></section>")

    # environment
    versions = meta.get("versions", {})
    # a resumed folder can hold figures of several revisions: list them all
    revisions = sorted({d["meta"].get("git_revision") or "unknown" for d in figures.values()
                        if "meta" in d}) or [git_revision() or "unknown"]
    created = sorted(d["meta"].get("created", "") for d in figures.values() if "meta" in d)
    env = {"mode": mode, "git revision" + ("s" if len(revisions) > 1 else ""): ", ".join(revisions),
           "host": meta.get("host", platform.node()), "CPU": _cpu(),
           "platform": platform.platform(),
           "figures written": f"{created[0]} … {created[-1]}" if created else "",
           **{f"version: {k}": v for k, v in versions.items()}}
    parts.append('<h2 id="environment">Environment</h2><table>'
                 + "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in env.items())
                 + "</table>")
    parts.append('<div id="lightbox"><img alt="enlarged figure"></div></body></html>')
    return "\n".join(parts)


def write_report(folder: Path) -> tuple[list[dict[str, Any]], Path]:
    """Evaluate every claim against `folder`; write `claims.json` and `index.html` there (only
    over files fastattn wrote: the folder's manifest, `fastattn.outputs`)."""
    from fastattn.outputs import Output

    output = Output(folder, "reproduce")
    rows = ledger(folder)
    text = page(folder, rows)
    for path in (folder / "claims.json", folder / "index.html"):
        output.check_writable(path)
    output.write(folder / "claims.json",
                 lambda fh: fh.write(json.dumps(to_jsonable(rows), indent=2)), "w")
    output.write(folder / "index.html", lambda fh: fh.write(text), "w")
    return rows, folder / "index.html"


def compare(old: list[dict[str, Any]], new: list[dict[str, Any]], rel: float = 1e-9) -> list[str]:
    """One line per claim whose status or measured value (beyond relative `rel`) differs between
    two ledgers, plus claims present in only one."""
    def key(r: dict[str, Any]) -> tuple[str, str]:
        return r["paper"], r["key"]

    before = {key(r): r for r in old}
    after = {key(r): r for r in new}
    lines = []
    for k in sorted(before.keys() | after.keys()):
        a, b = before.get(k), after.get(k)
        name = f"{k[0]}/{k[1]}"
        if a is None or b is None:
            lines.append(f"{name}: only in {'NEW' if a is None else 'OLD'}")
            continue
        ma, mb = a.get("measured"), b.get("measured")
        moved = (ma is None) != (mb is None) or (
            ma is not None and mb is not None and abs(mb - ma) > rel * max(abs(ma), abs(mb)))
        if a["status"] != b["status"] or moved:
            lines.append(f"{name}: status {a['status']} -> {b['status']}; measured "
                         f"{_plain(ma)} -> {_plain(mb)} (paper {_plain(b['paper_value'])}) "
                         f"[{b.get('figure') or 'closed form'}]")
    return lines


def _provenance(row: dict[str, Any]) -> str:
    """"kind · source (where)", e.g. "reproduction · paper (Fig. 6 caption)"."""
    return (f"{row.get('kind') or 'reproduction'} · {row.get('source') or 'no source'}"
            + (f" ({row['where']})" if row.get("where") else ""))


def _plain(value: Any) -> str:
    return "none" if value is None else f"{value:.6g}"


DOCS_BEGIN = "<!-- claims-ledger:begin"
DOCS_END = "<!-- claims-ledger:end -->"


def _md(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def docs_table(rows: list[dict[str, Any]], paper: str, mode: str, revision: str | None) -> str:
    """The generated ledger block of docs/<paper>.md: one row per claim of `paper`."""
    mine = [r for r in rows if r["paper"] == paper]
    flag = " --quick" if mode == "quick" else ""
    command = f"fastattn reproduce --paper {paper}{flag} --out DIR"
    lines = [f"{DOCS_BEGIN} generated by `fastattn report DIR --docs docs`; do not edit by hand -->",
             f"## Claims ledger ({mode} run, figures of git {revision or 'unknown'})",
             "",
             f"Generated from `DIR/claims.json` of `{command}` (or `--all`) by `fastattn report "
             "DIR --docs docs`; `tests/experiments/test_claims_docs.py` checks each row against "
             "the claim's definition (paper value, tolerance, status). The claims and their "
             f"reasons: `fastattn/experiments/{paper}/claims.py`.",
             "",
             headline(mine),
             "",
             "| key | claim | kind · source (where) | figure · field | paper | measured | "
             "tolerance | status | note |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in mine:
        paper_value = _plain(r["paper_value"]) + (
            f" (correct: {_plain(r['corrected'])})" if r["corrected"] is not None else "")
        lines.append(f"| {r['key']} | {_md(r['claim'])} | {_md(_provenance(r))} | "
                     f"{_md(r['figure'] or 'closed form')} · `{_md(r['field'])}` | {paper_value} | "
                     f"{_measured(r)} | {_md(_tolerance(r))} | {r['status']} | {_md(r['note'])} |")
    lines.append(DOCS_END)
    return "\n".join(lines)


def update_docs(docs: Path, rows: list[dict[str, Any]], mode: str, revision: str | None,
                papers: set[str] | None = None) -> list[Path]:
    """Write the ledger block of each paper (of `papers`, default all in `rows`) into
    `docs/<paper>.md` (replacing the old block, or appended at the end). Returns the files
    written."""
    written = []
    for paper in sorted(papers if papers is not None else {r["paper"] for r in rows}):
        path = docs / f"{paper}.md"
        text = path.read_text() if path.exists() else f"# {paper}\n"
        block = docs_table(rows, paper, mode, revision)
        if DOCS_BEGIN in text:
            head, _, rest = text.partition(DOCS_BEGIN)
            _, _, tail = rest.partition(DOCS_END)
            text = head + block + tail
        else:
            text = text.rstrip("\n") + "\n\n" + block + "\n"
        atomic_write(path, lambda fh, text=text: fh.write(text), "w")
        written.append(path)
    return written


def parse_docs_table(text: str) -> list[dict[str, str]]:
    """The rows of a generated ledger block (key, paper, measured, se, status, …) as strings
    ("se": the measured value's standard error, "" where the claim has none)."""
    if DOCS_BEGIN not in text:
        return []
    block = text.partition(DOCS_BEGIN)[2].partition(DOCS_END)[0]
    names = {"key": "key", "claim": "claim", "kind · source (where)": "provenance",
             "figure · field": "where", "paper": "paper", "measured": "measured",
             "tolerance": "tolerance", "status": "status", "note": "note"}
    columns: list[str] = []
    out = []
    for line in block.splitlines():
        if not line.startswith("| ") or line.startswith("|---"):
            continue
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if line.startswith("| key "):
            # by the block's own header: blocks written before a column was added still parse
            columns = [names.get(c, c) for c in cells]
            continue
        row = dict(zip(columns, cells, strict=False))
        row["measured"], _, row["se"] = row.get("measured", "").partition(" ± ")
        out.append(row)
    return out
