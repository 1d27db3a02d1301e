"""Figure recipes of Mainali & Teixeira 2025 ("Exact learning dynamics of in-context learning in
linear transformers"). The paper states no numeric settings; every figure uses the canonical
configuration C0 of spec §9.0 (module `c0`). Figs. 1–3 share C0's two runs (task-centric SGD and the
exact population flow); Fig. 4 computes the measures of spec §8 on the exact flow. Measured numbers:
docs/mainali2025.md.
"""

from fastattn.experiments.recipe import Figure

FIGURES = (
    Figure("mainali2025-fig1", "Mainali & Teixeira 2025, Fig. 1: learned Uᵀp2q1U vs [s^∞(S)]⁻¹ (C0)",
           f"{__name__}.c0:FIG1", theory="paper 1/s^∞"),
    Figure("mainali2025-fig2", "Mainali & Teixeira 2025, Fig. 2: a_α(t), ‖p̄2‖², ‖q̄1‖² and C (C0)",
           f"{__name__}.c0:FIG2", theory="paper Eq. 13"),
    Figure("mainali2025-fig3", "Mainali & Teixeira 2025, Fig. 3A: loss, SGD vs exact flow vs Eq. 14 (C0)",
           f"{__name__}.c0:FIG3", theory="paper Eq. 14"),
    Figure("mainali2025-fig4", "Mainali & Teixeira 2025, Fig. 4: measures of timescale separation (C0)",
           f"{__name__}.fig4:RECIPE", theory="paper Eqs. 13–14"),
    Figure("mainali2025-fig5", "Mainali & Teixeira 2025, Fig. 5: subspace stabilisation in "
           "attention-only transformers (1–4 layers)", f"{__name__}.attn_only:FIG5", theory=None),
    Figure("mainali2025-fig6", "Mainali & Teixeira 2025, Fig. 6: marginalised effective rank of OV "
           "and QK, attention-only transformers", f"{__name__}.attn_only:FIG6", theory=None),
    Figure("mainali2025-fig7", "Mainali & Teixeira 2025, Fig. 7: grokking transformer, loss and "
           "OV measures", f"{__name__}.grokking:RECIPE", theory=None),
)

__all__ = ["FIGURES"]
