"""What this installation has: versions, the C++ core, kernel backends and devices."""

from __future__ import annotations

import os
import platform

from fastattn.versions import core_report, versions


def info() -> dict:
    """A plain dict describing the installation; ``fastattn info`` prints it.

    Keys: versions (fastattn, python, numpy, torch, triton), core (version, Eigen, native build),
    backends (name -> available + why not), registries (task kinds, model kinds), pairs (task ->
    model -> methods, exact, preset, the default run's method, steps, declared seconds per step
    and expected seconds: `default_run`), devices (cpu, cuda list).
    """
    import torch

    from fastattn.models import MODELS
    from fastattn.tasks import TASKS

    triton_version = versions()["triton"]
    cuda = torch.cuda.is_available()
    interpret = os.environ.get("TRITON_INTERPRET") == "1"
    backends = {
        "triton-cuda": {
            "available": bool(triton_version and cuda),
            "why_not": None if triton_version and cuda else
            ("triton is not installed" if not triton_version else "no CUDA device is visible"),
        },
        "triton-interpreter": {
            "available": bool(triton_version and interpret),
            "why_not": None if triton_version and interpret else
            ("triton is not installed" if not triton_version else "TRITON_INTERPRET=1 is not set"),
        },
        "torch-reference": {"available": True, "why_not": None},
    }
    return {
        "versions": versions(),
        "core": core_report(),
        "backends": backends,
        "ops": _op_backends(),
        "registries": {"tasks": sorted(TASKS), "models": sorted(MODELS)},
        "pairs": pairs_report(),
        "devices": {
            "cpu": platform.processor() or platform.machine(),
            "cpu_count": os.cpu_count(),
            "cuda": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())],
        },
    }


def pair_methods(task: str, model: str) -> tuple[str, ...]:
    """The training methods of a (task, model) pair: flow and gd where the pair has an exact
    population objective (for some of its configurations: `exact_at_preset` says whether for its
    preset's), sgd and adam always (sampled), task_sgd for models with a per-task gradient (the
    Wishart task sets). A ValueError in one line for a card whose model family is not registered."""
    from fastattn.models import MODELS
    from fastattn.population.registry import registered_objectives
    from fastattn.training.capabilities import QUERY_LOSS_GRAD

    if model not in MODELS:
        raise ValueError(f"--model {model} has a card but no model class: register one with "
                         "fastattn.models.register_model (or register_family)")
    exact = (task, model) in set(registered_objectives())
    return (*(("flow", "gd") if exact else ()), "sgd", "adam",
            *(("task_sgd",) if QUERY_LOSS_GRAD.of(MODELS[model].model) else ()))


def exact_at_preset(task: str, model: str) -> str | None:
    """Why the pair's exact objective does not cover its preset's configuration (its declared
    `exact_for`), or None where it does. The pair must have an exact objective."""
    from fastattn.configs import resolve
    from fastattn.population.registry import exact_reason
    from fastattn.training.build import build_task, model_config

    r = resolve(task, model)
    built = build_task(r.task)
    return exact_reason(built, model_config(r.model, built))


def pairs_report() -> dict:
    """{task: {model: {"methods": [...], "exact": bool, "not_exact": reason | None, "preset":
    name, "source": text}}} for every task (in the papers' order) and the models that pair with
    it. "methods" and "exact" are those of the preset's configuration: a pair whose objective does
    not cover it lists the sampled methods and says why in "not_exact" (flow and gd apply to other
    configurations); a card without a model class lists no methods and says so."""
    from fastattn.configs import pairs, preset_for

    out: dict = {}
    for task, models in pairs().items():
        out[task] = {}
        for model in models:
            preset = preset_for(task, model)
            try:
                methods = pair_methods(task, model)
            except ValueError as exc:
                methods, why = (), str(exc)
            else:
                why = exact_at_preset(task, model) if "flow" in methods else None
            if why is not None:
                methods = tuple(m for m in methods if m not in ("flow", "gd"))
            out[task][model] = {"methods": list(methods), "exact": "flow" in methods,
                                "not_exact": why, "preset": preset.name, "source": preset.source,
                                **default_run(task, model)}
    return out


#: where a declared rate comes from, in `fastattn info`'s lines
REFERENCE = "on the reference machine, 2 cores: docs/benchmarks.md"


