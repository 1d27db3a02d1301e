"""Figures of Musat et al. 2025 (spec §6.1, §11): `python -m fastattn.experiments.musat2025 NAME
[--quick] [--out DIR]` writes DIR/NAME.png and DIR/NAME.json. Names: `FIGURES` (figures.py).

These recipes call the theory module and the exact objectives directly; they are not (yet) in
`fastattn reproduce`'s index, whose recipes train registered `fastattn.models` families.
"""

from fastattn.experiments.musat2025.figures import FIGURES, run_figure

__all__ = ["FIGURES", "run_figure"]
