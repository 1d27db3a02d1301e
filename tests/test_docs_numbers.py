"""The numbers the docs quote from quick forms, recomputed by the commands beside them: each case
renders the recomputed values in the docs' own words and checks that sentence is in the docs
(whitespace-normalised, so a quote may wrap). Only quick forms, seconds each; full-size numbers are
labelled in the docs with their command and the run they came from."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from helpers import quick_summary

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _text(name: str) -> str:
    return re.sub(r"\s+", " ", (DOCS / name).read_text())


def _num(x: float, fmt: str = ".3f") -> str:
    return format(x, fmt).replace("-", "−")


def _musat_gd_lr100() -> str:
    from fastattn.population.emergence import emergence_steps_gd

    s = emergence_steps_gd(64, 100.0, (0.5, 0.1, 0.1))
    return f"gives {s['T_gamma']}/{s['T_beta']}/{s['T_alpha']} for γ/β.1/α.1"


def _quoted_range(doc: str, prefix: str) -> tuple[float, float]:
    """(lo, hi) of the range "lo–hi |" that follows `prefix` in the docs (a row's first cells)."""
    found = re.search(re.escape(prefix) + r"([0-9.]+)–([0-9.]+) \|", _text(doc))
    assert found, f"no row with a range beginning {prefix!r} in {doc}"
    return float(found[1]), float(found[2])


def _musat_quick(fig: str, fig_label: str, tmp_path: Path) -> str:
    """The quick rows of figure `fig` (musat2025-fig5, -fig18, -fig19). The full model's loss
    (sampled float32 SGD of 28D² weights, which amplifies last-place differences between CPUs) is
    checked within the range the docs quote over seeds and CPU kernel sets; the first steps and the
    3-parameter run's loss are checked as quoted."""
    s = quick_summary(fig, tmp_path)
    order = ("gamma3>=0.1", "beta2>=0.1", "alpha3>=0.1", "loss<=0.5", "gamma3>=0.5", "beta2>=0.5",
             "alpha3>=0.5", "loss<=0.2")
    st = s["settings"]
    rows = []
    for run, label in (("full", "full"), ("three_param", "α₃, β₂, γ₃")):
        first = s["runs"][run]["first_step"]
        steps = " / ".join("–" if first[k] is None else str(first[k]) for k in order)
        size = f"{st['D']}, {st['N']}, {st['batch']}, {st['steps']}"
        row = f"| {fig_label} | {size} | {label} | {steps} | "
        loss = s["runs"][run]["mean_loss_last_tenth"]
        if run == "full":
            lo, hi = _quoted_range("musat2025.md", row)
            assert lo <= loss <= hi, f"Fig. {fig_label} full model: loss {loss:.3f} outside {lo}–{hi}"
            rows.append(f"{row}{lo:.2f}–{hi:.2f} |")
        else:
            rows.append(f"{row}{loss:.3f} |")
    return " ".join(rows)


def _sander_fig9_quick(tmp_path: Path) -> str:
    s = quick_summary("sander2024-fig9", tmp_path)

    def q(name):
        return f"{s[name]['final_train_loss_tail_mean']:.1e}".replace("e-0", "e-")

    return (f"| linear attention | 9.6e-6 (quick: {q('no SM, no MLP')}) | 4.3e-4 "
            f"(quick: {q('no SM, MLP')}) | "
            f"| softmax attention | **2.32** (quick: {s['SM, no MLP']['final_train_loss_tail_mean']:.2f}), a "
            f"plateau from step ≈ 300 | **0.83** (quick: {s['SM, MLP']['final_train_loss_tail_mean']:.2f}) |")


def _he_e2_quick(tmp_path: Path) -> str:
    m = quick_summary("he2025-e2", tmp_path)["models"]["H2_seed0"]
    (w0, w1), (m0, m1) = m["omega"], m["mu"]
    return (f"heads (ω, μ) = ({_num(w0)}, {_num(m0)}) and ({_num(w1)}, {_num(m1)}): sign matching, one "
            f"positive and one negative head, zero-sum to {100 * m['zero_sum']:.1f}%, η_eff = "
            f"{m['eta_eff']:.3f} (η* = 0.879), (γ̂, μ₊) = ({m['gamma']:.3f}, {m['mu_plus']:.3f}) on the "
            f"μ_γ curve (μ_γ({m['gamma']:.3f}) = {m['mu_gamma_at_gamma']:.3f})")


def _he_e6_quick(tmp_path: Path) -> str:
    s = quick_summary("he2025-e6", tmp_path)
    r = next(r for r in s["rows"] if r["xi"] == 0.2)
    return (f"quick ({s['n_prompts']:,} prompts".replace(",", " ") + "; `fastattn reproduce he2025-e6 "
            f"--quick --out DIR`): dGD {r['dgd_mc']:.3f} ± {r['dgd_se']:.3f} (closed {r['dgd_closed']:.3f}, "
            f"limit {r['dgd_limit']:.4f}), ridge {r['ridge_mc']:.3f} ± {r['ridge_se']:.3f} (limit "
            f"{r['bayes_limit']:.4f}), ratio {r['ratio_mc']:.3f}")


CASES = {
    "musat2025.md: emergence_steps_gd at lr 100": ("musat2025.md", _musat_gd_lr100),
    "musat2025.md: Fig. 19 --quick": ("musat2025.md", lambda out: _musat_quick("musat2025-fig19", "19",
                                                                                out)),
    "musat2025.md: Figs. 4/5 --quick": ("musat2025.md", lambda out: _musat_quick("musat2025-fig5", "4/5",
                                                                                  out)),
    "musat2025.md: Fig. 18 --quick": ("musat2025.md", lambda out: _musat_quick("musat2025-fig18", "18",
                                                                                out)),
    "sander2024.md: Fig. 9 --quick": ("sander2024.md", _sander_fig9_quick),
    "he2025.md: E2 --quick": ("he2025.md", _he_e2_quick),
    "he2025.md: E6 --quick": ("he2025.md", _he_e6_quick),
}


# the cases that train for tens of seconds (CI runs them; `-m "not slow"` leaves them out)
SLOW = ("musat2025.md: Fig. 18 --quick", "musat2025.md: Figs. 4/5 --quick", "sander2024.md: Fig. 9 --quick",
        "he2025.md: E6 --quick")


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.slow) if c in SLOW else c
                                  for c in sorted(CASES)])
def test_docs_quote_what_the_quick_command_gives(case, tmp_path):
    doc, render = CASES[case]
    text = render(tmp_path) if render.__code__.co_argcount else render()
    assert re.sub(r"\s+", " ", text) in _text(doc), text
