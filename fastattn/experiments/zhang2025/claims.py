"""Quantitative claims of Zhang et al. (ICML 2025), measured by the figures (see claims.py).

Paper values: the paper's text and captions, and its closed forms (Eqs. 11, 19, 26, 51) evaluated at
the paper's settings as the spec's §6 table prints them (5 decimals). Measured numbers: docs/zhang2025.md.
"""

from functools import partial

from fastattn.experiments.claims import Claim

C = partial(Claim, "zhang2025")
_LEVEL = "printed to 5 decimals (rounding up to 2.4e-5 relative); flows resolve levels to < 1e-6"
_COUNT = "a count: exact"

CLAIMS = (
    C("fig1-L-star", "Fig. 1: ATTN_M (H = 8) converges to the global minimum L* = 0.13600 (Eq. 11; "
      "D = 4, N = 31, λ = (.4, .3, .2, .1))", 0.13600, "zhang2025-fig1", "summary.flow.final_loss",
      5e-5, _LEVEL),
    C("fig1-one-drop", "Fig. 1: ATTN_M's loss has a single abrupt drop", 1, "zhang2025-fig1",
      "summary.flow.n_drops", 0, _COUNT, relative=False),
    C("fig1-mlp-equivalence", "§3.1: ATTN_M and the 2-layer MLP on cubic features follow the same "
      "loss curve from a mapped init (max |ΔL| = 0)", 0.0, "zhang2025-fig1",
      "summary.flow.max_abs_loss_diff_attn_vs_mlp", 1e-12, "float64 round-off", relative=False),
    C("fig1-eq51", "Eq. 51: with white covariance the loss follows the closed-form time course "
      "exactly from the balanced aligned init", 0.0, "zhang2025-fig1",
      "summary.white.aligned_max_abs_error_eq51", 1e-6, "RK45 at rtol 1e-11; the spec's test bound",
      relative=False),
    *(C(f"fig9-gamma-eig{i}", f"Fig. 9: converged Γ* = (Λ + (Λ + I)/31)⁻¹ has eigenvalue {v}",
        v, "zhang2025-fig9", f"summary.gamma_eigenvalues_measured.{i}", 1e-4,
        "printed to 5 significant digits") for i, v in enumerate((2.2464, 2.9245, 4.1892, 7.3810))),
    C("fig9-rank-one", "Fig. 9: during the plateau all heads are parallel (W₁ rank 1: participation "
      "ratio 1)", 1.0, "zhang2025-fig9", "summary.participation_ratio_plateau", 0.02,
      "half-way through the plateau the heads are still aligning (min |cos| 0.84)", relative=False),
    C("fig3-level1", "Fig. 3 / Eq. 19: ATTN_S (R = 1) plateaus at L(M₁) = 0.64058", 0.64058,
      "zhang2025-fig3", "summary.levels.seed1.measured_levels.1", 5e-5, _LEVEL,
      note="seed 1: in seed 0 the m = 1 plateau is too short to resolve"),
    C("fig3-level2", "Fig. 3 / Eq. 19: ATTN_S plateaus at L(M₂) = 0.37737", 0.37737,
      "zhang2025-fig3", "summary.levels.seed0.measured_levels.2", 5e-5, _LEVEL),
    C("fig3-level3", "Fig. 3 / Eq. 19: ATTN_S plateaus at L(M₃) = 0.20980", 0.20980,
      "zhang2025-fig3", "summary.levels.seed0.measured_levels.3", 5e-5, _LEVEL),
    C("fig3-final", "Fig. 3: ATTN_S converges to L* = 0.13600", 0.13600, "zhang2025-fig3",
      "summary.levels.seed0.measured_levels.4", 5e-5, _LEVEL),
    C("fig4-R1-count", "Fig. 4: rank 1 visits all 8 plateaus m = 0..7 (D = 8)", 8,
      "zhang2025-fig4", "summary.runs.R1_seed0.n_conspicuous", 0, _COUNT, relative=False,
      note="with λ ∝ 1/d the small eigenvalues are close (1/7 vs 1/8) and adjacent drops merge: "
      "5, 6, 7 resolved plateaus in seeds 0-2 (docs/zhang2025.md)"),
    C("fig4-R2-count", "Fig. 4: rank 2 has conspicuous plateaus at m = 0, 2, 4, 6 (4)", 4,
      "zhang2025-fig4", "summary.runs.R2_seed0.n_conspicuous", 0, _COUNT, relative=False),
    C("fig4-R4-count", "Fig. 4: rank 4 has conspicuous plateaus at m = 0, 4 (2)", 2,
      "zhang2025-fig4", "summary.runs.R4_seed0.n_conspicuous", 0, _COUNT, relative=False),
    C("fig4-L-star", "Fig. 4: D = 8, λ ∝ 1/d, N = 31 converges to L(M₈) = 0.21007", 0.21007,
      "zhang2025-fig4", "summary.runs.R8_seed0.final_loss", 5e-5, _LEVEL),
    C("fig12-R3-count", "Fig. 12: rank 3 has ⌈8/3⌉ = 3 conspicuous plateaus", 3, "zhang2025-fig12",
      "summary.runs.R3_seed0.n_conspicuous", 0, _COUNT, relative=False),
    C("fig7-L-star", "Fig. 7: D = 8, N = 127, λ ∝ 1/d reaches L* = 0.06453", 0.06453,
      "zhang2025-fig7", "summary.merged_D8.final_loss", 1e-4, _LEVEL),
    C("fig8-inv-n", "Fig. 8 / Eq. 26: E(1/N) = H₃₁/31 = 0.129911 for N uniform on 1..31", 0.129911,
      "zhang2025-fig8", "summary.inv_n", 1e-5, "printed to 6 digits"),
    C("fig8-level2", "Fig. 8 / Eq. 26: next-token plateau at 0.53308", 0.53308, "zhang2025-fig8",
      "summary.separate.measured_levels.2", 5e-5, _LEVEL),
    C("fig8-merged-final", "Fig. 8 / Eq. 26: ATTN_M next-token loss converges to 0.37952", 0.37952,
      "zhang2025-fig8", "summary.merged_final", 5e-5, _LEVEL),
    C("fig13-R1-level3", "Fig. 13: repeated eigenvalues λ = (.35, .35, .15, .15), plateau at "
      "L(M₃) = 0.25720", 0.25720, "zhang2025-fig13", "summary.R1.seed0.levels.measured_levels.3",
      5e-5, _LEVEL),
    C("fig5-softmax-merged-one-drop", "Fig. 5: softmax ATTN_M shows one drop", 1, "zhang2025-fig5",
      "summary.softmax_merged.n_drops", 0, _COUNT, relative=False, quick=False),
    C("fig14-pure-icl", "Fig. 14: pure in-context learning (fixed fraction 0) reaches 0.13889 "
      "(Λ = I/4)", 0.13889, "zhang2025-fig14", "summary.runs.fixed0.0.final_train", 0.02,
      "the training loss of a finite data set (1000 sequences) sits below the population L*",
      quick=False),
)
