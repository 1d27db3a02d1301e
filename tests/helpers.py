"""Small shared test utilities (importable as `helpers`; pytest puts tests/ on sys.path)."""

import numpy as np
import pytest
import torch


def random_spd(rng: np.random.Generator, d: int) -> np.ndarray:
    """A random symmetric positive-definite matrix [d, d] with a spread spectrum."""
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    return (q * rng.uniform(0.1, 1.0, d)) @ q.T


def seeded_torch(rng: np.random.Generator) -> torch.Generator:
    return torch.Generator().manual_seed(int(rng.integers(2**31)))


def mc_mean_and_se(samples: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Monte-Carlo mean and its standard error over axis 0."""
    return samples.mean(0), samples.std(0, ddof=1) / np.sqrt(len(samples))


def triton_device(where: str, monkeypatch) -> torch.device:
    """Where a Triton kernel runs: "interpreter" (the CPU interpreter, TRITON_INTERPRET=1, read at
    launch) or "cuda" (compiled; the test is skipped without a CUDA device)."""
    if where == "interpreter":
        monkeypatch.setenv("TRITON_INTERPRET", "1")
        return torch.device("cpu")
    if not torch.cuda.is_available():
        pytest.skip("compiled Triton kernels need a CUDA device; none is visible")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    return torch.device("cuda")
