"""The manifest of He et al. 2025 (docs/he2025.md)."""

from fastattn.papers import Paper

PAPER = Paper(
    "he2025", "He et al. 2025: multi-head softmax attention on in-context regression",
    cards=("fastattn.configs.he2025",),
    tasks=("fastattn.tasks.linear_regression", "fastattn.tasks.multitask_regression"),
    models=("fastattn.models.multihead_softmax",),
    objectives=(),
    theory=("fastattn.theory.he2025",),
    figures="fastattn.experiments.he2025:FIGURES",
    hooks="fastattn.sweep.hooks.he2025:HOOKS",
    claims="fastattn.experiments.he2025.claims:CLAIMS",
    mutations="fastattn.experiments.he2025.mutations:MUTATIONS",
)
