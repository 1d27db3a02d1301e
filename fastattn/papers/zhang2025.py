"""The manifest of Zhang, Singh, Latham & Saxe (ICML 2025) (docs/zhang2025.md)."""

from fastattn.papers import Paper

PAPER = Paper(
    "zhang2025", "Zhang, Singh, Latham & Saxe (ICML 2025): linear attention on in-context regression",
    cards=("fastattn.configs.zhang2025",),
    tasks=("fastattn.tasks.linear_regression",),
    models=("fastattn.models.linear_attention", "fastattn.models.cubic_mlp",
            "fastattn.models.softmax_attention"),
    objectives=("fastattn.population.objectives",),
    theory=("fastattn.theory.zhang2025",),
    figures="fastattn.experiments.zhang2025:FIGURES",
    hooks="fastattn.sweep.hooks.zhang2025:HOOKS",
    claims="fastattn.experiments.zhang2025.claims:CLAIMS",
    mutations="fastattn.experiments.zhang2025.mutations:MUTATIONS",
)
