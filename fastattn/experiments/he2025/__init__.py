"""Figure recipes of He, Pan, Chen & Yang (ICML 2025): multi-head softmax attention on in-context
linear regression, simulation with the theory drawn over it (spec ../shared/specs/he2025.md §6).

`settings` holds the paper's setting; one module per experiment. Measured numbers and the
text-vs-code choices: docs/he2025.md.
"""

from fastattn.experiments.recipe import Figure

FIGURES = (
    Figure("he2025-e1", "He et al. 2025, E1: KQ/OV patterns of trained multi-head softmax attention",
           f"{__name__}.e1:RECIPE", theory=None),
    Figure("he2025-e4", "He et al. 2025, E4: error vs context length for H heads (trained at L = 40)",
           f"{__name__}.e4:RECIPE", theory="dGD(η*) closed form"),
    Figure("he2025-e5", "He et al. 2025, E5: estimators vs context length (Monte Carlo)",
           f"{__name__}.e5:RECIPE", theory="closed form"),
    Figure("he2025-e2", "He et al. 2025, E2: learned (ω, μ) of multi-head models and the manifold S_γ",
           f"{__name__}.e2:RECIPE", theory="S_γ"),
    Figure("he2025-e3", "He et al. 2025, E3: training dynamics of the KQ/OV circuits",
           f"{__name__}.e3:RECIPE", theory="η* (Theorem 1)"),
    Figure("he2025-e10", "He et al. 2025, E10: non-isotropic covariates, the learned preconditioner",
           f"{__name__}.e10:RECIPE", theory="closed form"),
    Figure("he2025-e11", "He et al. 2025, E11: multi-task regression, per-head circuits and risk vs H",
           f"{__name__}.e11:RECIPE", theory="dGD"),
    Figure("he2025-e6", "He et al. 2025, E6: debiased GD vs the Bayes risk and Theorem 1's bound",
           f"{__name__}.e6:RECIPE", theory="Theorem 1 bound"),
    Figure("he2025-e7", "He et al. 2025, E7: approximate vs true loss landscape of the two-head model",
           f"{__name__}.e7:RECIPE", theory=None),
    Figure("he2025-e8", "He et al. 2025, E8: two-stage gradient flow on the approximate loss",
           f"{__name__}.e8:RECIPE", theory="μ_γ(γ̂)"),
    Figure("he2025-e9", "He et al. 2025, E9: concentration of the softmax weights' norm",
           f"{__name__}.e9:RECIPE", theory=None),
    Figure("he2025-e14", "He et al. 2025, E14: small-γ equivalence of a softmax pair and debiased GD",
           f"{__name__}.e14:RECIPE", theory="closed form"),
    Figure("he2025-e12", "He et al. 2025, E12: normalised activations beyond softmax (two heads)",
           f"{__name__}.e12:RECIPE", theory="closed form"),
    Figure("he2025-e13", "He et al. 2025, E13: length generalisation, softmax vs linear attention",
           f"{__name__}.e13:RECIPE", theory="closed form"),
)
