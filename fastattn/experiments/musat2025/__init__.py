"""Figure recipes of Musat et al. 2025, induction-head emergence (spec §6.1, §7.7, §11). Every figure
lists what it trains as run specs, which `fastattn reproduce` trains, records and resumes: the exact
3- and 19-parameter flows and GD with their emergence crossings as events (`flows`), the sampled SGD
of the disentangled transformer (`sgd`) and the standard transformer's AdamW (`standard`);
`summarize` reads the finished runs beside the closed forms. Measured numbers and decisions:
docs/musat2025.md.
"""

from fastattn.experiments.recipe import Figure

#: figures that train nothing (closed forms or Monte Carlo only) and so list no runs: none
NO_RUNS: frozenset[str] = frozenset()

FIGURES = (
    Figure("musat2025-fig6", "Musat et al. 2025, Fig. 6: emergence times of the 3-parameter flow vs N, "
           "and discrete GD step counts", f"{__name__}.fig6:RECIPE", theory="N²"),
    Figure("musat2025-gram19", "Musat et al. 2025, §11.3: exact 19-parameter vs 3-parameter flows",
           f"{__name__}.gram19:RECIPE", theory=None),
    Figure("musat2025-uniform", "Musat et al. 2025, §11.4: emergence with a uniform query position",
           f"{__name__}.uniform:RECIPE", theory="N²/"),
    Figure("musat2025-fig4", "Musat et al. 2025, Figs. 4/5: sampled SGD of the disentangled transformer "
           "(full and 3-parameter)", f"{__name__}.fig4:RECIPE", theory=None),
    Figure("musat2025-fig7", "Musat et al. 2025, Fig. 7: the small standard transformer's weights in the "
           "interpretable basis", f"{__name__}.fig7:RECIPE", theory=None),
    Figure("musat2025-fig8", "Musat et al. 2025, Fig. 8: progress measures of the standard transformer "
           "over training", f"{__name__}.fig8:RECIPE", theory=None),
    Figure("musat2025-fig20", "Musat et al. 2025, Fig. 20: training loss of the small standard transformer",
           f"{__name__}.fig20:RECIPE", theory=None),
    Figure("musat2025-fig3", "Musat et al. 2025, Fig. 3: weights after SGD have Theorem 1's structure",
           f"{__name__}.weights:FIG3", theory=None),
    Figure("musat2025-fig9-11", "Musat et al. 2025, Figs. 9-11: weights after 100/200/400 SGD steps, "
           "D=16, N=4", f"{__name__}.weights:FIG9_11", theory=None),
    Figure("musat2025-fig12-14", "Musat et al. 2025, Figs. 12-14: weights after 200/400/800 SGD steps, "
           "D=16, N=8", f"{__name__}.weights:FIG12_14", theory=None),
    Figure("musat2025-fig15-17", "Musat et al. 2025, Figs. 15-17: weights after 250/500/1000 SGD steps, "
           "D=16, N=16", f"{__name__}.weights:FIG15_17", theory=None),
    Figure("musat2025-fig5", "Musat et al. 2025, Figs. 4/5 at App. D's D=32, N=16: SGD of the full model vs "
           "training only alpha3, beta2, gamma3 (--quick: D=16, N=8)", f"{__name__}.dynamics:FIG5",
           theory=None),
    Figure("musat2025-fig18", "Musat et al. 2025, Fig. 18: pseudo-parameters and loss, full vs 3-parameter, "
           "D=16, N=32 (--quick: D=8, N=16)", f"{__name__}.dynamics:FIG18", theory=None),
    Figure("musat2025-fig19", "Musat et al. 2025, Fig. 19: pseudo-parameters and loss, full vs 3-parameter, "
           "D=32, N=8 (--quick: D=16, N=4)", f"{__name__}.dynamics:FIG19", theory=None),
    Figure("musat2025-sweep", "Musat et al. 2025, emergence time vs N (4 to 4096): 3-parameter, 19-parameter "
           "and full model; t_ICL vs the loss drop", f"{__name__}.sweep:RECIPE", theory="1/erf"),
)
