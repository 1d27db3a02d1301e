"""Fused ICL ops with autograd and backend dispatch (Triton kernel or pure-torch reference).

Kernels and references live in ``fastattn.triton_kernels``; this package validates shapes, picks a
backend (:func:`available_backends` reports which can run) and registers torch custom ops.
"""

from fastattn.ops._dispatch import BackendUnavailableError, available_backends
from fastattn.ops.attention import single_query_attention
from fastattn.ops.cubic import cubic_hidden, cubic_second_moments
from fastattn.ops.he_train_step import he_adam_step, he_adam_steps
from fastattn.ops.linear_attention import causal_linear_attention
from fastattn.ops.pe_attention import pe_attention, pe_attention_backend
from fastattn.ops.readout import icl_readout, icl_readout_next_token
from fastattn.ops.sampling import sample_icl_stats

__all__ = [
    "BackendUnavailableError",
    "available_backends",
    "causal_linear_attention",
    "cubic_hidden",
    "cubic_second_moments",
    "he_adam_step",
    "he_adam_steps",
    "icl_readout",
    "icl_readout_next_token",
    "pe_attention",
    "pe_attention_backend",
    "sample_icl_stats",
    "single_query_attention",
]
