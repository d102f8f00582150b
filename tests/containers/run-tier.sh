#!/usr/bin/env bash
# `make test-containers`: xcompat's cibuildwheel backend in real containers.
#
# 1. starts a private dockerd (its own data root, socket and pid file in a temporary folder;
#    no bridge, no iptables) and stops it by pid on exit, whatever happens;
# 2. makes the Debian builder image (images/local-base.sh: debootstrap + docker import, then
#    images/builder-debian.Dockerfile) once and caches it as a `docker save` tarball under
#    ${XCOMPAT_CACHE:-$HOME/.cache/xcompat-ci}/containers; later runs `docker load` it;
# 3. puts the host's CPU torch wheel for the builder's Python in the same cache and a
#    third-party sdist in `make test-real`'s sdist cache (pip download, through this host's
#    pip configuration);
# 4. builds the CPU runner image FROM the local base, with torch from that wheel folder
#    (its system and torch layers cached as a tarball too, reused with --cache-from);
# 5. runs tests/containers (real `xcompat build --backend cibuildwheel` runs), and with
#    --bench also benchmarks/build_containers.py.
#
# Needs root, dockerd (Debian: docker.io) and debootstrap; when they are missing and apt-get
# is there they are installed (XCOMPAT_NO_APT=1 turns that off). Network: the Debian mirror
# (first run) and PyPI. Exit code: pytest's, or 5 when a tool is missing.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
PY=${PY:-$repo/.venv/bin/python}
cache=${XCOMPAT_CACHE:-$HOME/.cache/xcompat-ci}/containers
# The third-party sdist comes from the folder `make test-real` keeps its PyPI sdists in.
sdists=${XCOMPAT_CACHE:-$HOME/.cache/xcompat-ci}/real-projects/sdists
bench=0
[ "${1:-}" = --bench ] && bench=1
SDIST_SPEC=${XCOMPAT_CONTAINER_SDIST_SPEC:-markupsafe==3.0.4}
tier_start=$(date +%s)

say() { echo "test-containers: $*"; }
stamp() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(stamp)" 'BEGIN { printf "%.1f", b - a }'; }

