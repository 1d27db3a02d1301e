"""Planted bugs that the claims ledger must catch: `fastattn report DIR --mutations`.

Each `Mutation` is one exact text substitution in one file of the package (a moment, a model's
forward, an objective's term, a theory constant, a time unit, a sampler). `check` copies the
imported package (and its kernels, beside it) to a temporary folder, never touching the checkout,
plants the bug there, reruns the quick figures that depend on it in a fresh Python process whose
path starts at the copy, and lists the claims whose status differs from the same figures run by an
unplanted copy. A bug that flips no claim is a hole in the ledger.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: the kinds of planted bug issue 35 asks for, each paper's bugs spread over several of them
KINDS = ("moment", "model's forward", "objective's term", "theory constant", "time unit", "sampler")


@dataclass(frozen=True)
class Mutation:
    """One planted bug.

    Attributes:
        key: short id, e.g. "zhang-cubic-transpose".
        paper: the paper whose claims should catch it.
        kind: one of `KINDS`.
        file: the file to patch, relative to the package folder (e.g. "models/cubic_mlp.py").
        old: the exact text replaced; it must occur exactly once in the file.
        new: its replacement (the bug).
        figures: the quick figures to rerun (those whose claims should flip).
        description: the bug in words.
        ci: whether the CI subset (tests/experiments/test_mutations.py) runs it: one per paper,
            the cheapest to check.
    """

    key: str
    paper: str
    kind: str
    file: str
    old: str
    new: str
    figures: tuple[str, ...]
    description: str
    ci: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"mutation {self.key}: kind={self.kind!r} is unknown; use one of "
                             f"{list(KINDS)}")


MUTATIONS: tuple[Mutation, ...] = (
    # ---- Zhang et al. 2025
    Mutation("zhang-cubic-transpose", "zhang2025", "model's forward", "models/cubic_mlp.py",
             "hidden = ops.cubic_hidden(beta(x, y, lengths), x_q, self.W1)",
             "hidden = ops.cubic_hidden(x_q, beta(x, y, lengths), self.W1)",
             ("zhang2025-fig1",), "the cubic feature z = vec(β x_qᵀ) transposed in "
             "CubicMLP.forward"),
    Mutation("zhang-moments-inv-n", "zhang2025", "moment", "tasks/linear_regression.py",
             "inv_n=self.inv_context_mean())",
             "inv_n=1.0 / (1.0 / self.inv_context_mean() + 1.0))",
             ("zhang2025-fig7",), "the population moments use 1/(N+1) for 1/N", ci=True),
    Mutation("zhang-eq51-constant", "zhang2025", "theory constant", "theory/zhang2025.py",
             "c**2 * (1.0 + (1.0 + dim) * inv_n) * g**2", "c**2 * (1.0 + dim * inv_n) * g**2",
             ("zhang2025-fig1",), "Eq. 51's (1 + D)/N term read as D/N"),
    Mutation("zhang-query-sampler", "zhang2025", "sampler", "tasks/linear_regression.py",
             "x_all[:, :n_max] * mask[..., None], x_all[:, n_max]",
             "x_all[:, :n_max] * mask[..., None], x_all[:, 0]",
             ("zhang2025-fig1",), "the sampler draws the query as the first context token"),
    # ---- He et al. 2025
    Mutation("he-softmax-scale", "he2025", "model's forward", "models/multihead_softmax.py",
             "return ops.single_query_attention(q, k, v, 1.0)",
             "return ops.single_query_attention(q, k, v, 2.0)",
             ("he2025-e5",), "softmax attention scores doubled"),
    Mutation("he-mu-gamma", "he2025", "theory constant", "theory/he2025.py",
             "return (g / 2) / (g ** 2 + (1 + sigma2) / L * np.sinh(d * g ** 2))",
             "return g / (g ** 2 + (1 + sigma2) / L * np.sinh(d * g ** 2))",
             ("he2025-e8",), "the solution manifold's μ_γ without its ½", ci=True),
    Mutation("he-query-noise", "he2025", "sampler", "tasks/linear_regression.py",
             'y_q = torch.einsum("bd,bd->b", x_q, w) + eps[:, n_max]',
             'y_q = torch.einsum("bd,bd->b", x_q, w)',
             ("he2025-e5",), "the sampler draws the query label without its noise σ²"),
    # ---- Sander et al. 2024
    Mutation("sander-pe-gradient", "sander2024", "objective's term", "population/autoregressive.py",
             "grad[T - 2, :T] = 2 * Hq", "grad[T - 2, :T] = Hq",
             ("sander2024-fig6",), "the positional-only objective's gradient halved", ci=True),
    Mutation("sander-pe-hessian", "sander2024", "theory constant", "theory/sander2024.py",
             "x = 4 * math.pi * k / mu", "x = 2 * math.pi * k / mu",
             ("sander2024-fig6",), "Prop. 7's H_tt' with 2π for 4π"),
    Mutation("sander-merged-transpose", "sander2024", "model's forward", "models/autoregressive.py",
             "return self.B.T @ self.A", "return self.A.T @ self.B",
             ("sander2024-props",), "the DIAG model's C = BᵀA transposed in its forward"),
    # ---- Mainali & Teixeira 2025
    Mutation("mainali-sgd-time", "mainali2025", "time unit", "training/task_sgd.py",
             "time = 2 * cfg.lr * steps", "time = cfg.lr * steps",
             ("mainali2025-fig1",), "task-SGD's time axis at lr per step instead of 2 lr", ci=True),
    Mutation("mainali-optimum-factor", "mainali2025", "theory constant", "theory/mainali2025.py",
             "a[idx] = n / (n + 1) / s[idx] * (1 - 1 / (np.sqrt(s[idx]) * r))",
             "a[idx] = 1 / s[idx] * (1 - 1 / (np.sqrt(s[idx]) * r))",
             ("mainali2025-fig1",), "the exact optimum a* without its N/(N+1) factor"),
    Mutation("mainali-input-scale", "mainali2025", "sampler", "tasks/wishart_tasks.py",
             "xb = torch.randn(b, n + 1, d, generator=g, dtype=torch.float64) * root",
             "xb = torch.randn(b, n + 1, d, generator=g, dtype=torch.float64) * root**2",
             ("mainali2025-fig1",), "the sampler scales the inputs by s, not √s (covariance S²)"),
    # ---- Musat et al. 2025
    Mutation("musat-paper-time", "musat2025", "time unit", "theory/musat2025.py",
             "PAPER_TIME_PER_CORE_TIME = 0.5", "PAPER_TIME_PER_CORE_TIME = 1.0",
             ("musat2025-gram19",), "the paper's time read as the integrators' time", ci=True),
    Mutation("musat-rotation-dropped", "musat2025", "sampler", "tasks/induction.py",
             "pm = torch.cat([p[..., h:], p[..., :h]], dim=-1)", "pm = p",
             ("musat2025-fig3", "musat2025-fig5"), "the sampler gives the labels p_i, not p_i M "
             "(the rotation M dropped)"),
    Mutation("musat-query-self", "musat2025", "model's forward", "models/disentangled.py",
             'n_keys = L - 1 if check_mask(mask) == "strict" else L', "n_keys = L",
             ("musat2025-sweep",), "the strict mask lets the query attend to itself in the "
             "second layer"),
)


def get(keys: Iterable[str] | None = None) -> list[Mutation]:
    """The mutations named by `keys` (default: all); ValueError naming an unknown key."""
    if keys is None:
        return list(MUTATIONS)
    by_key = {m.key: m for m in MUTATIONS}
    unknown = [k for k in keys if k not in by_key]
    if unknown:
        raise ValueError(f"unknown mutation(s) {unknown}; known: {sorted(by_key)}")
    return [by_key[k] for k in keys]


def package_copy(dest: Path) -> Path:
    """Copy the imported `fastattn` package (and `triton_kernels/` where a source checkout keeps
    it beside the package) into `dest`; return `dest`, the folder to put first on the path. The
    copy joins the installed compiled core as the checkout does (`fastattn/_core_loader.py`)."""
    here = Path(__file__).resolve().parents[1]         # the imported fastattn package
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(here, dest / "fastattn", ignore=ignore)
    kernels = here.parent / "triton_kernels"
    if not (here / "triton_kernels").is_dir() and (kernels / "__init__.py").is_file():
        shutil.copytree(kernels, dest / "triton_kernels", ignore=ignore)
    return dest


def plant(mutation: Mutation, root: Path) -> None:
    """Apply `mutation` to the package copy under `root` (its text must occur exactly once)."""
    path = root / "fastattn" / mutation.file
    text = path.read_text()
    if text.count(mutation.old) != 1:
        raise ValueError(f"mutation {mutation.key}: {mutation.file} holds its old text "
                         f"{text.count(mutation.old)} times, not once (the code changed: update "
                         "fastattn/experiments/mutations.py)")
    path.write_text(text.replace(mutation.old, mutation.new))


_RUNNER = """
import json, sys
from pathlib import Path
from fastattn.experiments import reproduce
from fastattn.experiments.report import write_report
out = Path(sys.argv[1])
failed = {}
for name in sys.argv[2:]:
    try:
        reproduce(name, out, quick=True, resume=False, share=False)
    except Exception as exc:
        failed[name] = f"{type(exc).__name__}: {exc}"
