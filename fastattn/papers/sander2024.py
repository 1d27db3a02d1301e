"""The manifest of Sander et al. 2024 (docs/sander2024.md)."""

from fastattn.papers import Paper

PAPER = Paper(
    "sander2024", "Sander et al. 2024: transformers on autoregressive sequences",
    cards=("fastattn.configs.sander2024",),
    tasks=("fastattn.tasks.autoregressive",),
    models=("fastattn.models.autoregressive",),
    objectives=("fastattn.population.autoregressive", "fastattn.population.autoregressive_augmented"),
    theory=("fastattn.theory.sander2024",),
    figures="fastattn.experiments.sander2024:FIGURES",
    hooks="fastattn.sweep.hooks.sander2024:HOOKS",
    claims="fastattn.experiments.sander2024.claims:CLAIMS",
    mutations="fastattn.experiments.sander2024.mutations:MUTATIONS",
)
