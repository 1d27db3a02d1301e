#!/usr/bin/env bash
# Everything the GPU machine should measure: the CUDA kernel tests, then the kernel benchmarks
# (bench/test_kernels_bench.py, test_linear_attention_bench.py, test_he_step_gpu_bench.py; -k cuda),
# then the tables and one JSON summary.
#
# usage, from the repository root on the GPU machine (python3 with torch and triton; the C++ core
# installed with `pip install --no-build-isolation --no-deps .`):
#     OUT=/some/dir bash bench/gpu_all.sh            (or PART=tests, then PART=bench: two calls)
# The GPU machine has no network: to compare with flash-linear-attention, download its wheels here
#     pip download --no-deps -d bench/wheels fla-core==0.6.0 einops
# and carry bench/wheels (git-ignored); FLA_WHEELS=bench/wheels installs them first.
# writes $OUT/cuda_tests.log, cuda_tests.xml, bench.log, bench.json, gpu_table.md (docs/gpu.md's
# table), cuda_timings.json (what backend="auto" would follow, bench/dispatch_table.py) and
# gpu_all.json (the summary: device, versions, test counts and failures, each benchmark's device
# median in ms).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-out/gpu}
mkdir -p "$out"
py=${PYTHON:-python3}

if [ -n "${FLA_WHEELS:-}" ]; then
    "$py" -m pip install -q --no-deps --no-index "$FLA_WHEELS"/*.whl > "$out/fla_install.log" 2>&1
fi

# PART=tests or PART=bench runs one half (each fits one 10-minute device call); default both
part=${PART:-all}
tests_rc=-1
bench_rc=-1
# the kernel and op tests, CUDA cases only (the interpreter cases run in CI)
if [ "$part" != bench ]; then
    timeout 330 "$py" -m pytest tests/triton_kernels tests/ops -q -p no:cacheprovider -k cuda \
        --junitxml "$out/cuda_tests.xml" > "$out/cuda_tests.log" 2>&1
    tests_rc=$?
fi
if [ "$part" != tests ]; then
    timeout 420 "$py" -m pytest bench/test_kernels_bench.py bench/test_linear_attention_bench.py \
        bench/test_he_step_gpu_bench.py -q -p no:cacheprovider -k cuda \
        --benchmark-json "$out/bench.json" > "$out/bench.log" 2>&1
    bench_rc=$?
fi
# the tables for docs/gpu.md and the measured dispatch table (copy it to fastattn/ops/ to adopt it)
"$py" bench/gpu_table.py "$out/bench.json" > "$out/gpu_table.md" 2> "$out/gpu_table.log"
"$py" bench/dispatch_table.py "$out/bench.json" --out "$out/cuda_timings.json" \
    >> "$out/gpu_table.log" 2>&1

"$py" - "$out" "$tests_rc" "$bench_rc" <<'PY'
import json, pathlib, sys
import xml.etree.ElementTree as ET

import torch
import triton

out, tests_rc, bench_rc = pathlib.Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
summary = {"device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
           "torch": torch.__version__, "triton": triton.__version__,
           "tests_exit": tests_rc, "bench_exit": bench_rc}
try:
    suite = ET.parse(out / "cuda_tests.xml").getroot().iter("testsuite")
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    failed = []
    for s in suite:
        for k in counts:
            counts[k] += int(s.get(k, 0))
        for case in s.iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                failed.append(f"{case.get('classname')}::{case.get('name')}")
    summary.update(counts, failed=failed)
except (OSError, ET.ParseError) as exc:
    summary["tests_report_error"] = str(exc)
try:
    bench = json.loads((out / "bench.json").read_text())
    summary["bench_median_ms"] = {b["name"]: b["extra_info"].get("device_median_ms")
                                  for b in bench["benchmarks"]}
except (OSError, ValueError, KeyError) as exc:
    summary["bench_report_error"] = str(exc)
(out / "gpu_all.json").write_text(json.dumps(summary, indent=1))
print(json.dumps({k: v for k, v in summary.items() if k != "bench_median_ms"}, indent=1))
PY
