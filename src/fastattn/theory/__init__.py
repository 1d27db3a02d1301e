"""Closed-form theory of training dynamics (plain numbers and numpy arrays, never models).

Modules:
    gaussian: moments of Gaussian tokens and of their empirical covariance (shared by every paper).
    zhang2025: Zhang, Singh, Latham & Saxe (ICML 2025), linear attention on in-context regression.
"""

from fastattn.theory import gaussian, zhang2025

__all__ = ["gaussian", "zhang2025"]
