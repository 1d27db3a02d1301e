"""What a run record says of its software: the package versions and the compiled core that ran.
A leaf below the trainers (run records) and `fastattn.info` (the installation's report)."""

from __future__ import annotations

import functools
import platform
from importlib import metadata

from fastattn._core_loader import core


# cached: reading a distribution's metadata parses its METADATA file, and every run
# record asks for five of them
@functools.cache
def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def versions() -> dict[str, str | None]:
    """Versions of fastattn, python, numpy, torch and triton, read from the installed distributions'
    metadata: no import of torch or triton (a run record asks for them; importing triton alone
    costs most of a short flow's first call)."""
    return {"fastattn": _version("fastattn"), "python": platform.python_version(),
            "numpy": _version("numpy"), "torch": _version("torch"), "triton": _version("triton")}


def core_report() -> dict:
    """The compiled core (always loaded: fastattn does not import without it): its version, Eigen's,
    the instruction-set level running (x86-64-v2/v3/v4 of a multi-level build, native or generic)
    and the highest level this CPU has."""
    from fastattn._core_loader import cpu_level

    return {
        "loaded": True,
        "version": core.__version__,
        "eigen": core.eigen_version,
        # a core compiled before it reported its level (a checkout joined to an older install)
        "isa": getattr(core, "isa", "native" if core.native_build else "generic"),
        "cpu_level": f"x86-64-v{cpu_level()}" if platform.machine() in ("x86_64", "AMD64") else None,
        "native_build": core.native_build,
    }
