"""The planted bugs that He et al. 2025's claims must catch (`fastattn report WORK --mutations`),
listed by the paper's manifest (`fastattn.papers`); `Mutation` and the check:
fastattn/experiments/mutations.py."""

from fastattn.experiments.mutations import Mutation

MUTATIONS = (
    Mutation("he-softmax-scale", "model's forward", "fastattn.models.multihead_softmax",
             "return ops.single_query_attention(q, k, v, 1.0)",
             "return ops.single_query_attention(q, k, v, 2.0)",
             ("he2025-e5",), "softmax attention scores doubled"),
    Mutation("he-mu-gamma", "theory constant", "fastattn.theory.he2025",
             "return (g / 2) / (g ** 2 + (1 + sigma2) / L * np.sinh(d * g ** 2))",
             "return g / (g ** 2 + (1 + sigma2) / L * np.sinh(d * g ** 2))",
             ("he2025-e8",), "the solution manifold's μ_γ without its ½", ci=True),
    Mutation("he-query-noise", "sampler", "fastattn.tasks.linear_regression",
             'y_q = torch.einsum("bd,bd->b", x_q, w) + eps[:, n_max]',
             'y_q = torch.einsum("bd,bd->b", x_q, w)',
             ("he2025-e5",), "the sampler draws the query label without its noise σ²"),
)
