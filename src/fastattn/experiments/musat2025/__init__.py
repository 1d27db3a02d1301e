"""Figure recipes of Musat et al. 2025, induction-head emergence (spec §6.1, §7.7, §11). Nothing is
trained through `fastattn reproduce`'s run specs: the flows are the theory module's exact
integrations and Fig. 4's sampled SGD runs the torch model directly, so every recipe has no runs and
computes in `summarize` (which takes `quick`). Measured numbers and decisions: docs/musat2025.md.
"""

from fastattn.experiments.recipe import Figure

FIGURES = (
    Figure("musat2025-fig6", "Musat et al. 2025, Fig. 6: emergence times of the 3-parameter flow vs N, "
           "and discrete GD step counts", f"{__name__}.fig6:RECIPE"),
    Figure("musat2025-gram19", "Musat et al. 2025, §11.3: exact 19-parameter vs 3-parameter flows",
           f"{__name__}.gram19:RECIPE"),
    Figure("musat2025-uniform", "Musat et al. 2025, §11.4: emergence with a uniform query position",
           f"{__name__}.uniform:RECIPE"),
    Figure("musat2025-fig4", "Musat et al. 2025, Figs. 4/5: sampled SGD of the disentangled transformer "
           "(full and 3-parameter)", f"{__name__}.fig4:RECIPE"),
    Figure("musat2025-fig7", "Musat et al. 2025, Fig. 7: the small standard transformer's weights in the "
           "interpretable basis", f"{__name__}.fig7:RECIPE"),
    Figure("musat2025-fig8", "Musat et al. 2025, Fig. 8: progress measures of the standard transformer "
           "over training", f"{__name__}.fig8:RECIPE"),
    Figure("musat2025-fig20", "Musat et al. 2025, Fig. 20: training loss of the small standard transformer",
           f"{__name__}.fig20:RECIPE"),
)
