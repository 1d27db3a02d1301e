"""Fused Triton kernels for in-context learning workloads, each beside its PyTorch reference.

Installed as ``fastattn.triton_kernels``. This package imports nothing from fastattn, so the kernels
can be read, tested and reused on their own.
"""
