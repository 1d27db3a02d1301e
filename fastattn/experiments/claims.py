"""The claims ledger: each paper's quantitative claims, measured against a `reproduce` folder.

A paper's claims are data beside its recipes (`fastattn/experiments/<paper>/claims.py`, a tuple
`CLAIMS` of `Claim`). A claim names the figure and the field of that figure's JSON summary that
measures it (`summary.a.b.0`: keys and list indices), or, for a closed form that no figure draws, a
`measure` function ("module:function", cheap, no training). `evaluate` gives each claim a status:

- `reproduced`: the measured value is within the tolerance of the paper's;
- `erratum`: it is not, but it is within the tolerance of `corrected`, the value the paper should
  have printed (the claim's `note` says why the paper is wrong);
- `not_reproduced`: neither (the note gives the known reason, or the two numbers);
- `not_run`: the figure was not run or failed, or the quick form does not measure the claim.
"""

from __future__ import annotations

import importlib
import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fastattn._validate import read_json

STATUSES = ("reproduced", "erratum", "not_reproduced", "not_run")
SOURCES = ("paper", "derived", "authors_code", "spec")
KINDS = ("reproduction", "theory_check")


@dataclass(frozen=True)
class Claim:
    """One quantitative claim of a paper.

    Attributes:
        paper: the paper package, e.g. "sander2024".
        key: short id, unique within the paper.
        claim: the claim in words (where in the paper: "Prop. 4", "Fig. 3", "§5.2").
        paper_value: the number the paper (or its spec's reproduction target) states.
        figure: the figure whose JSON measures it ("" with `measure`).
        field: dotted path into that JSON, e.g. "summary.final_loss" or "summary.levels.2".
        tolerance: allowed |measured − paper_value| (relative to |paper_value| if `relative`).
        reason: why that tolerance (integration error, seeds, finite batch …).
        relative: tolerance relative (default) or absolute.
        compare: "approx" (within tolerance), "at_most" / "at_least" (a bound: measured ≤ / ≥
            paper_value + / − tolerance).
        corrected: the right value where the paper's is wrong (an erratum), else None.
        note: the erratum's explanation, or why a claim is known not to reproduce.
        quick: whether the `--quick` form measures it (False: its numbers are at smaller sizes).
        measure: "module:function" returning the measured value (a closed form, no figure).
        magnitude: compare |measured| (a quantity defined up to a global sign).
        at: (path, value): `field` is a list indexed like the list at `path`; take the entry where
            that list equals `value` (e.g. ("summary.L", 40): the quick and full grids differ). A
            field "a.b.[].c" takes that entry of the list a.b, then its c.
        source: where `paper_value` comes from: "paper" (printed in the paper: text, table cell,
            caption, axis), "derived" (the paper's own equation evaluated at the paper's own
            setting; `where` names the equation), "authors_code" (the authors' published code or
            notebook), "spec" (a number only our specs hold).
        where: the paper's location as printed ("Eq. 19", "Fig. 6 caption", "Table 1, row H = 2").
        quote: for source "paper", the sentence or cell the number comes from.
        kind: "reproduction" (`measured` comes from runs of the library's models: trained,
            simulated or integrated, never from the expression the target was computed with) or
            "theory_check" (a closed form checked against something computed another way).
        se_field: dotted path (like `field`) to the standard error of the measured value; when
            given, `tolerance` counts standard errors (|measured − target| ≤ tolerance · s.e.).
        seeds: `field` names a `seed_summary` of every seed (or run) of the figure, no chosen
            one: the measured value is its median, and the row adds the spread and the fraction
            of the seeds whose own value meets the claim (`evaluate`).
    """

    paper: str
    key: str
    claim: str
    paper_value: float
    figure: str = ""
    field: str = ""
    tolerance: float = 0.05
    reason: str = ""
    relative: bool = True
    compare: str = "approx"
    corrected: float | None = None
    note: str = ""
    quick: bool = True
    measure: str = ""
    at: tuple[str, float] | None = None
    magnitude: bool = False
    source: str = ""
    where: str = ""
    quote: str = ""
    kind: str = "reproduction"
    se_field: str = ""
    seeds: bool = False

    def __post_init__(self) -> None:
        if bool(self.figure) == bool(self.measure):
            raise ValueError(f"claim {self.paper}/{self.key}: give a figure (and field) or a "
                             "measure, not both or neither")
        if self.figure and not self.field:
            raise ValueError(f"claim {self.paper}/{self.key}: a figure claim needs its JSON field")
        if ".[]" in self.field and self.at is None:
            raise ValueError(f"claim {self.paper}/{self.key}: a field with [] needs `at`")
        if self.compare not in ("approx", "at_most", "at_least"):
            raise ValueError(f"claim {self.paper}/{self.key}: compare must be approx, at_most or "
                             f"at_least; got {self.compare!r}")
        if not self.reason:
            raise ValueError(f"claim {self.paper}/{self.key}: give the tolerance's reason")
        if self.source and self.source not in SOURCES:
            raise ValueError(f"claim {self.paper}/{self.key}: source must be one of {SOURCES}; "
                             f"got {self.source!r}")
        if self.kind not in KINDS:
            raise ValueError(f"claim {self.paper}/{self.key}: kind must be one of {KINDS}; "
                             f"got {self.kind!r}")
        if self.seeds and self.se_field:
            raise ValueError(f"claim {self.paper}/{self.key}: a claim over seeds reads their "
                             "median and spread; drop se_field or seeds")
        if self.source == "paper" and not self.quote:
            raise ValueError(f"claim {self.paper}/{self.key}: a number printed in the paper needs "
                             "its quote")

    def within(self, measured: float, target: float, se: float | None = None) -> bool:
        """Whether `measured` satisfies the claim with `target` in place of the paper's value
        (with `se_field`, `se` is the measured value's standard error and the tolerance counts
        standard errors)."""
        if self.se_field:
            if se is None:
                raise ValueError(f"claim {self.paper}/{self.key}: se_field given but no standard "
                                 "error measured")
            tol = self.tolerance * se
        else:
            tol = self.tolerance * (abs(target) if self.relative else 1.0)
        if self.compare == "at_most":
            return measured <= target + tol
        if self.compare == "at_least":
            return measured >= target - tol
        return abs(measured - target) <= tol


