"""Progress bars show where someone reads them: a terminal, or a Jupyter notebook."""

import io
import sys
import types

from fastattn.training.progress import interactive


class ZMQInteractiveShell:      # the class name IPython's kernel shell has
    pass


class TerminalInteractiveShell:
    pass


def _ipython(monkeypatch, shell):
    fake = types.ModuleType("IPython")
    fake.get_ipython = lambda: shell
    monkeypatch.setitem(sys.modules, "IPython", fake)


def test_a_pipe_is_not_interactive_but_a_notebook_kernel_is(monkeypatch):
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    monkeypatch.delitem(sys.modules, "IPython", raising=False)
    assert not interactive()
    _ipython(monkeypatch, TerminalInteractiveShell())
    assert not interactive()            # IPython in a terminal: stderr decides
    _ipython(monkeypatch, ZMQInteractiveShell())
    assert interactive()
    _ipython(monkeypatch, None)         # IPython imported, no shell running
    assert not interactive()
