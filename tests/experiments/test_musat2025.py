"""The musat2025 figure recipes (quick settings) through `fastattn reproduce`: files written, numbers
consistent with the theory. The all-figures smoke test (test_zhang2025.py) also runs each of them."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from fastattn.analysis.pseudo_params import project
from fastattn.cli import main
from fastattn.experiments import registry
from fastattn.experiments.musat2025 import (
    FIGURES,
    NO_RUNS,
    fig6,
    fig7,
    fig8,
    fig20,
    flows,
    gram19,
    sweep,
    uniform,
    weights,
)
from fastattn.population import emergence
from helpers import quick_summary


def _summary(recipe, quick: bool = True):
    """`recipe`'s summary of its own runs, trained as `fastattn reproduce` trains them."""
    return recipe.summarize(registry.run_specs(recipe.runs(quick)), quick=quick)


def test_every_figure_lists_its_runs():
    """Each figure's flows and trainings are run specs (`reproduce` trains, records and resumes
    them; `summarize` only reads them), but for the figures on the documented no-runs list."""
    assert NO_RUNS <= {f.name for f in FIGURES}
    for figure in FIGURES:
        specs = figure.load().runs(True)
        if figure.name in NO_RUNS:
            assert specs == [], figure.name
            continue
        assert specs, f"{figure.name} lists no runs"
        assert len({s.label for s in specs}) == len(specs), figure.name


def test_flow_runs_give_the_restarted_event_integrations_times():
    """The emergence times read off one recorded flow run (every crossing an event, stopped past
    the drop) against `population.emergence` (terminal events, restarted integration): Def. 3's
    t_ICL, each T and the loss drop, for both exact models, both queries and both masks; the GD
    step counts exactly."""
    specs = [flows.flow_spec(f"{k}_{q}_{m}", k, 8, q, m) for k in ("three_param", "gram19")
             for q in ("last", "uniform") for m in ("strict", "inclusive")]
    specs.append(flows.gd_spec("gd", 16, fig6.LR))
    runs = registry.run_specs(specs)
    for run in runs[:-1]:
        g = run.spec.group
        ref_fn = emergence.emergence_times if g["model"] == "three_param" else \
            emergence.gram19_emergence_times
        for thresholds, loss in (((0.5, 0.5, 0.5), True), ((0.5, 0.1, 0.1), False)):
            ref = ref_fn(8, g["query"], thresholds, mask=g["mask"], loss_level=0.5 if loss else None)
            got = flows.emergence(run, thresholds, loss)
            assert got.keys() == ref.keys()
            for key, value in ref.items():
                assert got[key] == pytest.approx(value, rel=1e-6), (run.spec.label, key)
    gd = runs[-1]
    assert flows.emergence_steps(gd) == emergence.emergence_steps_gd(16, fig6.LR)
    assert flows.emergence_steps(gd, (0.5, 0.1, 0.1), loss=False) == \
        emergence.emergence_steps_gd(16, fig6.LR, (0.5, 0.1, 0.1), loss_level=None)


def test_a_flow_until_its_last_crossing_stops_there():
    """`until`: the run ends at α₃'s crossing of ½ (terminal event) with the times of the full
    record; a name that is no event is refused."""
    (run,) = registry.run_specs([flows.flow_spec("u", "three_param", 8, "uniform",
                                                 until="T_alpha>=0.5")])
    assert run.traj.status == "event"
    ref = emergence.emergence_times(8, "uniform")
    got = flows.emergence(run, loss=False)
    for key, value in ref.items():
        assert got[key] == pytest.approx(value, rel=1e-6), key
    assert run.traj.time[-1] * 0.5 == pytest.approx(ref["T_alpha"], rel=1e-6)
    with pytest.raises(ValueError, match="until='T_alpha>=2'"):
        flows.flow_spec("x", "three_param", 8, until="T_alpha>=2")


