"""Figure recipes of Zhang, Singh, Latham & Saxe (ICML 2025): simulation with the theory drawn over it.

One module per figure (or figure family: `rank` holds Figs. 4 and 12); `settings` holds the paper's
settings and `_common` the panels and summaries several figures share. `FIGURES` names every figure
without importing its module: `fastattn reproduce zhang2025-figN` imports only that figure's.
Exact population gradient flow is used wherever the figure shows the theory's setting; sampled
training where the figure is about sampled or softmax training (Figs. 1 right, 5, 14).
Measured numbers and the text-vs-code choices: docs/zhang2025.md.
"""

from fastattn.experiments.recipe import Figure
from fastattn.experiments.zhang2025.settings import fig3_setting

_TEXT_CODE = ("text", "code")

FIGURES = (
    Figure("zhang2025-fig1", "Zhang et al. 2025, Fig. 1: merged-KQ attention ≡ 2-layer MLP on cubic features",
           f"{__name__}.fig1:RECIPE", {"init": _TEXT_CODE}, theory="Eq. 51"),
    Figure("zhang2025-fig3", "Zhang et al. 2025, Fig. 3: separate-KQ linear attention, rank 1",
           f"{__name__}.fig3:RECIPE", {"heads": _TEXT_CODE}, theory="Eq. 19"),
    Figure("zhang2025-fig4", "Zhang et al. 2025, Fig. 4: rank-R separate KQ, R = 1, 2, 4, 8",
           f"{__name__}.rank:FIG4", {"spectrum": _TEXT_CODE}, theory="Eq. 19"),
    Figure("zhang2025-fig5", "Zhang et al. 2025, Fig. 5: softmax attention",
           f"{__name__}.fig5:RECIPE", {"optimizer": ("adam", "sgd")}, theory=None),
    Figure("zhang2025-fig6", "Zhang et al. 2025, Fig. 6: initialisation scale, merged and separate KQ",
           f"{__name__}.fig6:RECIPE", theory="Eq. 19"),
    Figure("zhang2025-fig7", "Zhang et al. 2025, Fig. 7: high-dimensional data", f"{__name__}.fig7:RECIPE",
           theory="Eq. 19"),
    Figure("zhang2025-fig8", "Zhang et al. 2025, Fig. 8: next-token prediction loss",
           f"{__name__}.fig8:RECIPE", theory="Eq. 26"),
    Figure("zhang2025-fig9", "Zhang et al. 2025, Fig. 9: merged-KQ weights (the Fig. 1 run)",
           f"{__name__}.fig9:RECIPE", {"init": _TEXT_CODE}, theory="Eq. 54"),
    Figure("zhang2025-fig11", "Zhang et al. 2025, Fig. 11: value weights of rank-R separate KQ",
           f"{__name__}.fig11:RECIPE", theory="Eq. 19"),
    Figure("zhang2025-fig12", "Zhang et al. 2025, Fig. 12: rank-R separate KQ, R = 3, 5, 6, 7",
           f"{__name__}.rank:FIG12", {"spectrum": _TEXT_CODE}, theory="Eq. 19"),
    Figure("zhang2025-fig13", "Zhang et al. 2025, Fig. 13: repeated eigenvalues, R = 1, 2, 3, 4",
           f"{__name__}.fig13:RECIPE", theory="Eq. 19"),
    Figure("zhang2025-fig14", "Zhang et al. 2025, Fig. 14: in-context vs in-weight learning",
           f"{__name__}.fig14:RECIPE", theory="L*"),
)

__all__ = ["FIGURES", "fig3_setting"]
