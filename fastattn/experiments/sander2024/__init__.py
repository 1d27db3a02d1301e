"""Figure recipes of Sander, Giryes, Suzuki, Blondel & Peyré (ICML 2024), in-context autoregressive
learning. Exact population training (GD through the C++ objective) wherever the figure shows the
theory's setting (Figs. 3, 6); Fig. 2 is the trigonometric identity itself. Measured numbers and the
text-vs-code choices: docs/sander2024.md.
"""

from fastattn.experiments.recipe import Figure

FIGURES = (
    Figure("sander2024-fig2", "Sander et al. 2024, Fig. 2: the identity 2cos θ R_θ − I = R_2θ",
           f"{__name__}.fig2:RECIPE", theory=None),
    Figure("sander2024-fig3", "Sander et al. 2024, Fig. 3: DIAG trained on the exact loss (unitary "
           "H = 10; orthogonal H = 8 and the H = 10 control)", f"{__name__}.fig3:RECIPE", theory=None),
    Figure("sander2024-fig6", "Sander et al. 2024, Fig. 6: early-stopped PE-only attention, "
           "μ = 50..300", f"{__name__}.fig6:RECIPE", theory="closed form"),
    Figure("sander2024-fig7", "Sander et al. 2024, Fig. 7: non-augmented model, test MSE vs heads "
           "with and without duplication", f"{__name__}.fig7:RECIPE", theory=None),
    Figure("sander2024-fig8", "Sander et al. 2024, Fig. 8: head orthogonality Σ_h B_hᵀB_h at "
           "initialisation and after training", f"{__name__}.fig8:RECIPE", theory=None),
    Figure("sander2024-fig4", "Sander et al. 2024, Fig. 4: AR(1) fits of text sequences, in order "
           "vs shuffled", f"{__name__}.fig4:RECIPE", theory=None),
    Figure("sander2024-fig5", "Sander et al. 2024, Fig. 5: AUG-L (L = 1..6) vs L steps of inner-loss "
           "GD", f"{__name__}.fig5:RECIPE", {"size": ("cpu", "paper")}, theory="inner GD"),
    Figure("sander2024-fig9", "Sander et al. 2024, Fig. 9: {softmax, linear} × {MLP, no MLP} on "
           "commuting unitary contexts", f"{__name__}.fig9:RECIPE", theory=None),
    Figure("sander2024-fig10", "Sander et al. 2024, Fig. 10: softmax + MLP transformer (L = 1..6) vs "
           "inner-loss GD", f"{__name__}.fig10:RECIPE", {"size": ("cpu", "paper")}, theory="inner GD"),
    Figure("sander2024-props", "Sander et al. 2024, Props. 2, 4, 5: AUG-1's exact flow, Prop. 4's "
           "example by Monte Carlo, the scalar flow", f"{__name__}.props:RECIPE", theory=None),
    Figure("sander2024-fig1", "Sander et al. 2024, Fig. 1: AR(1) orbits of two orthogonal context "
           "matrices in R³", f"{__name__}.fig1:RECIPE", theory=None),
)
