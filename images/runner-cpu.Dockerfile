# syntax=docker/dockerfile:1
# Runtime image for CPU test runners: Python, gcc/g++ for JIT builds, the CPU build of
# torch, and xcompat installed from this repository.
#   docker build -f images/runner-cpu.Dockerfile -t xcompat-runner-cpu .   (from the repository root)

# tag: python:3.12-slim-bookworm
FROM python:3.12-slim-bookworm@sha256:34386ef0cb081344d7ec1c103ba398e6e9f64e9ab3a1509accc92a4e24a07258

ARG TORCH_VERSION=2.13.0
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
ENV DEBIAN_FRONTEND=noninteractive \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/venv/bin:${PATH}

RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential ninja-build ccache git patchelf \
       openssh-client \
    && rm -rf /var/lib/apt/lists/* \
    && python3 -m venv /opt/venv

RUN pip install --no-cache-dir "torch==${TORCH_VERSION}" --index-url "${TORCH_INDEX}"
COPY . /opt/xcompat-src
RUN pip install --no-cache-dir "/opt/xcompat-src[build,abi,coverage,torch]" \
    && xcompat --version

WORKDIR /work