rows, _ = write_report(out)
(out / "failed.json").write_text(json.dumps(failed))
"""


def run_figures(root: Path, figures: Iterable[str], out: Path, timeout: float = 1200.0
                ) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Run the quick `figures` with the package under `root` in a fresh process into `out`;
    return its ledger rows and the figures that failed (name → error)."""
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(root), *filter(None, [os.environ.get("PYTHONPATH")])]))
    proc = subprocess.run([sys.executable, "-c", _RUNNER, str(out), *figures], env=env,
                          cwd=root, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"figures {list(figures)} did not run (exit {proc.returncode}): "
                           f"{proc.stderr.strip().splitlines()[-1:] or proc.stdout[-300:]}")
    rows = json.loads((out / "claims.json").read_text())
    return rows, json.loads((out / "failed.json").read_text())


def flipped(before: list[dict[str, Any]], after: list[dict[str, Any]],
            figures: Iterable[str]) -> list[dict[str, Any]]:
    """Claims of `figures` whose status differs between two ledgers: {key, paper, before, after,
    measured_before, measured_after}."""
    figures = set(figures)
    old = {(r["paper"], r["key"]): r for r in before}
    out = []
    for r in after:
        b = old.get((r["paper"], r["key"]))
        if r.get("figure") in figures and b is not None and b["status"] != r["status"]:
            out.append({"paper": r["paper"], "key": r["key"], "before": b["status"],
                        "after": r["status"], "measured_before": b["measured"],
                        "measured_after": r["measured"]})
    return out