def load(papers: Iterable[str] | None = None) -> list[Claim]:
    """Every claim of `papers` (default: every paper), found through each paper's manifest
    (`fastattn.papers`, field `claims`)."""
    from fastattn import papers as manifests

    chosen = [manifests.get(name) for name in papers] if papers else manifests.manifests()
    out: list[Claim] = []
    for paper in chosen:
        if paper.claims is None:
            continue
        claims = manifests.resolve(paper.claims)
        strays = [c.key for c in claims if c.paper != paper.name]
        if strays:
            raise ValueError(f"claims {strays} listed by paper {paper.name} name another paper")
        out.extend(claims)
    keys = [(c.paper, c.key) for c in out]
    dupes = {k for k in keys if keys.count(k) > 1}
    if dupes:
        raise ValueError(f"claims listed twice: {sorted(dupes)}")
    return out


def lookup(doc: Any, field: str) -> Any:
    """The value at dotted path `field` of a JSON document (integers index lists; a key that
    itself holds dots, e.g. "fixed0.0", is matched whole); KeyError if absent."""
    return _lookup(doc, field.split("."), field)


def _lookup(value: Any, parts: list[str], field: str) -> Any:
    if not parts:
        return value
    if isinstance(value, list):
        try:
            return _lookup(value[int(parts[0])], parts[1:], field)
        except (ValueError, IndexError):
            raise KeyError(field) from None
    if isinstance(value, dict):
        for n in range(len(parts), 0, -1):      # longest key first
            key = ".".join(parts[:n])
            if key in value:
                try:
                    return _lookup(value[key], parts[n:], field)
                except KeyError:
                    continue
    raise KeyError(field)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return None


