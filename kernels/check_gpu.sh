#!/usr/bin/env bash
# Build and run the whole conformance kernel suite on a CUDA (or ROCm) machine in one go,
# then print a short table. Usage: kernels/check_gpu.sh [OUT_DIR]
#
# Needs: a CUDA (or ROCm) build of torch, numpy, ninja and the matching compiler (nvcc or
# hipcc) on PATH. xcompat is used from this checkout when it is not installed.
# Exit status: 0 all passed, 1 a check failed, 5 no GPU backend available.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
out="${1:-${OUT:-$root/.xcompat-out}}"
mkdir -p "$out"
py="${PYTHON:-python3}"
if ! "$py" -c 'import xcompat' 2>/dev/null; then
  export PYTHONPATH="$root/src${PYTHONPATH:+:$PYTHONPATH}"
fi
export XCOMPAT_CACHE="${XCOMPAT_CACHE:-$out/cache}"
export MAX_JOBS="${MAX_JOBS:-$(nproc 2>/dev/null || echo 2)}"

backend="$("$py" - <<'PY'
from xcompat.devices import available_backends
found = [b for b in available_backends() if b in ("cuda", "rocm")]
print(found[0] if found else "")
PY
)"
if [[ -z "$backend" ]]; then
  echo "check_gpu: no CUDA or ROCm device is available here" >&2
  "$py" -m xcompat probe || true
  exit 5
fi

"$py" -m xcompat probe --json -o "$out/probe.json" > /dev/null || true
start=$(date +%s)
set +e
"$py" -m xcompat kernels run --backend "$backend" --json "$out/kernels-$backend.json" > "$out/kernels-$backend.txt" 2>&1
rc=$?
set -e
end=$(date +%s)

"$py" - "$out/probe.json" "$out/kernels-$backend.json" "$((end - start))" <<'PY'
import json, sys
probe = json.load(open(sys.argv[1]))
doc = json.load(open(sys.argv[2]))
print(f"device : {', '.join(d['name'] + ' (' + d['arch'] + ')' for d in probe['devices']) or '-'}")
print(f"driver : CUDA {probe['cuda']['driver_version']}; torch {probe['torch']['version']} "
      f"(CUDA {probe['torch']['cuda']}, HIP {probe['torch']['hip']})")
for c in probe["checks"]:
    print(f"probe  : {c['status']:7} {c['name']}")
b = doc["build"]
print(f"build  : {'cached' if b['cached'] else 'compiled'} in {b['seconds']:.1f} s, archs {' '.join(b['device_archs'])}")
print(f"{'kernel':20} {'status':8} {'pass':>6} {'fail':>6} {'skip':>6}")
for k in doc["kernels"]:
    c = k["counts"]
    print(f"{k['name']:20} {k['status']:8} {c['passed']:6} {c['failed']:6} {c['skipped']:6}")
for name, r in doc["opcheck"].items():
    print(f"opcheck {name:12} {r['status']}")
for c in doc["checks"]:
    print(f"check  {c['name']:32} {c['status']:8} {c['seconds']:.3f}s")
print(f"status : {doc['status']} ({sys.argv[3]} s) - {doc['summary']}")
PY
exit $rc
