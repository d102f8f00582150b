# syntax=docker/dockerfile:1
# Runtime image for self-hosted ROCm test runners: Python, hipcc and the host toolchain
# for JIT builds, torch built for ROCm, and xcompat installed from this repository.
#   docker build -f images/runner-rocm.Dockerfile -t xcompat-runner-rocm .   (from the repository root)
#   docker run --device=/dev/kfd --device=/dev/dri --group-add video --rm xcompat-runner-rocm xcompat probe

# tag: rocm/dev-ubuntu-24.04:6.4.4 (linux/amd64)
FROM rocm/dev-ubuntu-24.04@sha256:31418ac10a3769a71eaef330c07280d1d999d7074621339b8f93c484c35f6078

ARG TORCH_VERSION=2.13.0
ARG TORCH_INDEX=https://download.pytorch.org/whl/rocm6.4
ENV DEBIAN_FRONTEND=noninteractive \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/venv/bin:/opt/rocm/bin:${PATH} \
    ROCM_PATH=/opt/rocm

RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-dev python3-venv build-essential \
       ninja-build ccache git patchelf openssh-client \
    && rm -rf /var/lib/apt/lists/* \
    && python3 -m venv /opt/venv

RUN pip install --no-cache-dir "torch==${TORCH_VERSION}" --index-url "${TORCH_INDEX}"
COPY . /opt/xcompat-src
RUN pip install --no-cache-dir "/opt/xcompat-src[build,abi,coverage,torch]" \
    && xcompat --version

WORKDIR /work
