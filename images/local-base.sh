#!/usr/bin/env bash
# Make a Debian bookworm base image without any registry: debootstrap a minimal root file
# system with the toolchain a builder needs, add this host's CA bundle (so pip and git work
# behind a TLS-inspecting proxy) and `docker import` it.
#
#   images/local-base.sh [IMAGE_NAME]        (default: xcompat-local-base; needs root)
#
# Environment: DEBIAN_MIRROR (default: the first Debian mirror in /etc/apt/sources.list*; with
# none there, no mirror is passed and debootstrap uses its own default), DEBIAN_SUITE (default
# bookworm), DOCKER (default docker), WORK_DIR (where the root file system is made; default a
# temporary folder, removed after).
# Then build images FROM it:
#   docker build -f images/builder-debian.Dockerfile --build-arg BASE=xcompat-local-base .
#   docker build -f images/runner-cpu.Dockerfile --build-arg BASE=xcompat-local-base .
set -euo pipefail

name=${1:-xcompat-local-base}
suite=${DEBIAN_SUITE:-bookworm}
docker=${DOCKER:-docker}
packages=ca-certificates,gcc,g++,make,python3,python3-venv,python3-dev,patchelf,file,git

debian_mirror() {
    # deb822 (URIs:) and one-line (deb URL SUITE ...) sources; security and updates excluded.
    local files uri
    files=$(ls /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
    [ -n "$files" ] || return 0
    # shellcheck disable=SC2086
    uri=$( (grep -hE '^\s*URIs:' $files | awk '{print $2}'; grep -hE '^\s*deb\s' $files | awk '{for (i = 2; i <= NF; i++) if ($i ~ /:\/\//) {print $i; break}}') \
          | grep -E '/debian/?$' | grep -v security | head -1 || true)
    echo "${uri%/}"
}

# With no mirror set here or in this host's apt sources, debootstrap gets no mirror argument
# and uses its own default.
mirror=${DEBIAN_MIRROR:-$(debian_mirror)}
command -v debootstrap >/dev/null || { echo "local-base.sh: debootstrap is not installed (apt-get install debootstrap)" >&2; exit 5; }
[ "$(id -u)" = 0 ] || { echo "local-base.sh: debootstrap needs root" >&2; exit 5; }

own_work=
if [ -z "${WORK_DIR:-}" ]; then
    WORK_DIR=$(mktemp -d "${TMPDIR:-/tmp}/xcompat-rootfs.XXXXXX")
    own_work=1
fi
cleanup() { rm -rf "${rootfs:-}"; if [ -n "$own_work" ]; then rm -rf "$WORK_DIR"; fi; }
trap cleanup EXIT
rootfs=$WORK_DIR/rootfs

echo "local-base.sh: debootstrap $suite from ${mirror:-the default mirror of debootstrap} into $rootfs"
debootstrap --variant=minbase --include="$packages" "$suite" "$rootfs" ${mirror:+"$mirror"} >"$WORK_DIR/debootstrap.log" 2>&1 \
    || { tail -20 "$WORK_DIR/debootstrap.log" >&2; echo "local-base.sh: debootstrap failed (log above)" >&2; exit 4; }
# What a container does not need: documentation, package caches and lists.
rm -rf "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* \
       "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
# This host's CA bundle replaces the base's, so HTTPS works through the same proxy as here.
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
    cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
fi
tar -C "$rootfs" -c . | "$docker" import \
    -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    -c 'ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt' \
    -c 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
    -c 'CMD ["/bin/bash"]' - "$name" >/dev/null
echo "local-base.sh: imported $name"
