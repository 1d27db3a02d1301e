"""Analysis of training trajectories: plateaus and drops, weight diagnostics, curve comparison.

General tools, not tied to one paper; inputs are plain numpy arrays.
"""

from fastattn.analysis.curves import CurveComparison, compare_curves, fit_time_shift
from fastattn.analysis.heads import extract_ov, extract_qk, factored_svd, head_measures
from fastattn.analysis.plateaus import (
    Drop,
    Plateau,
    conspicuous_plateaus,
    count_conspicuous_plateaus,
    detect_drops,
    detect_plateaus,
    find_plateaus_and_drops,
    smooth_log_curve,
)
from fastattn.analysis.spectral import (
    entropy_effective_rank,
    landmarks,
    loss_autocorrelation,
    marginalized_effective_rank,
    marginalized_effective_rank_by_mode,
    mode_components,
    subspace_distance,
    windowed_autocorrelation,
)
from fastattn.analysis.weights import (
    alignment,
    best_aligned,
    effective_rank,
    head_cosine_similarity,
    participation_ratio,
    split_merged,
    split_separate,
    value_weights,
)

__all__ = [
    "CurveComparison",
    "Drop",
    "Plateau",
    "alignment",
    "best_aligned",
    "compare_curves",
    "conspicuous_plateaus",
    "count_conspicuous_plateaus",
    "detect_drops",
    "detect_plateaus",
    "effective_rank",
    "entropy_effective_rank",
    "extract_ov",
    "extract_qk",
    "factored_svd",
    "find_plateaus_and_drops",
    "fit_time_shift",
    "head_cosine_similarity",
    "head_measures",
    "landmarks",
    "loss_autocorrelation",
    "marginalized_effective_rank",
    "marginalized_effective_rank_by_mode",
    "mode_components",
    "participation_ratio",
    "smooth_log_curve",
    "split_merged",
    "split_separate",
    "subspace_distance",
    "value_weights",
    "windowed_autocorrelation",
]
