# cks-iso — see README.md. `make demo` and `make test` are the two commands that matter.
SHELL := /bin/bash
CARGO ?= cargo
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# Debian packages the tests and the demo use: the real readers and servers we judge output with.
DEB_PACKAGES := docker-registry git xorriso genisoimage libarchive-tools p7zip-full skopeo \
	containerd time util-linux curl
# The command each package provides, to tell whether it is already installed.
DEB_COMMANDS := docker-registry git xorriso isoinfo bsdtar 7z skopeo containerd /usr/bin/time unshare curl

.PHONY: all deps build test lint doc demo bench clean

all: build

deps:
	@missing=0; for c in $(DEB_COMMANDS); do command -v $$c >/dev/null 2>&1 || missing=1; done; \
	if [ $$missing = 1 ]; then \
		echo "make deps: installing $(DEB_PACKAGES)"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $(DEB_PACKAGES); \
	else echo "make deps: all tools present"; fi
	@command -v cargo >/dev/null || { echo "make deps: cargo is missing; install Rust from rustup.rs" >&2; exit 1; }

build:
	$(CARGO) build --release --locked

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --locked --workspace --all-targets -- -D warnings

# The API documentation of every crate, with rustdoc's warnings (broken links, …) as errors.
doc:
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --no-deps --workspace --locked

test: deps lint
	$(CARGO) test --locked --workspace

demo: deps
	./scripts/demo.sh

bench: deps build
	./bench/iso.sh
	./bench/pull.sh

clean:
	$(CARGO) clean