def seed_summary(values: Sequence[Any], meets: Callable[[Any], bool] | None = None
                 ) -> dict[str, Any]:
    """One quantity measured on every seed of a figure (None or NaN where a seed measured none):
    {"values" (None for those), "median", "min", "max"} over the seeds with a value (None if no
    seed has one) and, with `meets` (a criterion the figure states itself, e.g. a ratio ≤ 1),
    "fraction_meeting": the fraction of all the seeds whose value meets it. A claim with
    `seeds=True` reads such a summary."""
    v = [None if x is None or (isinstance(x, float) and not math.isfinite(x)) else x
         for x in values]
    ok = [x for x in v if x is not None]
    out = {"values": v, "median": float(np.median(ok)) if ok else None,
           "min": min(ok, default=None), "max": max(ok, default=None)}
    if meets is not None:
        out["fraction_meeting"] = float(np.mean([x is not None and meets(x) for x in v]))
    return out


def _read(doc: dict[str, Any], claim: Claim, field: str) -> Any:
    """The value at `field` (the claim's `field` or `se_field`) of a figure's JSON, taking the
    entry the claim's `at` names."""
    head, _, tail = field.partition(".[]")
    value = lookup(doc, head)
    if claim.at is not None:
        value = value[list(lookup(doc, claim.at[0])).index(claim.at[1])]
    if tail:
        value = lookup(value, tail.lstrip("."))
    return value


def evaluate(claim: Claim, folder: Path, quick: bool | None) -> dict[str, Any]:
    """The ledger row of `claim` against the figures in `folder` (a run of mode `quick`).

    The row carries the claim's provenance (`source`, `where`, `quote`, `kind`), the measured
    value, its standard error `se` (claims with `se_field`, else None), `deviation` = |measured −
    paper_value| and `deviation_se` = deviation / se. `not_run_reason` says why a claim was not
    measured: "quick" (a full-settings claim in a quick folder), "figure" (its figure was not run
    or failed) or "value" (no finite value, or the field is missing)."""
    row: dict[str, Any] = {
        "paper": claim.paper, "key": claim.key, "figure": claim.figure or None,
        "field": (claim.field + (f" at {claim.at[0]} = {claim.at[1]:g}" if claim.at else "")
                  if claim.field else claim.measure), "claim": claim.claim,
        "paper_value": claim.paper_value, "corrected": claim.corrected, "measured": None,
        "se": None, "deviation": None, "deviation_se": None,
        "tolerance": claim.tolerance, "relative": claim.relative, "compare": claim.compare,
        "tolerance_in_se": bool(claim.se_field),
        "tolerance_reason": claim.reason, "status": "not_run", "not_run_reason": None, "note": "",
        "source": claim.source or None, "where": claim.where or None, "quote": claim.quote or None,
        "kind": claim.kind, "seeds": None}
    if claim.measure:
        module, _, attr = claim.measure.partition(":")
        try:
            row["measured"] = _number(getattr(importlib.import_module(module), attr)())
        except Exception as exc:
            row["note"] = f"measure failed: {type(exc).__name__}: {exc}"
            row["not_run_reason"] = "value"
            return row
    else:
        path = folder / f"{claim.figure}.json"
        if not path.exists():
            row["note"] = "figure not run (or it failed)"
            row["not_run_reason"] = "figure"
            return row
        doc = read_json(path)
        if doc.get("quick") and not claim.quick:
            # a number of the smaller settings would read as a result
            row["note"] = "not run (quick): measured only at full settings; run without --quick"
            row["not_run_reason"] = "quick"
            return row
        try:
            value = _read(doc, claim, claim.field)
            if claim.seeds:
                seeds = [_number(x) for x in value["values"]]
                if claim.magnitude:
                    seeds = [None if x is None else abs(x) for x in seeds]
                value = seed_summary(seeds)["median"]
            row["measured"] = _number(value)
            if claim.magnitude and row["measured"] is not None:
                row["measured"] = abs(row["measured"])
            if claim.se_field:
                row["se"] = _number(_read(doc, claim, claim.se_field))
        except (KeyError, IndexError, ValueError, TypeError):
            row["measured"] = None
            row["note"] = (f"the figure's JSON has no {claim.field}"
                           + (f" or {claim.se_field}" if claim.se_field else "")
                           + (" (the quick form does not compute it)" if doc.get("quick") else ""))
            row["not_run_reason"] = "value"
            return row
    measured, se = row["measured"], row["se"]
    if measured is None or (claim.se_field and (se is None or se <= 0)):
        row["note"] = ("no finite value measured" if measured is None
                       else f"no positive standard error at {claim.se_field}")
        row["not_run_reason"] = "value"
        return row
    row["deviation"] = abs(measured - claim.paper_value)
    if se is not None:
        row["deviation_se"] = row["deviation"] / se
    if claim.within(measured, claim.paper_value, se):
        row["status"] = "reproduced"
        row["note"] = claim.note if claim.corrected is None else ""
    elif claim.corrected is not None and claim.within(measured, claim.corrected, se):
        row["status"] = "erratum"
        row["note"] = claim.note
    else:
        row["status"] = "not_reproduced"
        row["note"] = claim.note or (f"measured {measured:.6g}"
                                     + (f" ± {se:.2g}" if se is not None else "")
                                     + f" vs the paper's {claim.paper_value:.6g}")
    if claim.seeds:
        target = claim.corrected if row["status"] == "erratum" else claim.paper_value
        spread = seed_summary(seeds, lambda x: claim.within(x, target))
        n, k = len(seeds), sum(x is not None for x in seeds)
        row["seeds"] = {"n": n, "measured": k, "min": spread["min"], "max": spread["max"],
                        "fraction_meeting": spread["fraction_meeting"]}
        row["note"] = (f"median of {k} of {n} runs (range {spread['min']:.6g} to "
                       f"{spread['max']:.6g}); {round(spread['fraction_meeting'] * n)} of {n} meet "
                       "the claim" + (f". {row['note']}" if row["note"] else ""))
    return row


