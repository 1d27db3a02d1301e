"""The tutorial notebooks run top to bottom in a fresh kernel (nbclient), against the checkout's
sources, and each draws its figures."""

from pathlib import Path

import nbclient
import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_there_is_a_tutorial():
    assert ROOT / "notebooks" / "tutorial.ipynb" in NOTEBOOKS


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_and_draws(path):
    nb = nbformat.read(path, as_version=4)
    # the kernel starts in the repository root: `import fastattn` finds the checkout, as pytest does
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(ROOT)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 1