def test_a_flow_that_stops_before_a_crossing_is_an_error():
    (run,) = registry.run_specs([flows.flow_spec("short", "three_param", 4, t_max=5.0)])
    with pytest.raises(ValueError, match=r"T_beta did not reach 0\.5"):
        flows.emergence(run)


def test_uniform_quick_reads_its_runs():
    """§11.4: with the query uniform over the items the head emerges sooner than at q = N, and
    t_ICL approaches the fit N²/(0.622 ln N + 0.143) (19 % off at N = 4, 0.2 % at N = 128)."""
    s = _summary(uniform.RECIPE)
    assert s["N"] == [4 * 2**k for k in range(6)]
    errors = s["fit_rel_error"]
    assert errors[-1] < 0.005 and all(a > b for a, b in itertools.pairwise(errors))
    assert all(u < last for u, last in zip((r["t_icl"] for r in s["times"]), s["t_icl_last_query"],
                                           strict=True))


def test_fig6_quick_through_the_cli(tmp_path, capsys):
    assert main(["reproduce", "musat2025-fig6", "--quick", "--out", str(tmp_path)]) == 0
    assert "musat2025-fig6: 12 runs" in capsys.readouterr().out
    assert (tmp_path / "musat2025-fig6.png").stat().st_size > 0
    doc = json.loads((tmp_path / "musat2025-fig6.json").read_text())
    assert doc["quick"] and len(doc["runs"]) == 12           # 8 flows, 4 GD runs
    assert (tmp_path / doc["runs"]["flow_N16"]["record"]).exists()
    s = doc["summary"]
    assert s["N"] == [4 * 2**k for k in range(8)]      # --quick reaches summarize
    assert all(e < 0.01 for N, e in zip(s["N"], s["asymptote_rel_error"], strict=True) if N >= 64)
    assert all(1.3 < r < 1.5 for N, r in zip(s["N"], s["t_loss_over_t_icl"], strict=True) if N >= 16)
    steps = dict(zip(s["gd"]["N"], s["gd"]["steps"], strict=True))
    assert steps[16]["half"]["T_alpha"] == 1155 and steps[16]["fig6"]["T_beta"] == 171


def test_gram19_quick_and_the_index():
    assert {f.name for f in FIGURES} == {"musat2025-fig6", "musat2025-gram19", "musat2025-uniform",
                                         "musat2025-fig4", "musat2025-fig7", "musat2025-fig8",
                                         "musat2025-fig20", "musat2025-fig3", "musat2025-fig9-11",
                                         "musat2025-fig12-14", "musat2025-fig15-17", "musat2025-fig5",
                                         "musat2025-fig18", "musat2025-fig19", "musat2025-sweep"}
    assert all(registry.get(f.name) is not None for f in FIGURES)
    s = _summary(gram19.RECIPE)
    row = next(r for r in s["rows"] if (r["query"], r["mask"], r["N"]) == ("last", "strict", 8))
    assert row["gram19"]["t_loss"] == pytest.approx(100.0, abs=0.05)   # spec §11.3
    assert row["three_param"]["t_loss"] == pytest.approx(158.4, abs=0.05)


def test_listed(capsys):
    assert main(["reproduce", "--list"]) == 0
    listed = capsys.readouterr().out.split()
    assert {f.name for f in FIGURES} <= set(listed)


