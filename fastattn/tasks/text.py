"""A small text sample as token-embedding sequences, for the AR-fit check of Sander et al. 2024
(Fig. 4, spec §2.6), with no download and no pretrained model.

The paper embeds about 325 000 GPT-2 (gpt2-large) tokens of Moby-Dick with the model's input
embedding `wte` (d = 1280), normalises each to unit norm and cuts the stream into sequences of T = 5.
Here: the opening of Moby-Dick's Chapter 1 ("Loomings", public domain; about 9 KB shipped in
`moby_dick_ch1.txt`), split into words and punctuation marks (case kept), each distinct token given
a fixed random Gaussian vector normalised to unit norm. What Fig. 4 measures survives the change:
distinct tokens get (almost surely) linearly independent vectors when d ≥ T − 1, so a sequence has
an exact AR(1) fit unless a token recurs with different successors, which depends only on the token
ids, not on the embedding.
"""

from __future__ import annotations

import re
from importlib import resources

import numpy as np

#: words with inner apostrophes or hyphens ("people's", "sea-captain"), or one punctuation mark
TOKEN_PATTERN = re.compile(r"[A-Za-z]+(?:['-][A-Za-z]+)*|[^\sA-Za-z]")


def moby_dick_sample() -> str:
    """The shipped text: the opening paragraphs of Moby-Dick, Chapter 1 (Melville, 1851)."""
    return resources.files("fastattn.tasks").joinpath("moby_dick_ch1.txt").read_text("utf-8")


def tokenize(text: str) -> tuple[np.ndarray, list[str]]:
    """Word/punctuation token ids `[n]` (int64, in order of first appearance) and the vocabulary."""
    vocab: dict[str, int] = {}
    ids = [vocab.setdefault(tok, len(vocab)) for tok in TOKEN_PATTERN.findall(text)]
    return np.asarray(ids, dtype=np.int64), list(vocab)


def token_sequences(ids: np.ndarray, length: int) -> np.ndarray:
    """The stream cut into consecutive sequences `[n // length, length]` (the remainder dropped),
    as the authors' validation_token_encoding.py reshapes the flattened token ids."""
    if length < 2:
        raise ValueError(f"length must be at least 2 (an AR fit needs a pair); got {length}")
    n = len(ids) // length
    return np.asarray(ids[:n * length]).reshape(n, length)


def random_embeddings(vocab_size: int, dim: int, seed: int) -> np.ndarray:
    """Unit-norm Gaussian token vectors `[vocab_size, dim]` (float64), a pure function of seed."""
    v = np.random.default_rng(seed).standard_normal((vocab_size, dim))
    return v / np.linalg.norm(v, axis=1, keepdims=True)
