"""The planted bugs that Sander et al. 2024's claims must catch (`fastattn report WORK --mutations`),
listed by the paper's manifest (`fastattn.papers`); `Mutation` and the check:
fastattn/experiments/mutations.py."""

from fastattn.experiments.mutations import Mutation

MUTATIONS = (
    Mutation("sander-pe-gradient", "objective's term", "fastattn.population.autoregressive",
             "grad[T - 2, :T] = 2 * Hq", "grad[T - 2, :T] = Hq",
             ("sander2024-fig6",), "the positional-only objective's gradient halved", ci=True),
    Mutation("sander-pe-hessian", "theory constant", "fastattn.theory.sander2024",
             "x = 4 * math.pi * k / mu", "x = 2 * math.pi * k / mu",
             ("sander2024-fig6",), "Prop. 7's H_tt' with 2π for 4π"),
    Mutation("sander-merged-transpose", "model's forward", "fastattn.models.autoregressive",
             "return self.B.T @ self.A", "return self.A.T @ self.B",
             ("sander2024-props",), "the DIAG model's C = BᵀA transposed in its forward"),
)
