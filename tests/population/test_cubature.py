"""The degree-5 Gaussian cubature against the Gaussian moments: every monomial of degree ≤ 5 in
λ ~ N(0, I_d) is integrated exactly (E[λ_i^k] = (k − 1)!! for even k, 0 for odd; independent
coordinates), for d where the axis weights are positive, zero and negative."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from fastattn.population.cubature import cubature5


def _gaussian_moment(powers: tuple[int, ...]) -> float:
    return math.prod(0.0 if k % 2 else float(math.prod(range(k - 1, 0, -2))) for k in powers)


@pytest.mark.parametrize("d", [1, 2, 3, 4, 6])
def test_cubature5_integrates_every_monomial_of_degree_at_most_5(d):
    nodes, weights = cubature5(d)
    assert nodes.shape == (2 * d * d + 1, d) and weights.shape == (2 * d * d + 1,)
    for powers in itertools.product(range(6), repeat=d):
        if sum(powers) > 5:
            continue
        rule = float(weights @ np.prod(nodes ** np.array(powers), axis=1))
        assert rule == pytest.approx(_gaussian_moment(powers), abs=1e-12), powers
