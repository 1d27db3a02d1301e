"""The standard attention-only transformer runs of Musat et al. 2025 §4 / App. E (spec §9.3), shared
by Figs. 7, 8 and 20: the two configurations at CPU size, each figure's run (`spec`: AdamW through
`fastattn.train`, trained by `fastattn reproduce`), and the progress measures over the recorded
parameter snapshots.

The paper's widths (D = 2048 and 4096) and batches (512 and 4096) are GPU sizes; here D, the batch
and (large configuration) the learning rate and step count are scaled down and recorded in every
figure's JSON ("settings"). Vocabulary, block, pairs, optimiser, and the small configuration's
learning rate, weight decay and 300 steps are the paper's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from fastattn.analysis.induction_circuit import progress_measures
from fastattn.configs import Resolved, resolve
from fastattn.experiments.recipe import RunSpec, preset_run
from fastattn.models.standard_transformer import StandardTransformer
from fastattn.tasks import InductionTokens
from fastattn.training import Trajectory

MEASURES = ("gamma3", "beta2", "alpha3")
#: held-out sequences the loss is also recorded on at every step
TEST_SIZE = 256
LABELS = {"alpha3": "α̃₃ (layer 1: previous position)", "beta2": "β̃₂ (layer 2: token match)",
          "gamma3": "γ̃₃ (read-out)"}


#: the pair of App. E, whose preset (`fastattn.configs.musat2025.APP_E`: N_T = N_P = 32, K = 8,
#: D = 64, AdamW lr 1e-3, weight decay 0.01, batch 512, 300 steps) is the small configuration
PAIR = ("induction_tokens", "standard_transformer")


@dataclass(frozen=True)
class Setting:
    """One configuration: the pair's preset overridden by `given` ({"task": {...}, "model": {...},
    "train": {...}}), `snapshots` parameter snapshots kept (log-spaced, as the trainer records
    them), and what App. E used (`paper`). Its sizes and trainer values read off the resolution."""

    name: str
    given: Mapping[str, Mapping[str, Any]]
    snapshots: int
    paper: str

    @cached_property
    def resolved(self) -> Resolved:
        return resolve(*PAIR, self.given)

    @property
    def vocab(self) -> int:
        """N_T = N_P."""
        return self.resolved.task["vocab"]

    @property
    def pairs(self) -> int:
        return self.resolved.task["pairs"]

    @property
    def d_model(self) -> int:
        return self.resolved.model["d_model"]

    @property
    def batch(self) -> int:
        return self.resolved.train["batch_size"]

    @property
    def steps(self) -> int:
        return self.resolved.train["steps"]

    @property
    def lr(self) -> float:
        return self.resolved.train["lr"]

    @property
    def weight_decay(self) -> float:
        return self.resolved.train["weight_decay"]

    def task(self, seed: int = 0) -> InductionTokens:
        return spec(self, seed).task

    def model(self, seed: int = 0) -> StandardTransformer:
        return StandardTransformer(spec(self, seed).model)


#: the quick configurations' changes: N_T = N_P = 16, K = 4, D = 32, batch 128, 100 steps, lr 5e-3
_QUICK = {"task": {"vocab": 16, "block": 16, "pairs": 4}, "model": {"d_model": 32},
          "train": {"batch_size": 128, "steps": 100, "lr": 5e-3}}
_LARGE = {"task": {"vocab": 64, "block": 64, "pairs": 16}, "train": {"weight_decay": 0.0}}
#: (configuration, quick) → Setting. "paper" says what App. E used.
SETTINGS = {
    ("small", False): Setting("small", {}, 150, "N_T = N_P = 32, K = 8, D = 2048, B = 512, 300 "
                              "steps, AdamW lr 1e-3 wd 0.01"),
    ("small", True): Setting("small", _QUICK, 40, "quick: N_T = N_P = 16, K = 4, D = 32"),
    ("large", False): Setting("large", {"task": _LARGE["task"],
                                        "train": _LARGE["train"] | {"batch_size": 256, "steps": 1000}},
                              200, "N_T = N_P = 64, K = 16, D = 4096, B = 4096, AdamW lr 1e-4 no wd, "
                              "steps not given"),
    ("large", True): Setting("large", _QUICK | {"train": _QUICK["train"] | _LARGE["train"]}, 40,
                             "quick: N_T = N_P = 16, K = 4, D = 32"),
}


def setting(name: str, quick: bool) -> Setting:
    return SETTINGS[name, quick]


def spec(s: Setting, seed: int = 0) -> RunSpec:
    """The run of `s` from init seed `seed` (data seed `seed`, test seed `seed + 1`): AdamW, the loss
    at every step, the held-out loss on TEST_SIZE sequences, `s.snapshots` log-spaced snapshots."""
    seeded = ({"task": {"data_seed": seed}, "model": {"init_seed": seed},
               "train": {"eval_seed": seed + 1}} if seed else {})
    given = {t: {**s.given.get(t, {}), **seeded.get(t, {})} for t in ("task", "model", "train")}
    given["train"] |= {"n_records": s.steps + 1, "n_snapshots": s.snapshots, "test_size": TEST_SIZE}
    return preset_run(s.name, *PAIR, group={"setting": s.name, "seed": seed}, **given)


def measures_over_training(s: Setting, traj: Trajectory) -> dict[str, np.ndarray]:
    """α̃₃, β̃₂, γ̃₃ at every parameter snapshot: {"step": `[S]`, name: `[S]`}."""
    model = s.model()
    out: dict[str, list] = {"step": []} | {k: [] for k in MEASURES}
    for t, flat in zip(traj.snapshot_time, traj.params, strict=True):
        m = progress_measures(model.load_flat(flat).circuit_weights())
        out["step"].append(round(t / (2 * s.lr)))
        for k in MEASURES:
            out[k].append(m[k])
    return {k: np.asarray(v) for k, v in out.items()}


def first_step(steps: np.ndarray, values: np.ndarray, level: float, below: bool = False) -> int | None:
    """The first step at which `values` reaches `level` (from below; `below`: falls to it)."""
    hit = np.nonzero(values <= level if below else values >= level)[0]
    return int(steps[hit[0]]) if hit.size else None


def per_entry(s: Setting, measures: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The measures per summed entry: α̃₃/(N_P − 1), β̃₂/N_T, γ̃₃/N_T, the mean score (logit) that
    each matched pair of basis vectors gets; 1 is a score that moves a softmax by a factor e."""
    n = {"alpha3": s.vocab - 1, "beta2": s.vocab, "gamma3": s.vocab}
    return {"step": measures["step"]} | {k: measures[k] / n[k] for k in MEASURES}


