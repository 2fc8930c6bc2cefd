# cks-iso — see README.md. `make demo` and `make test` are the two commands that matter.
SHELL := /bin/bash
CARGO ?= cargo
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# Debian packages the tests and the demo use: the real readers and servers we judge output with.
DEB_PACKAGES := docker-registry git xorriso genisoimage libarchive-tools p7zip-full skopeo \
	containerd time util-linux curl python3 python3-venv man-db zsh fish lintian
# The command each package provides, to tell whether it is already installed.
DEB_COMMANDS := docker-registry git xorriso isoinfo bsdtar 7z skopeo containerd /usr/bin/time unshare curl \
	python3 man zsh fish lintian
# The formats' own SBOM validators, from PyPI into a virtualenv the tests use (tests/build_e2e.rs),
# and `cryptography` for the independent image-signature oracle (tests/it/signatures.rs; Debian 12's
# python3-cryptography 38 lacks the certificate APIs it uses), and Sigstore's own client, the
# oracle that verifies the binaries' bundles offline (tests/it/signatures.rs).
SBOM_VENV := .venv-sbom
SBOM_PIP := cyclonedx-python-lib[json-validation]==11.12.0 spdx-tools==0.8.5 cryptography==48.0.0 sigstore==4.5.1

# Where cargo builds (CARGO_TARGET_DIR, build.target-dir, or ./target), asked of cargo itself.
TARGET_DIR := $(or $(shell $(CARGO) metadata --format-version 1 --no-deps 2>/dev/null | \
	sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p'),target)

# `make deb`: cargo-deb packages the release binary with the man pages and completions that binary
# generates into $(ASSETS). cargo-deb is installed by the target when missing. $(ASSETS) stays in
# the source tree whatever the target dir: Cargo.toml's cargo-deb assets name it relative to the
# package, while cargo-deb finds `target/release/…` in the real target dir itself.
RELEASE_BIN := $(TARGET_DIR)/release/cks-iso
ASSETS := target/assets
CARGO_DEB_VERSION := 3.8.0

# `make notices`: cargo-about writes THIRD-PARTY-NOTICES (the licence texts of every crate in the
# binary, from Cargo.lock, by about.toml's allow-list and about.hbs) and fails on a licence the
# list does not accept. The file is committed: the binary embeds it (`cks-iso licenses`), the .deb
# ships it, and `make test` (tests/it/packaging.rs) fails when Cargo.lock has moved past it or a
# shipped crate's licence is not on the list, without needing cargo-about.
CARGO_ABOUT_VERSION := 0.9.3

.PHONY: all deps build test lint doc demo bench fuzz clean assets deb test-deb notices

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
	@if $(SBOM_VENV)/bin/python -c 'import cyclonedx.validation.json, jsonschema, spdx_tools, cryptography, sigstore.verify' 2>/dev/null \
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

# The API documentation of every crate, with rustdoc's warnings (broken links, …) as errors.
doc:
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --no-deps --workspace --locked

test: deps lint doc
	$(CARGO) test --locked --workspace --no-fail-fast

# Man pages (cks-iso(1), the cks-iso-COMMAND(1) it lists, and theirs in turn, e.g.
# cks-iso-cache-export(1)) and completions, from the binary.
assets: build
	rm -rf $(ASSETS) && mkdir -p $(ASSETS)/man $(ASSETS)/completions
	set -o pipefail; $(RELEASE_BIN) man | gzip -9n > $(ASSETS)/man/cks-iso.1.gz
	set -o pipefail; \
	man_of() { [ -z "$$1" ] && { $(RELEASE_BIN) man; return; }; \
		$(RELEASE_BIN) man $$1 2>/dev/null || $(RELEASE_BIN) man $${1//-/ }; }; \
	pages() { man_of "$$1" | sed -n 's/^cks\\-iso\\-\([a-z\\-]*\)(1)$$/\1/p' | sed 's/\\-/-/g'; }; \
	todo=$$(pages ""); [ -n "$$todo" ] || { echo "make assets: cks-iso man lists no subcommand" >&2; exit 1; }; \
	while [ -n "$$todo" ]; do set -- $$todo; page=$$1; shift; todo="$$*"; \
		man_of $$page | gzip -9n > $(ASSETS)/man/cks-iso-$$page.1.gz || exit 1; \
		todo="$$todo $$(pages $$page)"; todo=$${todo# }; \
	done
	$(RELEASE_BIN) completions bash > $(ASSETS)/completions/cks-iso
	$(RELEASE_BIN) completions zsh > $(ASSETS)/completions/_cks-iso
	$(RELEASE_BIN) completions fish > $(ASSETS)/completions/cks-iso.fish
	gzip -9nc CHANGELOG.md > $(ASSETS)/changelog.gz
	gzip -9nc THIRD-PARTY-NOTICES > $(ASSETS)/THIRD-PARTY-NOTICES.gz
	set -o pipefail; version=$$($(RELEASE_BIN) --version | cut -d' ' -f2); \
	maintainer=$$(sed -n 's/^maintainer = "\(.*\)"$$/\1/p' Cargo.toml); \
	date=$$(git log -1 --format=%cD 2>/dev/null || date -R); \
	printf '%s\n' "cks-iso ($$version-1) unstable; urgency=medium" "" \
		"  * cks-iso $$version; changes in /usr/share/doc/cks-iso/changelog.gz." "" \
		" -- $$maintainer  $$date" > $(ASSETS)/changelog.Debian

deb: assets
	@command -v cargo-deb >/dev/null 2>&1 || { echo "make deb: installing cargo-deb $(CARGO_DEB_VERSION)"; \
		$(CARGO) install cargo-deb --version $(CARGO_DEB_VERSION) --locked; }
	rm -f $(TARGET_DIR)/debian/cks-iso_*.deb
	$(CARGO) deb --locked --no-build -p cks-iso

notices:
	@cargo-about --version 2>/dev/null | grep -qx "cargo-about $(CARGO_ABOUT_VERSION)" || { \
		echo "make notices: installing cargo-about $(CARGO_ABOUT_VERSION)"; \
		$(CARGO) install cargo-about --version $(CARGO_ABOUT_VERSION) --features cli --locked; }
	$(CARGO) about generate --locked --fail about.hbs -o THIRD-PARTY-NOTICES.tmp
	mv THIRD-PARTY-NOTICES.tmp THIRD-PARTY-NOTICES

# The package judged by lintian, dpkg-deb and man, and `cargo install --path .`; needs the release
# build, so it is its own target, which .ci/run calls after `make test`. The install runs here, not
# in a test: under `cargo test` the environment differs enough that build scripts rebuild the
# whole release tree, while from make it reuses the build `make deb` just made.
test-deb: deps deb
	$(CARGO) test --locked --test it -- --ignored packaging::
	root=$$(mktemp -d) && trap 'rm -rf "$$root"' EXIT && \
	$(CARGO) install --locked --path . --root "$$root" && \
	"$$root/bin/cks-iso" --version | grep -q "^cks-iso $$($(RELEASE_BIN) --version | cut -d' ' -f2)" && \
	echo "make test-deb: cargo install --path . works"

demo: deps
	RELEASE_DIR=$(TARGET_DIR)/release ./scripts/demo.sh

bench: deps build
	export RELEASE_DIR=$(TARGET_DIR)/release; ./bench/iso.sh && ./bench/build.sh && ./bench/pull.sh && \
		./bench/wan.sh && ./bench/signatures.sh

# Coverage-guided fuzzing of the parsers that read untrusted input (fuzz/fuzz_targets). cargo-fuzz
# needs nightly features; RUSTC_BOOTSTRAP lets the stable toolchain provide them.
FUZZ_SECONDS ?= 600
FUZZ_TARGETS ?= reference manifest www_authenticate git_reply kubeadm_constants versions_txt yaml lock iso_reader \
	sigstore_bundle trusted_root checkpoint rfc3161 iso_name intoto_statement
fuzz:
	@command -v cargo-fuzz >/dev/null 2>&1 || $(CARGO) install cargo-fuzz --locked
	@for t in $(FUZZ_TARGETS); do \
		echo "make fuzz: $$t for $(FUZZ_SECONDS) s"; \
		./fuzz/seed.sh $$t || exit 1; \
		RUSTC_BOOTSTRAP=1 $(CARGO) fuzz run $$t -- -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 \
			-timeout=10 || exit 1; \
	done

clean:
	$(CARGO) clean