def test_standard_transformer_quick_figures():
    """Figs. 7, 8, 20 at their quick size (N_T = 16, K = 4, D = 32, 100 AdamW steps): the loss
    leaves ln N_T and falls below the labels baseline ln K (the induction head, not a guess among
    the labels); held-out and training losses agree (fresh batches); the read-out is dominated by
    the diagonal of its O2V2·T block and layer 2 by its (t, O1V1·t) diagonal (Fig. 7); γ̃₃ rises
    first (Fig. 8)."""
    s20 = _summary(fig20.RECIPE)
    base = s20["baselines"]
    assert abs(s20["initial_loss"] - base["uniform"]) < 0.3, s20["initial_loss"]
    assert s20["final_loss"] < base["labels"] and s20["final_test_loss"] < base["labels"], s20
    assert abs(s20["train_minus_test"]["mean"]) < 0.2, s20["train_minus_test"]
    s7 = _summary(fig7.RECIPE)
    st = s7["structure"]
    norms = st["readout"]["block_norms"]
    assert max(norms, key=norms.get) == "O2V2·T", norms
    assert st["readout"]["argmax_fraction"] >= 0.9 and st["layer2_qk"]["argmax_fraction"] >= 0.75, st
    for name in ("layer2_qk", "readout"):
        assert st[name]["expected_mean"] > 2 * st[name]["other_rms"], (name, st[name])
    s8 = _summary(fig8.RECIPE)
    first = s8["emergence"]["per_entry"]["0.25"]
    assert first["order"][0] == "gamma3", first
    assert first["gamma3"] < s8["emergence"]["loss"]["half"], s8["emergence"]
    assert all(s8["peak"][k] > 10 for k in ("alpha3", "beta2", "gamma3")), s8["peak"]
def test_fig3_quick_weights_have_the_induction_head_on_top():
    """Fig. 3 (spec §6): after SGD the three largest pseudo-parameters are α₃, β₂, γ₃; the JSON's θ
    and ρ are those of the stored weights."""
    s = _summary(weights.FIG3)
    (snap,) = s["snapshots"].values()
    assert {name for name, _ in snap["largest"][:3]} == {"alpha3", "beta2", "gamma3"}, snap["largest"]
    W = [snap["weights"][n] for n in ("W1", "W2", "W3")]
    np.testing.assert_allclose(project(*W), list(snap["theta"].values()), rtol=1e-12)
    assert all(0 < r < 1 for r in snap["rho"].values()), snap["rho"]   # a dominant, not exact, pattern


def test_sweep_sampled_gd_of_the_full_model_follows_the_gram19_flow():
    """The full 28D² model by GD on sampled orthonormal batches (N = 4, D = 8) reaches α₃, β₂, γ₃ ≥ ½
    within 10 % of the exact 19-parameter flow's times (spec §11.3: 3.5 / 19.3 / 25.1)."""
    (run,) = registry.run_specs([sweep.sampled_gd_spec(4, 0.1, 32)])
    r = sweep.sampled_gd_times(run, emergence.gram19_emergence_times(4, loss_level=0.5))
    for key, want in (("T_gamma", 3.5), ("T_beta", 19.3), ("T_alpha", 25.1)):
        assert r["gram19_flow"][key] == pytest.approx(want, abs=0.05)
        assert r[key] == pytest.approx(want, rel=0.1), (key, r[key])
    assert min(r["rho_final"]) > 0.8, r["rho_final"]


def test_loss_drop_over_emergence_limit():
    """spec §7.6: t(L ≤ ½)/t_ICL → √(2π) / (√(2π) erf(1/√2)) ≈ 1.46."""
    assert sweep.LOSS_DROP_OVER_T_ICL == pytest.approx(math.sqrt(2 * math.pi) / 1.711249, rel=1e-6)


@pytest.mark.parametrize("name, size", [("FIG5", (16, 8)), ("FIG18", (8, 16)), ("FIG19", (16, 4))])
def test_full_vs_three_param_quick_forms_show_the_claim(name, size, tmp_path):
    """Each --quick form of Figs. 5/18/19 runs a size of its own shape (D = 2N, N = 2D, D = 4N), and
    in it the full model crosses all three ½ thresholds and the loss ½ (Hyp. 1), with the
    3-parameter run's loss drop no later (Hyp. 2); the caption names the quick size."""
    from fastattn.experiments.musat2025 import dynamics

    recipe = getattr(dynamics, name)
    s = quick_summary(f"musat2025-{name.lower()}", tmp_path)      # the figure's quick reproduction
    assert (s["settings"]["D"], s["settings"]["N"]) == size
    assert f"--quick: D = {size[0]}, N = {size[1]}" in recipe.caption
    full, three = s["runs"]["full"]["first_step"], s["runs"]["three_param"]["first_step"]
    for key in ("alpha3>=0.5", "beta2>=0.5", "gamma3>=0.5", "loss<=0.5"):
        assert full[key] is not None, (name, key, full)
    assert three["loss<=0.5"] is not None and three["loss<=0.5"] <= full["loss<=0.5"], (full, three)


