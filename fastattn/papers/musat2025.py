"""The manifest of Musat et al. 2025 (docs/musat2025.md)."""

from fastattn.papers import Paper

PAPER = Paper(
    "musat2025", "Musat et al. 2025: induction-head emergence",
    cards=("fastattn.configs.musat2025",),
    tasks=("fastattn.tasks.induction", "fastattn.tasks.induction_tokens"),
    models=("fastattn.models.disentangled", "fastattn.models.standard_transformer"),
    objectives=("fastattn.population.induction", "fastattn.population.induction_full"),
    theory=("fastattn.theory.musat2025",),
    figures="fastattn.experiments.musat2025:FIGURES",
    hooks="fastattn.sweep.hooks.musat2025:HOOKS",
    claims="fastattn.experiments.musat2025.claims:CLAIMS",
    mutations="fastattn.experiments.musat2025.mutations:MUTATIONS",
)
