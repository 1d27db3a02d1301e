"""fastattn/_core.pyi declares exactly the compiled module's public names and each class's members."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from fastattn._core_loader import core

STUB = ast.parse((Path(__file__).resolve().parents[1] / "fastattn" / "_core.pyi").read_text())
ALIASES = {"F64"}  # the stub's own type aliases


def _names(body) -> set[str]:
    out = set()
    for node in body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            out.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            out.add(node.target.id)
        elif isinstance(node, ast.Assign):
            out.update(t.id for t in node.targets)
    return out


def test_stub_declares_the_module():
    public = {n for n in dir(core) if not n.startswith("_")} | {"__version__"}
    assert _names(STUB.body) - ALIASES == public


@pytest.mark.parametrize("cls", [n.name for n in STUB.body if isinstance(n, ast.ClassDef)])
def test_stub_declares_each_class(cls):
    (node,) = [n for n in STUB.body if isinstance(n, ast.ClassDef) and n.name == cls]
    members = {n for n in vars(getattr(core, cls)) if not n.startswith("_")} | {"__init__"}
    if hasattr(getattr(core, cls), "__members__"):      # an enum: its values
        members = set(getattr(core, cls).__members__)
    assert _names(node.body) == members


def test_choices_cross_as_enums_and_arguments_by_keyword():
    """Named choices are enums (a string is refused by the binding, not parsed there), and the
    bindings take their arguments by keyword beyond the leading ones."""
    import numpy as np

    ok = core.InductionThreeParam(N=4, query=core.Query.uniform, mask=core.Mask.inclusive)
    assert ok.N == 4
    with pytest.raises(TypeError):
        core.InductionThreeParam(N=4, query="uniform")
    with pytest.raises(TypeError):
        core.InductionThreeParam(4)                       # keyword-only
    with pytest.raises(TypeError):
        core.AutoRegressive(context="unitary", d=2, H=1, tmax=3)
    assert core.AutoRegressive(context=core.Context.orthogonal, d=2, H=1, tmax=3).size() > 0
    eye = np.eye(2)
    with pytest.raises(TypeError):
        core.LinearAttention(family="separate", D=2, H=1, R=1, cov=eye, w_second=eye, noise=0.0,
                             inv_n=0.5)
    with pytest.raises(TypeError):
        core.he_normals(1, 2, 3, 4, 5)                    # dim and context by name
    assert core.he_normals(1, 2, 3, dim=2, context=3).dtype == np.float32
