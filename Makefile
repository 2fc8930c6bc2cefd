# cks-iso — see README.md. `make demo` and `make test` are the two commands that matter.
SHELL := /bin/bash
CARGO ?= cargo
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# Debian packages the tests and the demo use: the real readers and servers we judge output with.
DEB_PACKAGES := docker-registry git xorriso genisoimage libarchive-tools p7zip-full skopeo \
	containerd time util-linux curl python3 python3-venv man-db zsh fish lintian faketime
# The command each package provides, to tell whether it is already installed.
DEB_COMMANDS := docker-registry git xorriso isoinfo bsdtar 7z skopeo containerd /usr/bin/time unshare curl \
	python3 man zsh fish lintian faketime
# The formats' own SBOM validators, from PyPI into a virtualenv the tests use (tests/it/build/e2e.rs),
# and `cryptography` for the independent image-signature oracle (tests/it/signatures/images.rs; Debian 12's
# python3-cryptography 38 lacks the certificate APIs it uses), and Sigstore's own client, the
# oracle that verifies the binaries' bundles offline (tests/it/signatures/images.rs); markdown-it-py, the
# CommonMark reader scripts/check-doc-links.py judges the packages' shipped docs with.
SBOM_VENV := .venv-sbom
SBOM_PIP := cyclonedx-python-lib[json-validation]==11.12.0 spdx-tools==0.8.5 cryptography==48.0.0 sigstore==4.5.1 cs==5.2.0 \
	markdown-it-py==4.3.0

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
# ships it, and `make test` (tests/it/project/packaging.rs) fails when Cargo.lock has moved past it or a
# shipped crate's licence is not on the list, without needing cargo-about.
CARGO_ABOUT_VERSION := 0.9.3

# `make lint` fails on a dependency no source file uses (cargo-machete; a dependency used in a way
# it cannot see is listed under its crate's `[package.metadata.cargo-machete] ignored`, with why).
# `make deps` installs it, this version, when missing: it needs no nightly and reads no build.
CARGO_MACHETE_VERSION := 0.9.2

.PHONY: all deps deps-tools deps-python deps-machete build test lint doc demo bench fuzz clean assets gen-assets deb test-deb notices \
	dist-deps dist-bins dist rpm image test-dist test-repro

all: build

# `make deps`: the Debian tools (deps-tools) and the tests' Python validators. `make demo` needs
# only the tools: it never runs the validators, so it does not create their virtualenv.
deps: deps-tools deps-python deps-machete

deps-tools:
	@missing=0; for c in $(DEB_COMMANDS); do command -v $$c >/dev/null 2>&1 || missing=1; done; \
	python3 -c 'import ensurepip, venv' 2>/dev/null || missing=1; \
	if [ $$missing = 1 ]; then \
		echo "make deps: installing $(DEB_PACKAGES)"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $(DEB_PACKAGES); \
	else echo "make deps: all tools present"; fi
	@command -v cargo >/dev/null || { echo "make deps: cargo is missing; install Rust from rustup.rs" >&2; exit 1; }

deps-python: deps-tools
	@if $(SBOM_VENV)/bin/python -c 'import cyclonedx.validation.json, jsonschema, spdx_tools, cryptography, sigstore.verify, cs, markdown_it' 2>/dev/null \
		&& [ -x $(SBOM_VENV)/bin/pyspdxtools ]; then echo "make deps: SBOM validators present"; \
	else \
		echo "make deps: installing $(SBOM_PIP) into $(SBOM_VENV)"; \
		python3 -m venv $(SBOM_VENV) && \
		$(SBOM_VENV)/bin/pip install -q --disable-pip-version-check $(SBOM_PIP); \
	fi

deps-machete:
	@command -v cargo >/dev/null || { echo "make deps: cargo is missing; install Rust from rustup.rs" >&2; exit 1; }
	@cargo-machete --version 2>/dev/null | grep -qx "$(CARGO_MACHETE_VERSION)" || { \
		echo "make deps: installing cargo-machete $(CARGO_MACHETE_VERSION)"; \
		$(CARGO) install cargo-machete --version $(CARGO_MACHETE_VERSION) --locked; }

