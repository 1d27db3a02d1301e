"""tasks.text: the shipped text sample, its tokens and embeddings (Fig. 4 of Sander et al. 2024)."""

from __future__ import annotations

import numpy as np
import pytest

from fastattn.tasks import text


def test_sample_tokens_and_sequences():
    sample = text.moby_dick_sample()
    assert sample.startswith("CHAPTER 1. Loomings.") and "Call me Ishmael." in sample
    ids, vocab = text.tokenize("Call me Ishmael. Call me, sea-captain's man!")
    assert [vocab[i] for i in ids] == ["Call", "me", "Ishmael", ".", "Call", "me", ",",
                                       "sea-captain's", "man", "!"]
    np.testing.assert_array_equal(text.token_sequences(ids, 4), ids[:8].reshape(2, 4))
    with pytest.raises(ValueError, match="length"):
        text.token_sequences(ids, 1)


def test_embeddings_are_unit_norm_and_seeded():
    a, b = text.random_embeddings(5, 9, 0), text.random_embeddings(5, 9, 0)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, rtol=1e-14)
    assert not np.allclose(a, text.random_embeddings(5, 9, 1))
