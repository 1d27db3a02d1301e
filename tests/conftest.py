import random

import numpy as np
import pytest
import torch

# The tests use tiny tensors: one intra-op thread avoids OpenMP spin-waits, which make small ops
# hundreds of times slower when the machine's cores are busy with other work.
torch.set_num_threads(1)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--fastattn-seed", type=int, default=None, metavar="N",
        help="seed every test's random draws with N (the `rng` fixture, torch's, numpy's and "
             "Python's global generators) to replay a failure; by default each test draws a fresh "
             "seed, printed with a failing test's output")


def pytest_report_header(config: pytest.Config) -> str:
    seed = config.getoption("fastattn_seed")
    if seed is None:
        return "fastattn seed: fresh per test, printed on failure (replay: --fastattn-seed N)"
    return f"fastattn seed: {seed} for every test (--fastattn-seed)"


@pytest.fixture(autouse=True)
def fastattn_seed(request: pytest.FixtureRequest) -> int:
    """This test's seed: `--fastattn-seed N`, else fresh from the OS. It seeds torch's, numpy's and
    Python's global generators too, so that a test drawing from them replays with the same option."""
    seed = request.config.getoption("fastattn_seed")
    if seed is None:
        seed = int(np.random.SeedSequence().entropy % (2**32))
    print(f"rng seed = {seed} (replay: pytest --fastattn-seed {seed} '{request.node.nodeid}')")
    torch.manual_seed(seed)
    np.random.seed(seed)  # noqa: NPY002 -- the legacy global generator, for code drawing from it
    random.seed(seed)
    return seed


@pytest.fixture
def rng(fastattn_seed: int) -> np.random.Generator:
    """The random inputs of a test, from its printed seed."""
    return np.random.default_rng(fastattn_seed)
