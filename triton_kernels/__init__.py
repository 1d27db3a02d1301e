"""Fused Triton kernels for in-context learning workloads, each beside its PyTorch reference.

A subpackage of fastattn (``fastattn.triton_kernels``) that imports nothing from fastattn, so the kernels
can be read, tested and reused on their own.
"""
