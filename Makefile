# cks-iso — see README.md. `make demo` and `make test` are the two commands that matter.
SHELL := /bin/bash
CARGO ?= cargo
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# Debian packages the tests and the demo use: the real readers and servers we judge output with.
DEB_PACKAGES := docker-registry git xorriso genisoimage libarchive-tools p7zip-full skopeo \
	containerd time util-linux curl python3 python3-venv
# The command each package provides, to tell whether it is already installed.
DEB_COMMANDS := docker-registry git xorriso isoinfo bsdtar 7z skopeo containerd /usr/bin/time unshare curl \
	python3
# The formats' own SBOM validators, from PyPI into a virtualenv the tests use (tests/build_e2e.rs),
# and `cryptography` for the independent image-signature oracle (tests/signatures.rs; Debian 12's
# python3-cryptography 38 lacks the certificate APIs it uses).
SBOM_VENV := .venv-sbom
SBOM_PIP := cyclonedx-python-lib[json-validation]==11.12.0 spdx-tools==0.8.5 cryptography==48.0.0

.PHONY: all deps build test lint demo bench clean

all: build

deps:
	@missing=0; for c in $(DEB_COMMANDS); do command -v $$c >/dev/null 2>&1 || missing=1; done; \
	python3 -c 'import ensurepip, venv' 2>/dev/null || missing=1; \
	if [ $$missing = 1 ]; then \
		echo "make deps: installing $(DEB_PACKAGES)"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $(DEB_PACKAGES); \
	else echo "make deps: all tools present"; fi
	@command -v cargo >/dev/null || { echo "make deps: cargo is missing; install Rust from rustup.rs" >&2; exit 1; }
	@if $(SBOM_VENV)/bin/python -c 'import cyclonedx.validation.json, jsonschema, spdx_tools, cryptography' 2>/dev/null \
		&& [ -x $(SBOM_VENV)/bin/pyspdxtools ]; then echo "make deps: SBOM validators present"; \
	else \
		echo "make deps: installing $(SBOM_PIP) into $(SBOM_VENV)"; \
		python3 -m venv $(SBOM_VENV) && \
		$(SBOM_VENV)/bin/pip install -q --disable-pip-version-check $(SBOM_PIP); \
	fi

build:
	$(CARGO) build --release --locked

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --locked --workspace --all-targets -- -D warnings

test: deps lint
	$(CARGO) test --locked --workspace

demo: deps
	./scripts/demo.sh

bench: deps build
	./bench/iso.sh
	./bench/pull.sh

clean:
	$(CARGO) clean
