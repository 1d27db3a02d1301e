import numpy as np
import pytest


@pytest.fixture
def rng() -> np.random.Generator:
    """Fresh random inputs on every run; the seed is printed so a failure can be replayed."""
    seed = int(np.random.SeedSequence().entropy % (2**32))
    print(f"rng seed = {seed}")
    return np.random.default_rng(seed)