@pytest.mark.parametrize("recipe, snapshots", [
    (weights.FIG3, weights.FIG3_STEPS), (weights.FIG9_11, (100, 200, 400)),
    (weights.FIG12_14, (200, 400, 800)), (weights.FIG15_17, (250, 500, 1000))])
def test_weight_figure_captions_state_the_runs_they_describe(recipe, snapshots):
    """Figs. 3 and 9–17: each number of the caption is that of the figure's run at full size and
    at --quick (Fig. 4's preset `FIG4`, overridden by the figure), so neither can go stale."""
    from fastattn.configs.musat2025 import FIG4

    (full,), (quick,) = recipe.runs(False), recipe.runs(True)
    assert full.task.dim == FIG4.task["dim"] and full.train.batch_size == FIG4.train["batch_size"]
    steps = ["/".join(str(k) for k in shots) for shots in (snapshots, [k // 5 for k in snapshots])]
    assert max(snapshots) == full.train.steps and max(snapshots) // 5 == quick.train.steps
    assert recipe.caption.startswith(
        f"D = {full.task.dim}, N = {full.task.context}, B = {full.train.batch_size}, "
        f"λ = {full.train.lr:g}, steps {steps[0]} (--quick: D = {quick.task.dim}, "
        f"B = {quick.train.batch_size}, steps {steps[1]}; App. C: {full.task.data} data, "
        f"{full.task.query} query, {full.model.mask} mask, {full.task.reduction} loss over D)")


def test_theorem2_numbers_read_order_and_exponents():
    """`fig6.theorem2`: on times T_γ = N ln 2, T_β = ½N², T_α = 1.7N² the slopes between the two
    largest N are 1, 2, 2 and the order holds; with T_β and T_α swapped at one N it fails there."""
    from fastattn.experiments.musat2025 import fig6

    Ns = [128, 256, 512]
    times = [{"T_gamma": N * math.log(2), "T_beta": 0.5 * N**2, "T_alpha": 1.7 * N**2,
              "t_icl": 1.7 * N**2} for N in Ns]
    out = fig6.theorem2(Ns, times)
    assert out["order_fraction"] == 1.0
    assert out["exponent_largest_N"]["T_gamma"] == pytest.approx(1.0, abs=1e-12)
    assert out["exponent_largest_N"]["T_alpha"] == pytest.approx(2.0, abs=1e-12)
    times[0]["T_beta"], times[0]["T_alpha"] = times[0]["T_alpha"], times[0]["T_beta"]
    assert fig6.theorem2(Ns, times)["order_fraction"] == pytest.approx(2 / 3)


def test_across_seeds_reads_every_seed():
    """`dynamics._across_seeds`: the median and range over the seeds that measured a value, and the
    fraction of all seeds meeting the claim (a seed that never dropped counts as failing)."""
    from fastattn.experiments.musat2025 import dynamics

    rows = [{"loss_drop_ratio": r, "loss_drop_over_t_icl": 1.0, "order_gamma_beta_alpha": 1.0,
             "top3_is_induction_head": t} for r, t in ((0.9, 1.0), (1.1, 0.0), (None, 1.0))]
    out = dynamics._across_seeds(rows)
    assert out["loss_drop_ratio"]["median"] == pytest.approx(1.0)
    assert (out["loss_drop_ratio"]["min"], out["loss_drop_ratio"]["max"]) == (0.9, 1.1)
    assert out["loss_drop_ratio"]["fraction_meeting"] == pytest.approx(1 / 3)
    assert out["top3_is_induction_head"]["fraction_meeting"] == pytest.approx(2 / 3)
