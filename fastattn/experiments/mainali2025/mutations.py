"""The planted bugs that Mainali & Teixeira 2025's claims must catch (`fastattn report WORK --mutations`),
listed by the paper's manifest (`fastattn.papers`); `Mutation` and the check:
fastattn/experiments/mutations.py."""

from fastattn.experiments.mutations import Mutation

MUTATIONS = (
    Mutation("mainali-sgd-time", "time unit", "fastattn.training.task_sgd",
             "time = 2 * cfg.lr * steps", "time = cfg.lr * steps",
             ("mainali2025-fig1",), "task-SGD's time axis at lr per step instead of 2 lr", ci=True),
    Mutation("mainali-optimum-factor", "theory constant", "fastattn.theory.mainali2025",
             "a[idx] = n / (n + 1) / s[idx] * (1 - 1 / (np.sqrt(s[idx]) * r))",
             "a[idx] = 1 / s[idx] * (1 - 1 / (np.sqrt(s[idx]) * r))",
             ("mainali2025-fig1",), "the exact optimum a* without its N/(N+1) factor"),
    Mutation("mainali-input-scale", "sampler", "fastattn.tasks.wishart_tasks",
             "xb = torch.randn(b, n + 1, d, generator=g, dtype=torch.float64) * root",
             "xb = torch.randn(b, n + 1, d, generator=g, dtype=torch.float64) * root**2",
             ("mainali2025-fig1",), "the sampler scales the inputs by s, not √s (covariance S²)"),
)
