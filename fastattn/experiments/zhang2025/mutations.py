"""The planted bugs that Zhang et al. 2025's claims must catch (`fastattn report WORK --mutations`),
listed by the paper's manifest (`fastattn.papers`); `Mutation` and the check:
fastattn/experiments/mutations.py."""

from fastattn.experiments.mutations import Mutation

MUTATIONS = (
    Mutation("zhang-cubic-transpose", "model's forward", "fastattn.models.cubic_mlp",
             "hidden = ops.cubic_hidden(beta(x, y, lengths), x_q, self.W1)",
             "hidden = ops.cubic_hidden(x_q, beta(x, y, lengths), self.W1)",
             ("zhang2025-fig1",), "the cubic feature z = vec(β x_qᵀ) transposed in "
             "CubicMLP.forward"),
    Mutation("zhang-moments-inv-n", "moment", "fastattn.tasks.linear_regression",
             "inv_n=self.inv_context_mean())",
             "inv_n=1.0 / (1.0 / self.inv_context_mean() + 1.0))",
             ("zhang2025-fig7",), "the population moments use 1/(N+1) for 1/N", ci=True),
    Mutation("zhang-eq51-constant", "theory constant", "fastattn.theory.zhang2025",
             "c**2 * (1.0 + (1.0 + dim) * inv_n) * g**2", "c**2 * (1.0 + dim * inv_n) * g**2",
             ("zhang2025-fig1",), "Eq. 51's (1 + D)/N term read as D/N"),
    Mutation("zhang-query-sampler", "sampler", "fastattn.tasks.linear_regression",
             "x_all[:, :n_max] * mask[..., None], x_all[:, n_max]",
             "x_all[:, :n_max] * mask[..., None], x_all[:, 0]",
             ("zhang2025-fig1",), "the sampler draws the query as the first context token"),
)