def _order(row: dict[str, int | None]) -> list[str]:
    return sorted(MEASURES, key=lambda k: (row[k] is None, row[k] or 0))


def emergence(s: Setting, traj: Trajectory, measures: dict[str, np.ndarray],
              levels: tuple[float, ...] = (0.25, 0.5, 1.0),
              fractions: tuple[float, ...] = (0.1, 0.5)) -> dict[str, Any]:
    """When the progress measures emerge and the loss falls, in steps (the paper defines no
    threshold for Fig. 8; spec §9.5 names only the order γ̃₃, β̃₂, α̃₃):

    - "per_entry": the first step at which each measure per summed entry (`per_entry`) reaches each
      of `levels`, and the order of the three;
    - "rise": the first step at which each has covered each of `fractions` of its largest rise above
      its initial value (β̃₂ overshoots, so not of its final value), and the order;
    - "loss": the first step at which the loss is 0.1 below its initial value ("leaves_plateau"),
      below ln K ("below_labels": better than knowing the pairs but not the query), and halfway
      between its initial and final values ("half").
    """
    loss = np.asarray(traj.loss, dtype=float)
    base = s.task().baselines()
    entries = per_entry(s, measures)
    out: dict[str, Any] = {"per_entry": {}, "rise": {}}
    for level in levels:
        row = {k: first_step(entries["step"], entries[k], level) for k in MEASURES}
        out["per_entry"][str(level)] = row | {"order": _order(row)}
    for f in fractions:
        row = {k: first_step(measures["step"], v, v[0] + f * (np.max(v) - v[0]))
               for k, v in measures.items() if k in MEASURES}
        out["rise"][str(f)] = row | {"order": _order(row)}
    out["loss"] = {"leaves_plateau": first_step(traj.step, loss, loss[0] - 0.1, below=True),
                   "below_labels": first_step(traj.step, loss, base["labels"], below=True),
                   "half": first_step(traj.step, loss, (loss[0] + loss[-1]) / 2, below=True)}
    return out


#: how the plots name the baselines of `InductionTokens.baselines` (the context-but-query level is
#: within 0.07 of the context level and not drawn)
BASELINE_NAMES = {"uniform": "ln N_T", "context": "ln 2K", "labels": "ln K"}


def draw_baselines(ax, baselines: dict[str, float], x_end: float) -> None:
    """Dash-dotted lines at the baselines' cross-entropies, named at the right end."""
    for name, label in BASELINE_NAMES.items():
        ax.axhline(baselines[name], color="0.6", lw=0.8, ls="-.")
        ax.annotate(label, (x_end, baselines[name]), fontsize=7, ha="right", va="bottom")


def settings_json(s: Setting) -> dict[str, Any]:
    return {"name": s.name, "vocab": s.vocab, "pairs": s.pairs, "d_model": s.d_model,
            "batch": s.batch, "steps": s.steps, "lr": s.lr, "weight_decay": s.weight_decay,
            "snapshots": s.snapshots, "paper": s.paper} | {"length": 2 * s.pairs + 1, "test_size": TEST_SIZE,
                                    "parameters": s.model().flat_size()}