def ledger(folder: Path, claims: Iterable[Claim] | None = None) -> list[dict[str, Any]]:
    """Every claim evaluated against `folder` (a `fastattn reproduce` output)."""
    quick = None
    manifest = folder / "reproduce.json"
    if manifest.exists():
        quick = json.loads(manifest.read_text()).get("quick")
    return [evaluate(c, folder, quick) for c in (load() if claims is None else claims)]


#: the headline's first group: reproductions of numbers the paper prints or its equations give
HEADLINE_SOURCES = ("paper", "derived")


def tally(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ledger rows counted by kind × source × status, reproductions of `paper`/`derived` numbers
    first: one dict per (kind, source) present, {"kind", "source", "total", <status>: n …}
    (a row without a source counts under source "none")."""
    order = [(k, s) for k in KINDS for s in (*SOURCES, "none")]
    counts: dict[tuple[str, str], dict[str, Any]] = {}
    for r in rows:
        cell = (r.get("kind") or "reproduction", r.get("source") or "none")
        entry = counts.setdefault(cell, {"kind": cell[0], "source": cell[1], "total": 0,
                                         **{s: 0 for s in STATUSES}})
        entry[r["status"]] += 1
        entry["total"] += 1
    return [counts[c] for c in order if c in counts]


def headline(rows: Iterable[dict[str, Any]]) -> str:
    """One line: the reproductions of the papers' printed or derived numbers by status, then the
    other claims by status, e.g. "reproductions of paper/derived numbers: 30 of 40 reproduced, 2
    erratum, …; other claims (…): …"."""
    rows = list(rows)
    first = [r for r in rows if (r.get("kind") or "reproduction") == "reproduction"
             and r.get("source") in HEADLINE_SOURCES]
    rest = [r for r in rows if r not in first]

    def by_status(group: list[dict[str, Any]]) -> str:
        parts = [f"{sum(r['status'] == s for r in group)} {s.replace('_', ' ')}"
                 for s in STATUSES if any(r["status"] == s for r in group)]
        return f"{len(group)} ({', '.join(parts) or 'none'})"

    return (f"reproductions of paper/derived numbers: {by_status(first)}; other claims "
            f"(theory checks, authors' code, specs, no source): {by_status(rest)}")