def default_run(task: str, model: str) -> dict:
    """{"method", "steps", "seconds_per_step", "expected_seconds"} of the pair's default run (its
    preset's): steps None for an exact flow, the rate as its card declares it (None where it
    declares none), expected_seconds = rate × steps."""
    from fastattn.configs import model_card, resolve

    train = resolve(task, model).train
    steps = train.get("steps") if train["method"] != "flow" else None
    rate = model_card(model).seconds_per_step.get(task)
    return {"method": train["method"], "steps": steps, "seconds_per_step": rate,
            "expected_seconds": rate * steps if rate is not None and steps is not None else None}


def format_pair(task: str, model: str, p: dict, measured: float | None = None) -> list[str]:
    """The lines of `fastattn info --task T --model M`: the pair's methods and preset, its default
    run's expected time (declared; `measured`: seconds per step measured here) and, for a run
    over `LONG_RUN`, the shorter --steps run."""
    from fastattn.training.expected import PROBE_STEPS, estimate, expected_line

    kind = "exact + sampled" if p["exact"] else "sampled" if p["methods"] else "none"
    lines = [f"--task {task} --model {model}: preset {p['preset']} ({p['source']})",
             f"  methods: {', '.join(p['methods']) or 'none'} ({kind}); default run: {p['method']}"]
    if p["steps"] is None:
        lines.append("  an exact flow: no step count to time (docs/benchmarks.md lists its time)")
        return lines
    for rate, how in ((p["seconds_per_step"], REFERENCE),
                      (measured, f"on this machine, measured over {PROBE_STEPS} steps")):
        if rate is not None:
            lines.append("  " + (expected_line(rate, p["steps"], how) or estimate(rate, p["steps"], how)))
    if p["seconds_per_step"] is None:
        lines.append("  no declared time per step (the card's seconds_per_step); --measure times "
                     "a few steps here")
    return lines


def _op_backends() -> dict:
    """Per fused op, which backends can run here and why the others cannot."""
    from fastattn.ops import available_backends

    return {op: {name: {"available": b["available"], "why_not": b.get("why_not")}
                 for name, b in backends.items()}
            for op, backends in available_backends().items()}


def format_info(report: dict) -> str:
    """Human-readable rendering of :func:`info`."""
    from fastattn.training.expected import expected_line

    v, c = report["versions"], report["core"]
    lines = ["fastattn " + str(v["fastattn"])]
    lines += [f"  {name:<9} {ver or 'not installed'}" for name, ver in v.items() if name != "fastattn"]
    isa = {"native": "built for this CPU (-march=native)",
           "generic": "generic build"}.get(c["isa"], f"running {c['isa']}")
    cpu = f"; this CPU: {c['cpu_level']}" if c["cpu_level"] else ""
    lines.append(f"C++ core: loaded (version {c['version']}, Eigen {c['eigen']}, {isa}{cpu}; "
                 "FASTATTN_ISA=baseline|avx2|avx512 forces a lower level)")
    lines.append("kernel backends:")
    for name, b in report["backends"].items():
        state = "available" if b["available"] else f"unavailable ({b['why_not']})"
        lines.append(f"  {name:<19} {state}")
    lines.append("fused ops (backends that can run):")
    for op, backends in report["ops"].items():
        ok = [name for name, b in backends.items() if b["available"]]
        lines.append(f"  {op:<24} {', '.join(ok) or 'none'}")
    lines.append("tasks, the models that pair with each, and each pair's methods (exact: the "
                 "population flow/GD; sampled: sgd, adam):")
    for task, models in report["pairs"].items():
        lines.append(f"  {task}")
        for model, p in models.items():
            kind = "exact + sampled" if p["exact"] else "sampled" if p["methods"] else "none"
            lines.append(f"    {model:<21} {kind:<16} {', '.join(p['methods']):<30} preset {p['preset']}")
            if p["not_exact"]:
                lines.append(f"      no exact flow at the preset: {p['not_exact']} (sgd, adam train "
                             "it as it is)")
            if p["expected_seconds"] is not None:
                long = expected_line(p["seconds_per_step"], p["steps"], REFERENCE)
                if long:
                    lines.append(f"      default run {long}")
    d = report["devices"]
    lines.append(f"devices: cpu ({d['cpu']}, {d['cpu_count']} cores); "
                 f"cuda: {', '.join(d['cuda']) or 'none'}")
    return "\n".join(lines)
