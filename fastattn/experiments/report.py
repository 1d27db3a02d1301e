"""The report of a `fastattn reproduce` folder: `claims.json` (the ledger) and `index.html`.

The page is one self-contained file (inline CSS and a little JS, images by relative link) that works
from `file://` with no network: a summary per paper of the folder, then per paper its claims table
and its figures in reading order (each as large as it needs to be read, click to enlarge, Escape to
close; caption, command, compute time); filters by paper and status with counts that follow them;
the environment of the run.
"""

from __future__ import annotations

import html
import json
import os
import platform
import re
import struct
from pathlib import Path
from typing import Any

from fastattn._validate import read_json
from fastattn.experiments.claims import STATUSES, headline, ledger, load, tally
from fastattn.training.records import atomic_write, git_revision, to_jsonable

_COLOURS = {"reproduced": "#1a7f37", "erratum": "#8250df", "not_reproduced": "#cf222e",
            "not_run": "#6e7781", "failed": "#cf222e", "done": "#1a7f37", "cached": "#1a7f37"}

#: a figure spans the whole row when, in one cell of the two-column grid (about 650 px wide on a
#: 1400 px window), it would show below 60 % of the size it was drawn at (130 dpi: its 8-pt text
#: would fall under 9 px), or when it is a row of panels (width over height ≥ 2)
_CELL_PX, _MIN_SCALE, _WIDE_ASPECT = 650, 0.6, 2.0
#: never shown below half its drawn size: on a narrow window a wide figure scrolls in its own box
_FLOOR_SCALE = 0.5

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1400px;
padding:1rem 2rem;color:#1f2328;line-height:1.4;box-sizing:border-box}
h1{margin-bottom:.2rem}h2{border-bottom:2px solid #d0d7de;padding-bottom:.2rem;margin-top:2.5rem}
[id]{scroll-margin-top:calc(var(--bar,3rem) + .5rem)}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;width:100%;margin:.5rem 0 1rem;font-size:.9rem}
th,td{border:1px solid #d0d7de;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.claims{min-width:72rem}table.claims td{overflow-wrap:anywhere}
table.claims td:first-child{min-width:13em}td.tol{min-width:10em}td.by,td.source,td.note{min-width:8em}
td.kind{white-space:nowrap}
[title]{text-decoration:underline dotted #8c959f}th[title]{cursor:help}
.badge{display:inline-block;color:#fff;border-radius:1em;padding:0 .6em;font-size:.8rem;
white-space:nowrap}
.figs{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,480px),1fr));gap:1rem}
figure{margin:0;border:1px solid #d0d7de;border-radius:6px;padding:.5rem;background:#fff;
font-size:.85rem;min-width:0}
figure.wide{grid-column:1/-1}
figure img{width:100%;height:auto;cursor:zoom-in;display:block}
figcaption{font-size:1rem;margin-bottom:.3rem}
code{background:#f6f8fa;padding:0 .2em;font-size:.8rem;overflow-wrap:break-word}
code.cmd span{white-space:nowrap}
.filters{position:sticky;top:0;background:#fff;padding:.5rem 0;border-bottom:1px solid #d0d7de;
z-index:1}
.filters label{margin-right:1rem;white-space:nowrap}
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
  var shown=0,total=0;
  document.querySelectorAll('section.paper').forEach(function(s){
    var rows=s.querySelectorAll('tr.claim'),n=0;
    rows.forEach(function(r){
      var show=(paper==='all'||r.dataset.paper===paper)&&on[r.dataset.status];
      r.style.display=show?'':'none';if(show){n++;}});
    s.querySelector('.claim-count').textContent=n===rows.length?String(n):n+' of '+rows.length;
    shown+=n;total+=rows.length;});
  document.getElementById('shown-count').textContent=shown+' of '+total+' claims shown';
  document.querySelectorAll('tr.paper-row').forEach(function(r){
    r.style.display=(paper==='all'||r.dataset.paper===paper)?'':'none';});
}
function barHeight(){
  var bar=document.querySelector('.filters');
  document.documentElement.style.setProperty('--bar',bar.offsetHeight+'px');
}
function enlarge(img){
  var box=document.getElementById('lightbox');
  box.querySelector('img').src=img.getAttribute('src');
  box.style.display='flex';
}
function shrink(){document.getElementById('lightbox').style.display='none';}
document.addEventListener('DOMContentLoaded',function(){
  document.getElementById('paper-filter').addEventListener('change',applyFilters);
  document.querySelectorAll('input.status-filter').forEach(function(b){
    b.addEventListener('change',applyFilters);});
  document.querySelectorAll('figure img').forEach(function(img){
    img.addEventListener('click',function(){enlarge(img);});});
  document.getElementById('lightbox').addEventListener('click',shrink);
  document.addEventListener('keydown',function(e){if(e.key==='Escape'){shrink();}});
  window.addEventListener('resize',barHeight);
  barHeight();
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


def _measured(row: dict[str, Any]) -> str:
    """The measured value, with its standard error where the claim has one (the docs tables)."""
    text = _plain(row["measured"])
    if row.get("se") is not None and row["measured"] is not None:
        text += f" ± {_plain(row['se'])}"
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


def _tolerance_text(row: dict[str, Any]) -> str:
    """The tolerance as a reader says it: "within 4 % of the paper's", "at least 0.99 (the
    paper's 1 − 0.01)", "at least the paper's 0", "within 4 s.e." (the page; `_tolerance` is the
    docs tables' compact form)."""
    tol, pv = row["tolerance"], row["paper_value"]
    if row.get("tolerance_in_se"):
        margin = f"{tol:.3g} s.e."
    elif row["relative"]:
        margin = f"{100 * tol:.3g} %"
    else:
        margin = f"{tol:.3g}"
    if row["compare"] == "approx":
        if tol == 0:
            return "exactly the paper's value"
        return f"within {margin} of the paper's value" if row["relative"] and not row.get(
            "tolerance_in_se") else f"within ± {margin} of the paper's value"
    word, sign = ("at least", -1) if row["compare"] == "at_least" else ("at most", 1)
    if tol == 0:
        return f"{word} the paper's {_plain(pv)}"
    if row.get("tolerance_in_se"):
        return f"{word} the paper's {_plain(pv)} {'−' if sign < 0 else '+'} {margin}"
    bound = pv + sign * tol * (abs(pv) if row["relative"] else 1.0)
    return (f"{word} {_plain(bound)} (the paper's {_plain(pv)} {'−' if sign < 0 else '+'} "
            f"{margin})")


def _deviation(row: dict[str, Any]) -> str:
    """|measured − paper| in the claim's unit; beneath it, in standard errors where the row has
    them, else relative to the paper's value where the tolerance is relative."""
    dev = row.get("deviation")
    if dev is None:
        return "–"
    text = _fmt(dev)
    if row.get("deviation_se") is not None:
        text += f'<br><span class="muted">{row["deviation_se"]:.3g} s.e.</span>'
    elif row["relative"] and row["paper_value"]:
        text += f'<br><span class="muted">{100 * dev / abs(row["paper_value"]):.3g} %</span>'
    return text


def _command(text: str) -> str:
    """A command as code that wraps only between its words (a name like zhang2025-fig3 or a flag
    like --quick is never split at its hyphen)."""
    return ('<code class="cmd">' + " ".join(f"<span>{_e(word)}</span>" for word in text.split())
            + "</code>")


def _short(name: str) -> str:
    """A figure as its paper names it: "Fig. 3", "E4", "Figs. 9-11", "§11.3" (its index title's
    words between the paper and the colon)."""
    from fastattn.experiments.registry import FIGURES

    head = FIGURES[name].title.split(":")[0] if name in FIGURES else name
    return head.split(", ", 1)[1] if ", " in head else head


def _human_field(row: dict[str, Any]) -> str:
    """A claim's measured quantity in words: its JSON path under `summary` with the dots as " › ",
    list indices as [k] and underscores as spaces ("flow › final loss", "levels › seed0 ›
    measured levels [2]"); a closed form by its function's name."""
    field = row["field"] or ""
    if not row["figure"]:
        return "closed form: " + field.rpartition(":")[2].replace("_", " ")
    path, _, at = field.partition(" at ")
    parts: list[str] = []
    for part in path.removeprefix("summary.").split("."):
        if part.isdigit() and parts:
            parts[-1] += f" [{part}]"
        else:
            parts.append(part.replace("_", " "))
    return " › ".join(parts) + (f", at {at.removeprefix('summary.')}" if at else "")


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, sec = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if hours else f"{minutes} min {sec} s"


def _png_size(path: Path) -> tuple[int, int] | None:
    """(width, height) in pixels from a PNG's header (its IHDR chunk comes first), or None."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(24)
    except OSError:
        return None
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    width, height = struct.unpack(">II", head[16:24])
    return (width, height) if width and height else None


def _layout(size: tuple[int, int] | None) -> tuple[str, str]:
    """(figure class, image style) for a PNG of `size`: "wide" (the whole row) for a row of
    panels or a figure a grid cell would shrink below `_MIN_SCALE`; the image's minimum width
    keeps it at `_FLOOR_SCALE` of its drawn size (its box scrolls on a narrow window)."""
    if size is None:
        return "", ""
    width, height = size
    wide = width / height >= _WIDE_ASPECT or _CELL_PX < _MIN_SCALE * width
    return ("wide" if wide else ""), f"min-width:{round(_FLOOR_SCALE * width)}px"


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return f"{line.split(':', 1)[1].strip()} ({os.cpu_count()} logical CPUs)"
    except OSError:
        pass
    return f"{platform.processor() or platform.machine()} ({os.cpu_count()} logical CPUs)"


def _manifest(folder: Path) -> dict[str, Any]:
    path = folder / "reproduce.json"
    return read_json(path) if path.exists() else {}


def _figures(folder: Path) -> dict[str, dict[str, Any]]:
    """Each figure's JSON in `folder` (name → document), in reading order (`figure_order`), plus
    failed figures from the manifest (name → {"failed": error})."""
    from fastattn.experiments.registry import FIGURES, figure_order

    manifest = _manifest(folder).get("figures", {})
    out: dict[str, dict[str, Any]] = {}
    for name in sorted(FIGURES, key=figure_order):
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
    mode = _manifest(folder).get("mode")
    if mode:
        return mode
    figures = _figures(folder) if figures is None else figures
    return "quick" if any(d.get("quick") for d in figures.values()) else "full"


def folder_papers(folder: Path) -> tuple[str, ...]:
    """The papers `folder` holds (in the manifests' order): those with a figure there, finished or not,
    or in its manifest (a failed or interrupted one). A `--paper zhang2025` folder is Zhang's only:
    the other papers' claims are not "not run" there. A folder with no figure at all: every paper."""
    from fastattn.experiments.registry import FIGURES
    from fastattn.papers import names as all_papers

    names = set(_manifest(folder).get("figures", {})) | {
        n for n in FIGURES if (folder / f"{n}.json").exists()}
    papers = {n.split("-")[0] for n in names}
    return tuple(p for p in all_papers() if p in papers) or all_papers()


def compute_time(folder: Path) -> float:
    """The figures' compute time: the sum of each finished figure's own `wall_time`, kept in its
    JSON from the command that computed it (a rerun that finds it finished does not change it)."""
    return sum(d.get("wall_time", 0.0) for d in _figures(folder).values() if "failed" not in d)


def _claim_order(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows by their figure's reading order (`figure_order`; closed forms last), each figure's
    claims in the order they are defined."""
    from fastattn.experiments.registry import figure_order

    return sorted(rows, key=lambda r: (r["figure"] is None, figure_order(r["figure"] or "")))


def page(folder: Path, rows: list[dict[str, Any]]) -> str:
    """The report page's HTML for `folder` with ledger `rows` (of the folder's papers)."""
    from fastattn.experiments.registry import FIGURES, figure_order
    from fastattn.papers import names as all_papers

    figures = _figures(folder)
    manifest = _manifest(folder)
    papers = folder_papers(folder)
    mode = folder_mode(folder, figures)
    quick = " --quick" if mode == "quick" else ""
    meta = next((d["meta"] for d in figures.values() if "meta" in d), {})
    batch = "--all" if papers == all_papers() else " ".join(f"--paper {p}" for p in papers)
    parts = [f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
             f"<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
             f"<title>fastattn reproduce: {len(rows)} claims, {len(figures)} figures</title>"
             f"<style>{_CSS}</style><script>{_JS}</script></head><body>"]
    parts.append(f"<h1>fastattn: {len(papers)} paper{'s' if len(papers) > 1 else ''} "
                 "reproduced</h1>")
    parts.append(f'<p class="muted">Mode <b>{_e(mode)}</b>'
                 + (" (small settings: many claims are measured only by the full run)"
                    if mode == "quick" else "")
                 + f" · {len(figures)} figures · {len(rows)} claims · "
                 f"command {_command(f'fastattn reproduce {batch}{quick} --out DIR')}</p>")

    # summary: reproductions of the papers' numbers first, then the rest (kind × source × status)
    parts.append(f"<p><b>{_e(headline(rows))}</b></p>")
    parts.append(f'<div class="scroll">{tally_table_html(rows)}</div>')
    parts.append('<div class="scroll"><table id="summary"><tr><th>paper</th>'
                 "<th>figures (ok / failed / listed)</th><th>compute time</th>"
                 + "".join(f"<th>{_badge(s)}</th>" for s in STATUSES) + "<th>claims</th></tr>")
    for paper in papers:
        names = [n for n in FIGURES if n.startswith(paper + "-")]
        ok = [n for n in names if n in figures and "failed" not in figures[n]]
        failed = [n for n in names if n in figures and "failed" in figures[n]]
        wall = sum(figures[n].get("wall_time", 0.0) for n in ok)
        mine = [r for r in rows if r["paper"] == paper]
        counts = [sum(r["status"] == s for r in mine) for s in STATUSES]
        parts.append(f'<tr class="paper-row" data-paper="{_e(paper)}"><td><a href="#{_e(paper)}">'
                     f"{_e(paper)}</a></td><td class=\"num\">{len(ok)} / {len(failed)} / "
                     f"{len(names)}</td><td class=\"num\">{_duration(wall)}</td>"
                     + "".join(f'<td class="num">{c}</td>' for c in counts)
                     + f'<td class="num">{len(mine)}</td></tr>')
    parts.append("</table></div>")
    total = manifest.get("wall_time")
    parts.append(f'<p class="muted" id="times">Compute time of the figures: <b id="compute-time">'
                 f"{_duration(compute_time(folder))}</b> (the sum of each figure's own time, "
                 "kept from the command that computed it)"
                 + (f"; the last <code>fastattn reproduce</code> command in this folder took "
                    f'<span id="last-command">{_duration(total)}</span> (figures it found finished '
                    "are not recomputed)" if total is not None else "") + ".</p>")

    # filters
    parts.append('<div class="filters"><label>paper <select id="paper-filter">'
                 '<option value="all">all</option>'
                 + "".join(f'<option value="{_e(p)}">{_e(p)}</option>' for p in papers)
                 + "</select></label>status "
                 + "".join(f'<label><input type="checkbox" class="status-filter" value="{s}" '
                           f"checked> {_badge(s)}</label>" for s in STATUSES)
                 + f'<span class="muted" id="shown-count">{len(rows)} of {len(rows)} claims '
                 "shown</span></div>")

    # the claim, its verdict and its numbers first; where they come from after
    head = ("<th>claim</th><th>status</th><th>paper</th><th>measured</th>"
            '<th title="|measured − paper| in the claim\'s unit; beneath it in standard errors '
            '(claims with one) or relative to the paper\'s value">|measured − paper|</th>'
            "<th>tolerance (why)</th>"
            '<th title="the figure and the quantity of its JSON that measure the claim">'
            "measured by</th><th>kind</th><th>source (where)</th><th>note</th>")
    for paper in papers:
        parts.append(f'<section class="paper" data-paper="{_e(paper)}" id="{_e(paper)}">'
                     f"<h2>{_e(paper)}</h2>")
        mine = _claim_order([r for r in rows if r["paper"] == paper])
        parts.append(f'<h3>Claims (<span class="claim-count">{len(mine)}</span>)</h3>')
        parts.append(f'<div class="scroll"><table class="claims"><tr>{head}</tr>')
        for r in mine:
            path = (f"{r['figure']}.json: {r['field']}" if r["figure"] else r["field"])
            label = _e(_human_field(r))
            where = (f'<a href="#fig-{_e(r["figure"])}">{_e(_short(r["figure"]))}</a> · '
                     if r["figure"] else "")
            paper_value = _fmt(r["paper_value"]) + (
                f'<br><span class="muted">correct: {_fmt(r["corrected"])}</span>'
                if r["corrected"] is not None else "")
            parts.append(
                f'<tr class="claim" data-paper="{_e(paper)}" data-status="{_e(r["status"])}" '
                f'data-key="{_e(r["key"])}">'
                f"<td>{_e(r['claim'])}</td><td>{_badge(r['status'], _status_label(r))}</td>"
                f'<td class="num">{paper_value}</td><td class="num">{_fmt(r["measured"])}'
                + (f'<br><span class="muted">s.e. {r["se"]:.2g}</span>'
                   if r.get("se") is not None and r["measured"] is not None else "")
                + f'</td><td class="num deviation">{_deviation(r)}</td>'
                f"<td class=\"tol\">{_e(_tolerance_text(r))}<br><span class=\"muted\">"
                f"{_e(r['tolerance_reason'])}</span></td>"
                f'<td class="by">{where}<span class="field" title="{_e(path)}">{label}</span></td>'
                f"<td class=\"kind\">{_e((r.get('kind') or 'reproduction').replace('_', ' '))}</td>"
                f"<td class=\"source\">{_e(r.get('source') or 'no source')}"
                + (f' <span class="muted">({_e(r["where"])})</span>' if r.get("where") else "")
                + (f'<br><span class="muted">“{_e(r["quote"])}”</span>' if r.get("quote") else "")
                + "</td>"
                f"<td class=\"note\">{_e(r['note'])}</td></tr>")
        parts.append("</table></div>")
        parts.append('<h3>Figures</h3><div class="figs">')
        for name in sorted((n for n in FIGURES if n.startswith(paper + "-")), key=figure_order):
            doc = figures.get(name)
            command = f"fastattn reproduce {name} --out DIR{quick}"
            kind = ""
            if doc is None:
                body = '<p class="muted">not run</p>'
            elif "failed" in doc:
                body = f'<p class="error">{_badge("failed")} {_e(doc["failed"])}</p>'
            else:
                kind, style = _layout(_png_size(folder / doc["png"]))
                body = (f'<div class="scroll"><img src="{_e(doc["png"])}" alt="{_e(name)}" '
                        f'style="{style}"></div>'
                        f"{_e(doc.get('caption', ''))}<br>"
                        f'<span class="muted">computed in {_duration(doc.get("wall_time", 0.0))}, '
                        f"{len(doc.get('runs', {}))} runs</span><br>")
            title = (doc or {}).get("title") or FIGURES[name].title     # a quick one says so
            parts.append(f'<figure id="fig-{_e(name)}"' + (f' class="{kind}"' if kind else "")
                         + f"><figcaption><b>{_e(title)}</b></figcaption>{body}"
                         f"{_command(command)}</figure>")
        parts.append("</div></section>")
    # environment
    versions = meta.get("versions", {})
    # a resumed folder can hold figures of several revisions: list them all
    revisions = sorted({d["meta"].get("git_revision") or "unknown" for d in figures.values()
                        if "meta" in d}) or [git_revision() or "unknown"]
    created = sorted(d["meta"].get("created", "") for d in figures.values() if "meta" in d)
    # `reproduce --device`: a folder holds one engine's figures (`batch.prepare`) unless one was
    # replaced with --overwrite; then the row lists both
    steps = sorted({"C++ core" if d.get("device") is None else f"Triton kernels on {d['device']}"
                    for d in figures.values() if "meta" in d})
    env = {"mode": mode, "git revision" + ("s" if len(revisions) > 1 else ""): ", ".join(revisions),
           "He step of the batched runs": ", ".join(steps),
           "host": meta.get("host", platform.node()), "CPU": _cpu(),
           "platform": platform.platform(),
           "figures written": f"{created[0]} … {created[-1]}" if created else "",
           **{f"version: {k}": v for k, v in versions.items()}}
    parts.append('<h2 id="environment">Environment</h2><div class="scroll"><table>'
                 + "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in env.items())
                 + "</table></div>")
    parts.append('<div id="lightbox"><img alt="enlarged figure"></div></body></html>')
    return "\n".join(parts)


def write_report(folder: Path) -> tuple[list[dict[str, Any]], Path]:
    """Evaluate the claims of the folder's papers (`folder_papers`) against `folder`; write
    `claims.json` and `index.html` there (only over files fastattn wrote: the folder's manifest,
    `fastattn.outputs`)."""
    from fastattn.outputs import Output

    output = Output(folder, "reproduce")
    output.check_kind()
    rows = ledger(folder, load(folder_papers(folder)))
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
    """The generated ledger block of docs/<paper>.md: one row per claim of `paper`, in the page's
    order (`_claim_order`: figures numerically, closed forms last)."""
    mine = _claim_order([r for r in rows if r["paper"] == paper])
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