def check(mutations: Iterable[Mutation], work: Path, report=None) -> list[dict[str, Any]]:
    """Run each mutation (and, once, the unplanted baseline of the figures they need) under
    `work`; return one result per mutation: {key, paper, description, figures, failed, flipped,
    wall_time}. `report(line)` is called as each finishes."""
    mutations = list(mutations)
    needed = sorted({f for m in mutations for f in m.figures})
    with tempfile.TemporaryDirectory(prefix="fastattn-mutations-") as tmp:
        clean = package_copy(Path(tmp) / "baseline")
        baseline, base_failed = run_figures(clean, needed, work / "baseline")
        if base_failed:
            raise RuntimeError(f"the unplanted figures failed: {base_failed}")
        results = []
        for m in mutations:
            start = time.perf_counter()
            root = package_copy(Path(tmp) / m.key)
            plant(m, root)
            rows, failed = run_figures(root, m.figures, work / m.key)
            result = {"key": m.key, "paper": m.paper, "kind": m.kind, "description": m.description,
                      "file": m.file, "figures": list(m.figures), "failed": failed,
                      "flipped": flipped(baseline, rows, m.figures),
                      "wall_time": time.perf_counter() - start}
            results.append(result)
            shutil.rmtree(root)
            if report is not None:
                report(format_result(result))
    return results


def format_result(result: dict[str, Any]) -> str:
    """One line: the planted bug → the claims it flipped."""
    flips = ", ".join(f"{f['paper']}/{f['key']} ({f['before']} → {f['after']})"
                      for f in result["flipped"]) or "NOTHING (a hole in the ledger)"
    failed = f"; figures failed: {sorted(result['failed'])}" if result["failed"] else ""
    return f"{result['key']}: {result['description']} ({result['kind']}) → {flips}{failed}"