build:
	$(CARGO) build --release --locked

# Formatting, clippy (its warnings as errors, the function-length rule among them: Cargo.toml's
# [workspace.lints], clippy.toml) and no unused dependency.
lint: deps-machete
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --locked --workspace --all-targets -- -D warnings
	$(CARGO) machete

# The API documentation of every crate, with rustdoc's warnings (broken links, …) as errors.
doc:
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --no-deps --workspace --locked

# When this make started, for the time `make test` states.
MAKE_START := $(shell date +%s)

# `make test` ends with one line totalling every test binary's `test result:` line (cargo prints
# one per binary, the last a doc-test binary's, often `0 passed`), and the time since make
# started; it exits with cargo's status. .ci/run sums the same lines over test and test-deb.
test: deps lint doc
	@log=$$(mktemp); \
	$(CARGO) test --locked --workspace --no-fail-fast 2>&1 | tee "$$log"; status=$${PIPESTATUS[0]}; \
	awk -v secs=$$(( $$(date +%s) - $(MAKE_START) )) \
		'/^test result:/ { for (i = 1; i < NF; i++) { if ($$(i+1) ~ /^passed/) p += $$i; \
			if ($$(i+1) ~ /^failed/) f += $$i; if ($$(i+1) ~ /^ignored/) g += $$i } } \
		END { printf "make test: %d passed, %d failed, %d ignored (%d s)\n", p, f, g, secs }' "$$log"; \
	rm -f "$$log"; exit $$status

# Man pages (cks-iso(1), the cks-iso-COMMAND(1) it lists, and theirs in turn, e.g.
# cks-iso-cache-export(1)) and completions, from the binary.
assets: build
	$(MAKE) --no-print-directory gen-assets

