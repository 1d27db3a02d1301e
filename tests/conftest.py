import numpy as np
import pytest
import torch

# The tests use tiny tensors: one intra-op thread avoids OpenMP spin-waits, which make small ops
# hundreds of times slower when the machine's cores are busy with other work.
torch.set_num_threads(1)


@pytest.fixture
def rng() -> np.random.Generator:
    """Fresh random inputs on every run; the seed is printed so a failure can be replayed."""
    seed = int(np.random.SeedSequence().entropy % (2**32))
    print(f"rng seed = {seed}")
    return np.random.default_rng(seed)
