"""Closed-form theory of training dynamics (plain numbers and numpy arrays, never models).

Modules:
    zhang2025: Zhang, Singh, Latham & Saxe (ICML 2025), linear attention on in-context regression.
"""

from fastattn.theory import zhang2025

__all__ = ["zhang2025"]
