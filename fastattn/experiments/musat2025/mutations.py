"""The planted bugs that Musat et al. 2025's claims must catch (`fastattn report WORK --mutations`),
listed by the paper's manifest (`fastattn.papers`); `Mutation` and the check:
fastattn/experiments/mutations.py."""

from fastattn.experiments.mutations import Mutation

MUTATIONS = (
    Mutation("musat-paper-time", "time unit", "fastattn.theory.musat2025",
             "PAPER_TIME_PER_CORE_TIME = 0.5", "PAPER_TIME_PER_CORE_TIME = 1.0",
             ("musat2025-gram19",), "the paper's time read as the integrators' time", ci=True),
    Mutation("musat-rotation-dropped", "sampler", "fastattn.tasks.induction",
             "pm = torch.cat([p[..., h:], p[..., :h]], dim=-1)", "pm = p",
             ("musat2025-fig3", "musat2025-fig5"), "the sampler gives the labels p_i, not p_i M "
             "(the rotation M dropped)"),
    Mutation("musat-query-self", "model's forward", "fastattn.models.disentangled",
             'n_keys = L - 1 if check_mask(mask) == "strict" else L', "n_keys = L",
             ("musat2025-sweep",), "the strict mask lets the query attend to itself in the "
             "second layer"),
)
