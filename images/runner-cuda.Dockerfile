# syntax=docker/dockerfile:1
# Runtime image for self-hosted CUDA test runners: Python, the toolchain to JIT-build the
# conformance kernels and torch extensions (gcc, nvcc, ninja, ccache), torch built for
# CUDA, and xcompat installed from this repository.
#   docker build -f images/runner-cuda.Dockerfile -t xcompat-runner-cuda .   (from the repository root)
#   docker run --gpus all --rm xcompat-runner-cuda xcompat probe

# tag: nvidia/cuda:12.8.1-devel-ubuntu24.04
FROM nvidia/cuda:12.8.1-devel-ubuntu24.04@sha256:4b9ed5fa8361736996499f64ecebf25d4ec37ff56e4d11323ccde10aa36e0c43

ARG TORCH_VERSION=2.13.0
ARG TORCH_INDEX=https://download.pytorch.org/whl/cu128
ENV DEBIAN_FRONTEND=noninteractive \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/venv/bin:${PATH} \
    CUDA_HOME=/usr/local/cuda

RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-dev python3-venv build-essential \
       ninja-build ccache git patchelf openssh-client \
    && rm -rf /var/lib/apt/lists/* \
    && python3 -m venv /opt/venv

# The framework first (large, changes rarely), then xcompat from the repository.
RUN pip install --no-cache-dir "torch==${TORCH_VERSION}" --index-url "${TORCH_INDEX}"
COPY . /opt/xcompat-src
RUN pip install --no-cache-dir "/opt/xcompat-src[build,abi,coverage,torch]" \
    && xcompat --version

WORKDIR /work
