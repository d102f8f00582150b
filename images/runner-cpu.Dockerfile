# syntax=docker/dockerfile:1
# Runtime image for CPU test runners: Python, gcc/g++ for JIT builds, the CPU build of
# torch, and xcompat installed from this repository.
#   docker build -f images/runner-cpu.Dockerfile -t xcompat-runner-cpu .   (from the repository root)
# From a local Debian base and a local wheel folder served over HTTP (no registry, no
# PyTorch index; see docs/images.md):
#   docker build --network=host -f images/runner-cpu.Dockerfile --build-arg BASE=xcompat-local-base \
#     --build-arg TORCH_FIND_LINKS=http://127.0.0.1:8765/ -t xcompat-runner-cpu .

# tag: python:3.12-slim-bookworm
ARG BASE=python:3.12-slim-bookworm@sha256:34386ef0cb081344d7ec1c103ba398e6e9f64e9ab3a1509accc92a4e24a07258
FROM ${BASE}

ARG TORCH_VERSION=2.13.0
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
# A URL of a wheel folder (pip --find-links) to take torch from instead of TORCH_INDEX
# (its dependencies still come from the package index).
ARG TORCH_FIND_LINKS=
ENV DEBIAN_FRONTEND=noninteractive \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/venv/bin:${PATH}

RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential ninja-build ccache git patchelf \
       openssh-client \
    && rm -rf /var/lib/apt/lists/* \
    && python3 -m venv /opt/venv \
    && pip install --no-cache-dir --upgrade pip

RUN if [ -n "${TORCH_FIND_LINKS}" ]; then \
        pip install --no-cache-dir "torch==${TORCH_VERSION}" --find-links "${TORCH_FIND_LINKS}"; \
    else \
        pip install --no-cache-dir "torch==${TORCH_VERSION}" --index-url "${TORCH_INDEX}"; \
    fi
COPY . /opt/xcompat-src
RUN pip install --no-cache-dir "/opt/xcompat-src[build,abi,coverage,torch]" \
    && xcompat --version

WORKDIR /work