missing=""
for tool in dockerd debootstrap docker; do command -v "$tool" >/dev/null || missing="$missing $tool"; done
if [ -n "$missing" ]; then
    if [ "${XCOMPAT_NO_APT:-0}" != 1 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        say "installing docker.io and debootstrap (missing:$missing)"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io debootstrap >/dev/null
    else
        say "missing:$missing (Debian: apt-get install docker.io debootstrap; needs root)" >&2
        exit 5
    fi
fi
[ "$(id -u)" = 0 ] || { say "needs root (dockerd, debootstrap)" >&2; exit 5; }
[ -x "$PY" ] || { say "no $PY: run 'make test' or set PY" >&2; exit 5; }

mkdir -p "$cache/wheels" "$sdists"
# A short path: the socket path must stay under 108 bytes.
work=$(mktemp -d /tmp/xcompat-ctr.XXXXXX)
timings=$work/timings.jsonl
http_pid=""

stop_all() {
    local status=$?
    set +e
    if [ -n "$http_pid" ]; then kill "$http_pid" 2>/dev/null; fi
    if [ -f "$work/d.pid" ]; then
        local pid
        pid=$(cat "$work/d.pid")
        kill "$pid" 2>/dev/null
        for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
        if kill -0 "$pid" 2>/dev/null; then say "dockerd $pid did not stop: killing it"; kill -9 "$pid"; fi
    fi
    # Whatever dockerd left mounted under its roots, then the folder.
    grep -o " $work/[^ ]*" /proc/mounts 2>/dev/null | sort -r | while read -r m; do umount -l "$m"; done
    rm -rf "$work"
    say "dockerd stopped and its folder removed; the tier took $(( $(date +%s) - tier_start )) s"
    exit "$status"
}
trap stop_all EXIT
trap 'exit 130' INT TERM

record() {  # record NAME SECONDS
    printf '{"stage": "%s", "seconds": %.1f}\n' "$1" "$2" >>"$timings"
    printf 'test-containers: %-28s %6.1f s\n' "$1" "$2"
}

# -- 1. dockerd ---------------------------------------------------------------------------
dockerd --data-root "$work/data" --exec-root "$work/exec" -H "unix://$work/d.sock" \
    --pidfile "$work/d.pid" --bridge=none --iptables=false --ip6tables=false >"$work/dockerd.log" 2>&1 &
export DOCKER_HOST="unix://$work/d.sock"
for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
docker info >/dev/null 2>&1 || { tail -20 "$work/dockerd.log" >&2; say "dockerd did not start" >&2; exit 5; }
say "dockerd $(cat "$work/d.pid") on $DOCKER_HOST"

# -- 2. builder image, cached --------------------------------------------------------------
key=$(cat images/local-base.sh images/builder-debian.Dockerfile | sha256sum | cut -c1-12)
builder=xcompat-builder-debian:$key
tarball=$cache/builder-debian-$key.tar
t0=$(stamp)
if [ -f "$tarball" ]; then
    docker load -i "$tarball" >/dev/null
    record "builder image (cached load)" "$(since "$t0")"
else
    nice -n 10 env WORK_DIR="$work" images/local-base.sh xcompat-local-base:"$key"
    record "local base (debootstrap)" "$(since "$t0")"
    t1=$(stamp)
    nice -n 10 docker build -q --network=host -f images/builder-debian.Dockerfile \
        --build-arg BASE=xcompat-local-base:"$key" -t "$builder" images >/dev/null
    record "builder image (build)" "$(since "$t1")"
    t1=$(stamp)
    rm -f "$cache"/builder-debian-*.tar
    docker save -o "$tarball.tmp" xcompat-local-base:"$key" "$builder" && mv "$tarball.tmp" "$tarball"
    record "builder image (docker save)" "$(since "$t1")"
fi

# -- 3. the torch wheel for the builder's Python and the third-party sdist ----------------
builder_py=$(docker run --rm "$builder" /opt/python/cp39-cp39/bin/python -c \
    'import sys; print("%d.%d" % sys.version_info[:2])')
torch_version=$("$PY" -c 'import importlib.metadata as m; print(m.version("torch"))')
t0=$(stamp)
"$PY" -m pip download -q --no-deps --only-binary :all: --python-version "$builder_py" --implementation cp \
    --platform manylinux_2_28_x86_64 "torch==$torch_version" -d "$cache/wheels"
"$PY" -m pip download -q --no-deps --no-binary :all: "$SDIST_SPEC" -d "$sdists"
record "torch wheel and sdist" "$(since "$t0")"
sdist=$("$PY" - "$sdists" "$SDIST_SPEC" <<'EOF'
import sys
from pathlib import Path
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_sdist_filename
want = Requirement(sys.argv[2])
for path in sorted(Path(sys.argv[1]).glob("*.tar.gz")):
    name, version = parse_sdist_filename(path.name)
    if name == canonicalize_name(want.name) and want.specifier.contains(version):
        print(path)
        break
EOF
)
[ -n "$sdist" ] || { say "no sdist for $SDIST_SPEC in $sdists" >&2; exit 5; }

# -- 4. the CPU runner image FROM the local base, torch from the wheel folder --------------
# Its layers up to `COPY . /opt/xcompat-src` (system packages, torch) depend only on the
# Dockerfile, the base and the torch wheel: they are kept as a `docker save` tarball and
# reused with --cache-from; xcompat itself is installed afresh every run. A fixed port keeps
# the TORCH_FIND_LINKS build argument, part of the layer cache key, the same between runs.
port=38765
"$PY" -c "import socket; socket.socket().bind(('127.0.0.1', $port))" 2>/dev/null \
    || port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$PY" -m http.server --bind 127.0.0.1 --directory "$cache/wheels" "$port" >"$work/http.log" 2>&1 &
http_pid=$!
runner=xcompat-runner-cpu:test
runner_key=$( (cat images/runner-cpu.Dockerfile; echo "$key $torch_version $port") | sha256sum | cut -c1-12)
runner_cache=xcompat-runner-cpu:cache-$runner_key
runner_tarball=$cache/runner-cpu-$runner_key.tar
cache_from=()
t0=$(stamp)
if [ -f "$runner_tarball" ]; then
    docker load -i "$runner_tarball" >/dev/null && cache_from=(--cache-from "$runner_cache")
    record "runner-cpu layers (cached load)" "$(since "$t0")"
fi
t0=$(stamp)
nice -n 10 docker build --network=host "${cache_from[@]}" -f images/runner-cpu.Dockerfile \
    --build-arg BASE=xcompat-local-base:"$key" --build-arg TORCH_VERSION="${torch_version%%+*}" \
    --build-arg TORCH_FIND_LINKS="http://127.0.0.1:$port/" \
    -t "$runner" . >"$work/runner-build.log" 2>&1 || { tail -30 "$work/runner-build.log" >&2; exit 4; }
record "runner-cpu image (build)" "$(since "$t0")"
say "runner-cpu: $(grep -c 'Using cache' "$work/runner-build.log") of $(grep -c '^Step ' "$work/runner-build.log") steps from the layer cache"
kill "$http_pid"; http_pid=""
if [ ! -f "$runner_tarball" ]; then
    t0=$(stamp)
    rm -f "$cache"/runner-cpu-*.tar
    docker tag "$runner" "$runner_cache"
    docker save -o "$runner_tarball.tmp" "$runner_cache" && mv "$runner_tarball.tmp" "$runner_tarball"
    record "runner-cpu layers (docker save)" "$(since "$t0")"
fi

# -- 5. the tests (and the benchmark) ------------------------------------------------------
export XCOMPAT_CONTAINER_TIER=1
export XCOMPAT_CPU_BUILDER_IMAGE=$builder
export XCOMPAT_RUNNER_IMAGE=$runner
export XCOMPAT_CONTAINER_SDIST=$sdist
export XCOMPAT_CONTAINER_TIMINGS=$timings
export XCOMPAT_TORCH_INDEX=""  # torch comes from the mounted wheel folder, not download.pytorch.org
# In every build container: this host's CA bundle (TLS-inspecting proxies), the registry
# through the host's network, the wheel folder for pip, and no byte-compiling of torch's
# thousands of modules on each install (PIP_COMPILE=0).
export XCOMPAT_CONTAINER_ARGS="--network=host -v /etc/ssl/certs:/etc/ssl/certs:ro \
-e PIP_CERT=/etc/ssl/certs/ca-certificates.crt -e SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
-v $cache/wheels:/wheels:ro -e PIP_FIND_LINKS=/wheels -e PIP_COMPILE=0"
t0=$(stamp)
status=0
nice -n 10 "$PY" -m pytest tests/containers -p no:cacheprovider -q -rs --durations=5 || status=$?
record "tests" "$(since "$t0")"
if [ "$bench" = 1 ] && [ "$status" = 0 ]; then
    nice -n 10 "$PY" benchmarks/build_containers.py || status=$?
fi
exit "$status"
