#!/usr/bin/env bash
# Everything the GPU machine should measure: the CUDA kernel tests, then the kernel benchmarks
# (bench/test_kernels_bench.py, test_linear_attention_bench.py, test_he_step_gpu_bench.py; -k cuda),
# then the tables and one JSON summary.
#
# usage, from the repository root on the GPU machine (python3 with torch and triton):
#     WHEELS=bench/wheels OUT=/some/dir bash bench/gpu_all.sh
# or PART=tests, then PART=bench (each fits one 10-minute device call; the second on the machine
# the first left warm). The GPU machine has no network: download the wheels it lacks here first,
#     pip download --no-deps -d bench/wheels fla-core==0.6.0 einops cmeel "cmeel-eigen>=3.4" \
#         pytest-xdist execnet
# (all pure Python; bench/wheels is git-ignored) and carry bench/wheels. WHEELS=DIR installs them,
# then builds the C++ core (`pip install --no-build-isolation --no-deps .`, about 34 s on 16 cores)
# unless fastattn is installed already; fla (flash-linear-attention) is compared where it imports.
# writes $OUT/install.log (WHEELS); cuda_tests.log and cuda_tests.xml (PART=tests); bench.log,
# bench.json, gpu_table.md (docs/gpu.md's table) and cuda_timings.json (what backend="auto" would
# follow, bench/dispatch_table.py) (PART=bench); gpu_all.json (the summary: device, versions, test
# counts and failures, each benchmark's device median in ms). At most 8 files: the device tool's
# limit a call.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-out/gpu}
mkdir -p "$out"
py=${PYTHON:-python3}
parts=$(mktemp -d)

# both halves need the core, and compare with fla (tests/ops: the same inputs; bench: the same run)
if [ -n "${WHEELS:-}" ]; then
    {
        "$py" -m pip install -q --no-deps --no-index "$WHEELS"/*.whl
        "$py" -m pip show -q fastattn || "$py" -m pip install -q --no-build-isolation --no-deps .
    } > "$out/install.log" 2>&1
fi

# PART=tests or PART=bench runs one half (each fits one 10-minute device call); default both
part=${PART:-all}
tests_rc=-1
bench_rc=-1
# the kernel and op tests, CUDA cases only (the interpreter cases run in CI), on 4 workers where
# pytest-xdist imports: most of their time is Triton compiling each kernel, on the CPU
workers=()
"$py" -c "import xdist" 2> /dev/null && workers=(-n 4)
if [ "$part" != bench ]; then
    timeout 330 "$py" -m pytest tests/triton_kernels tests/ops -q -p no:cacheprovider -k cuda \
        "${workers[@]}" --junitxml "$out/cuda_tests.xml" > "$out/cuda_tests.log" 2>&1
    tests_rc=$?
fi
if [ "$part" != tests ]; then
    # one pytest per file, each with its own limit: pytest-benchmark writes its JSON at the end of
    # a session, so a file that runs over loses its own cases only
    bench_rc=0
    # FILE:SELECTION:SECONDS, 530 s in all (a device call has 600): linear attention in float32
    # first, so that compiling fla's autotuned kernels and the references in bfloat16 too cannot
    # cost the float32 comparison
    for spec in test_kernels_bench.py:cuda:150 \
                test_linear_attention_bench.py:"cuda and not bfloat16":170 \
                test_linear_attention_bench.py:"cuda and bfloat16":110 \
                test_he_step_gpu_bench.py:cuda:100; do
        IFS=: read -r file selection seconds <<< "$spec"
        echo "== $file -k '$selection' (limit $seconds s)" >> "$out/bench.log"
        timeout "$seconds" "$py" -m pytest "bench/$file" -q -p no:cacheprovider -k "$selection" \
            --benchmark-json "$parts/$(date +%s%N).json" >> "$out/bench.log" 2>&1
        rc=$?
        [ "$rc" -ne 0 ] && bench_rc=$rc
    done
    "$py" - "$out/bench.json" "$parts"/*.json <<'PY' >> "$out/bench.log" 2>&1
import json, sys
runs = []
for path in sys.argv[2:]:
    try:
        runs.append(json.load(open(path)))
    except (OSError, ValueError):       # killed by its limit, or nothing ran
        print(f"{path}: no benchmark JSON")
if runs:
    merged = dict(runs[0], benchmarks=[b for r in runs for b in r["benchmarks"]])
    json.dump(merged, open(sys.argv[1], "w"), indent=1)
print(f"bench.json: {sum(len(r['benchmarks']) for r in runs)} benchmarks from {len(runs)} files")
PY
fi

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
# the tables for docs/gpu.md and the measured dispatch table (copy it to fastattn/ops/ to adopt
# it), after gpu_all.json, whose device and versions the dispatch table records
if [ -f "$out/bench.json" ]; then
    "$py" bench/gpu_table.py "$out/bench.json" > "$out/gpu_table.md" 2>> "$out/bench.log"
    "$py" bench/dispatch_table.py "$out/bench.json" --out "$out/cuda_timings.json" \
        >> "$out/bench.log" 2>&1
fi
rm -rf "$parts"