# The assets of `make assets`, generated by $(ASSETS_BIN) into $(ASSETS): `make dist` has them
# written by its static x86_64 binary into its own directory, without a glibc release build.
ASSETS_BIN ?= $(RELEASE_BIN)
gen-assets:
	rm -rf $(ASSETS) && mkdir -p $(ASSETS)/man $(ASSETS)/completions
	set -o pipefail; $(ASSETS_BIN) man | gzip -9n > $(ASSETS)/man/cks-iso.1.gz
	set -o pipefail; \
	man_of() { [ -z "$$1" ] && { $(ASSETS_BIN) man; return; }; \
		$(ASSETS_BIN) man $$1 2>/dev/null || $(ASSETS_BIN) man $${1//-/ }; }; \
	pages() { man_of "$$1" | sed -n 's/^cks\\-iso\\-\([a-z\\-]*\)(1)$$/\1/p' | sed 's/\\-/-/g'; }; \
	todo=$$(pages ""); [ -n "$$todo" ] || { echo "make assets: cks-iso man lists no subcommand" >&2; exit 1; }; \
	while [ -n "$$todo" ]; do set -- $$todo; page=$$1; shift; todo="$$*"; \
		man_of $$page | gzip -9n > $(ASSETS)/man/cks-iso-$$page.1.gz || exit 1; \
		todo="$$todo $$(pages $$page)"; todo=$${todo# }; \
	done
	$(ASSETS_BIN) completions bash > $(ASSETS)/completions/cks-iso
	$(ASSETS_BIN) completions zsh > $(ASSETS)/completions/_cks-iso
	$(ASSETS_BIN) completions fish > $(ASSETS)/completions/cks-iso.fish
	gzip -9nc CHANGELOG.md > $(ASSETS)/changelog.gz
	set -o pipefail; version=$$($(ASSETS_BIN) --version | cut -d' ' -f2); \
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
	$(CARGO) test --locked --test it -- --ignored project::debian_package::
	root=$$(mktemp -d) && trap 'rm -rf "$$root"' EXIT && \
	$(CARGO) install --locked --path . --root "$$root" && \
	"$$root/bin/cks-iso" --version | grep -q "^cks-iso $$($(RELEASE_BIN) --version | cut -d' ' -f2)" && \
	echo "make test-deb: cargo install --path . works"

demo: deps-tools
	RELEASE_DIR=$(TARGET_DIR)/release ./scripts/demo.sh

bench: deps build
	export RELEASE_DIR=$(TARGET_DIR)/release; ./bench/iso.sh && ./bench/build.sh && ./bench/pull.sh && ./bench/push.sh && \
		./bench/wan.sh && ./bench/tls.sh && ./bench/signatures.sh

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

# `make dist`: static, stripped musl binaries for x86_64 and aarch64, cross-built on an x86_64 host
# (the toolchain's targets, Debian's C compilers for ring's C: musl-gcc and aarch64-linux-gnu-gcc
# with Rust's own self-contained musl crt and libc), each in cks-iso-<version>-<target>.tar.gz with
# the man pages, completions, README, LICENSE and THIRD-PARTY-NOTICES; beside them a CycloneDX
# SBOM per target (cargo-cyclonedx, from Cargo.lock) and SHA256SUMS. Reproducible: every date is
# SOURCE_DATE_EPOCH (the commit's), members sorted, owners 0. scripts/dist.sh says how.
# `make test-dist` judges them (scripts/test-dist.sh), the aarch64 binary under qemu-aarch64.
DIST_TARGETS := x86_64-unknown-linux-musl aarch64-unknown-linux-musl
DIST := $(TARGET_DIR)/dist
VERSION := $(shell sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"$$/\1/p' Cargo.toml)
# libc6-dev-arm64-cross: the aarch64 C headers ring's C includes (stdint.h and what it pulls in);
# gcc-aarch64-linux-gnu only recommends them, and --no-install-recommends leaves them out.
DIST_DEB_PACKAGES := musl-tools gcc-aarch64-linux-gnu binutils-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user \
	rpm rpmlint file ca-certificates
DIST_DEB_COMMANDS := musl-gcc aarch64-linux-gnu-gcc aarch64-linux-gnu-ar qemu-aarch64 rpmbuild rpmlint file \
	update-ca-certificates
DIST_DEB_FILES := /usr/aarch64-linux-gnu/include/bits/libc-header-start.h
# A debug build: it runs once per `make dist`, in seconds, and compiles in a fraction of the
# time a release build of it takes on a 2-core CI machine.
CARGO_CYCLONEDX_VERSION := 0.5.9
CARGO_HOME ?= $(HOME)/.cargo
# The date of everything dist writes: SOURCE_DATE_EPOCH when set, else the last commit's. Passed
# to the dist recipes only (`make test` keeps its own clock).
DIST_EPOCH := $(or $(SOURCE_DATE_EPOCH),$(shell git log -1 --format=%ct 2>/dev/null),0)
# Paths in panic messages say `src/…` and `~/.cargo/…`, not where this checkout or the builder's
# home is: the binaries do not depend on either.
DIST_RUSTFLAGS := -C target-feature=+crt-static -C link-self-contained=yes -C strip=symbols \
	--remap-path-prefix=$(CURDIR)=. --remap-path-prefix=$(CARGO_HOME)=~/.cargo

dist-deps: deps
	@missing=0; for c in $(DIST_DEB_COMMANDS); do command -v $$c >/dev/null 2>&1 || missing=1; done; \
	for f in $(DIST_DEB_FILES); do [ -e $$f ] || missing=1; done; \
	if [ $$missing = 1 ]; then \
		echo "make dist-deps: installing $(DIST_DEB_PACKAGES)"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $(DIST_DEB_PACKAGES); \
	else echo "make dist-deps: cross compilers, qemu-user and rpm present"; fi
	@installed=$$(rustup target list --installed); for t in $(DIST_TARGETS); do \
		grep -qx $$t <<< "$$installed" || rustup target add $$t || exit 1; done
	@$(CARGO) cyclonedx --version 2>/dev/null | grep -qx "cargo-cyclonedx-cyclonedx $(CARGO_CYCLONEDX_VERSION)" || { \
		echo "make dist-deps: installing cargo-cyclonedx $(CARGO_CYCLONEDX_VERSION)"; \
		$(CARGO) install cargo-cyclonedx --version $(CARGO_CYCLONEDX_VERSION) --locked --debug; }

# Each target's C compiler, linker and flags; `make dist DIST_TARGETS=…` builds and packs a subset
# (`make test-repro` rebuilds x86_64 alone by default).
DIST_ENV.x86_64-unknown-linux-musl = CC_x86_64_unknown_linux_musl=musl-gcc \
	CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_RUSTFLAGS="$(DIST_RUSTFLAGS)"
DIST_ENV.aarch64-unknown-linux-musl = CC_aarch64_unknown_linux_musl=aarch64-linux-gnu-gcc \
	AR_aarch64_unknown_linux_musl=aarch64-linux-gnu-ar CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER=aarch64-linux-gnu-gcc \
	CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_RUSTFLAGS="$(DIST_RUSTFLAGS)"

dist-bins: dist-deps
	$(foreach t,$(DIST_TARGETS),$(DIST_ENV.$(t)) $(CARGO) build --release --locked -p cks-iso --target $(t) && ) true

dist: dist-bins
	$(MAKE) --no-print-directory gen-assets ASSETS_BIN=$(TARGET_DIR)/x86_64-unknown-linux-musl/release/cks-iso \
		ASSETS=$(DIST)/assets
	SOURCE_DATE_EPOCH=$(DIST_EPOCH) TARGET_DIR=$(TARGET_DIR) DIST=$(DIST) ./scripts/dist.sh $(DIST_TARGETS)

# `make rpm`: one RPM per target for EL8/EL9 from the archives (rpm/cks-iso.spec.in).
rpm: dist
	SOURCE_DATE_EPOCH=$(DIST_EPOCH) DIST=$(DIST) ./scripts/rpm.sh $(DIST_TARGETS)

# `make image`: cks-iso's multi-arch container image (linux/amd64, linux/arm64), written by
# crates/cks-iso-image with cks-iso-oci's archive writer, as an OCI archive and layout in $(DIST).
IMAGE_CA_BUNDLE ?= /etc/ssl/certs/ca-certificates.crt
image: dist
	$(CARGO) run --locked -q -p cks-iso-image -- --out $(DIST) --epoch $(DIST_EPOCH) --ca-bundle $(IMAGE_CA_BUNDLE) \
		--version $(VERSION) --revision $$(git rev-parse HEAD) \
		--amd64 $(TARGET_DIR)/x86_64-unknown-linux-musl/release/cks-iso \
		--arm64 $(TARGET_DIR)/aarch64-unknown-linux-musl/release/cks-iso

# `make test-repro`: a second checkout of HEAD (a temporary `git worktree`, or REPRO_DIR, kept
# for the next run) with its own target dir builds REPRO_TARGETS and packs them again; binaries,
# archives and SBOMs must be byte-identical to this checkout's (scripts/test-repro.sh). One full
# release build more per target: x86_64 alone by default, `REPRO_TARGETS="$(DIST_TARGETS)"` for both.
REPRO_TARGETS ?= x86_64-unknown-linux-musl
REPRO_DIR ?=
test-repro: dist
	SOURCE_DATE_EPOCH=$(DIST_EPOCH) TARGET_DIR=$(TARGET_DIR) DIST=$(DIST) REPRO_DIR=$(REPRO_DIR) \
		./scripts/test-repro.sh $(REPRO_TARGETS)

# Judges all of it: the archives (and the aarch64 binary under qemu-aarch64), the RPMs (rpmlint,
# rpm -qpl/-qpi, installed into an empty root), the image (skopeo, a private containerd) and a
# rebuild in another checkout (test-repro).
test-dist: dist rpm image test-repro
	SOURCE_DATE_EPOCH=$(DIST_EPOCH) TARGET_DIR=$(TARGET_DIR) DIST=$(DIST) ./scripts/test-dist.sh $(DIST_TARGETS)
	SOURCE_DATE_EPOCH=$(DIST_EPOCH) DIST=$(DIST) ./scripts/test-rpm.sh $(DIST_TARGETS)
	SOURCE_DATE_EPOCH=$(DIST_EPOCH) TARGET_DIR=$(TARGET_DIR) DIST=$(DIST) IMAGE_CA_BUNDLE=$(IMAGE_CA_BUNDLE) ./scripts/test-image.sh
	DIST=$(DIST) ./scripts/test-install-docs.sh
