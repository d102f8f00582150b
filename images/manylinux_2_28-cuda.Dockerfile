# syntax=docker/dockerfile:1
# Builder image for CUDA extension wheels: manylinux_2_28 (glibc 2.28, the policy the
# wheels are repaired to) plus the CUDA toolkit copied from NVIDIA's RHEL 8 image.
# cibuildwheel uses it as CIBW_MANYLINUX_X86_64_IMAGE for the CUDA cells of the plan:
#   docker build -f images/manylinux_2_28-cuda.Dockerfile -t ghcr.io/OWNER/manylinux_2_28-cuda:12.6 .
#   XCOMPAT_CUDA_BUILDER_IMAGE=ghcr.io/OWNER/manylinux_2_28-cuda:{toolkit} xcompat build --backend cibuildwheel ...
# Both bases are pinned by digest; the comment above each FROM names the tag it was read from.
# Refresh: images/refresh-digests.sh (needs registry access).

# tag: nvidia/cuda:12.6.3-devel-rockylinux8 (linux/amd64)
FROM nvidia/cuda:12.6.3-devel-rockylinux8@sha256:83bc2b9fcf3ab1a4e324f81e962b58957370fa71f7ac61e3a24af399a0ba7595 AS cuda

# tag: quay.io/pypa/manylinux_2_28_x86_64:latest
FROM quay.io/pypa/manylinux_2_28_x86_64@sha256:aba9efd7dec389abd76506219e461014015b1c1cb95f2a36f27946128910dd07

# The toolkit only (compiler, headers, static and stub libraries): nothing from the
# driver, so the build cannot link against a driver library by accident.
COPY --from=cuda /usr/local/cuda /usr/local/cuda
ENV CUDA_HOME=/usr/local/cuda \
    PATH=/usr/local/cuda/bin:${PATH} \
    LIBRARY_PATH=/usr/local/cuda/lib64/stubs

# ccache speeds up repeated CI builds when the cache folder is mounted or restored.
RUN dnf install -y ccache && dnf clean all \
    && nvcc --version
