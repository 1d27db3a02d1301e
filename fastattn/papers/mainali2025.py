"""The manifest of Mainali & Teixeira 2025 (docs/mainali2025.md)."""

from fastattn.papers import Paper

PAPER = Paper(
    "mainali2025", "Mainali & Teixeira 2025: the linear transformer on Wishart task sets",
    cards=("fastattn.configs.mainali2025",),
    tasks=("fastattn.tasks.wishart_tasks", "fastattn.tasks.tokens"),
    models=("fastattn.models.linear_transformer", "fastattn.models.transformer"),
    objectives=("fastattn.population.wishart_tasks",),
    theory=("fastattn.theory.mainali2025",),
    figures="fastattn.experiments.mainali2025:FIGURES",
    hooks="fastattn.sweep.hooks.mainali2025:HOOKS",
    claims="fastattn.experiments.mainali2025.claims:CLAIMS",
    mutations="fastattn.experiments.mainali2025.mutations:MUTATIONS",
)
