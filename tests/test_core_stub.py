"""src/fastattn/_core.pyi declares exactly the compiled module's public names and each class's members."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from fastattn._core_loader import core

STUB = ast.parse((Path(__file__).resolve().parents[1] / "src" / "fastattn" / "_core.pyi").read_text())
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
    if cls == "Method":
        members = set(core.Method.__members__)
    assert _names(node.body) == members
