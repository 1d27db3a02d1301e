"""Closed-form theory of training dynamics (plain numbers and numpy arrays, never models).

Modules:
    gaussian: moments of Gaussian tokens and of their empirical covariance (shared by every paper).
    zhang2025: Zhang, Singh, Latham & Saxe (ICML 2025), linear attention on in-context regression.
    musat2025: Musat et al. (2025), induction-head emergence: the 3-parameter flow, Theorem 2.

Import the module you need (``from fastattn.theory import zhang2025``): this package imports none of
them, so loading one formula does not load every paper's.
"""
