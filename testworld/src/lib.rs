//! The local upstream world: stand-ins for every upstream cks-iso talks to, built from real server
//! software on loopback, for the tests and for `make demo` (see `spec/test-world.md`).
//!
//! It is deliberately independent of the `cks-iso` crate: it generates and serves content with its
//! own small code, so the tests judge cks-iso against an oracle that does not share its bugs.
//!
//! - [`git`]: `git http-backend` serving a bare repository with autoscaler-shaped tags (the
//!   stand-in for `git ls-remote https://github.com/kubernetes/autoscaler`).
//! - [`registry`]: Debian's `docker-registry` (plain and TLS) and a bearer-token front with
//!   redirected blobs, the stand-ins for registry.k8s.io, docker.io, quay.io and ghcr.io.
//! - [`basic_front`]: a registry asking for Basic authentication, recording what it was sent.
//! - [`images`]: the generated image corpus and the push code that puts it into a registry.
//! - [`bench`](mod@bench): the large generated image set `make bench` pulls.
//! - [`http`] and [`server`]: the world's own minimal HTTP/1.1 client and server.
//! - [`upstream`]: github.com release downloads, dl.k8s.io and raw.githubusercontent.com, serving
//!   a generated snapshot (ELF binaries, tarballs, manifests, checksum files) with CDN redirects.
//! - [`world`]: all of them together, populated with every image a `cks-iso build` pulls for
//!   amd64 and arm64, and the cks-iso configuration that points at them.
//! - [`sigstore`]: a per-run Sigstore (CAs, CT log, Rekor SETs, trusted root) that signs the
//!   registry.k8s.io images like Kubernetes' promoter; [`sig_tags`] stores those signatures as
//!   cosign's `.sig` tags.
//! - [`rekor_v2`] and [`tsa`]: a Rekor v2 log and an RFC 3161 timestamp authority, and the
//!   Sigstore bundles a publisher ships beside files signed onto them.
//! - [`oidc`] and [`fulcio`]: an OpenID Connect issuer minting identity tokens and a Fulcio
//!   issuing short-lived leaves for them, so that keyless signing (and `POST` to the [`rekor`]
//!   log) runs against stand-ins that answer as the real services do.
//! - [`referrers`]: image signatures the cosign 3 way (a DSSE bundle attached as an OCI 1.1
//!   referrer, listed in the tag-schema fallback index), logged on Rekor v1 or on the Rekor v2
//!   log with a timestamp.
//! - [`cloudstack`]: the CloudStack management server's API for Kubernetes supported versions
//!   (signature check, envelopes, per-zone ISO downloads, async deletes), and a server for ISOs.
//! - [`faults`]: a programmable fault-injecting HTTP/1.1 proxy in front of any of them.
//! - [`relay`]: a TCP relay that counts connections (TLS and HTTP/2 pass through it untouched)
//!   and can delay every byte, for a far path where the kernel has no `netem`.
//! - [`tls_server`]: an HTTPS server with keep-alive that counts connections and resumed TLS
//!   sessions, the stand-in for a storage host a registry redirects blob downloads to.

pub mod basic_front;
pub mod bench;
pub mod chaos;
pub mod cloudstack;
pub mod faults;
pub mod fulcio;
pub mod git;
pub mod http;
pub mod images;
pub mod labels;
pub mod oidc;
pub mod referrers;
pub mod registry;
pub mod rekor;
pub mod rekor_v2;
pub mod relay;
pub mod scopes;
pub mod server;
pub mod shaper;
pub mod sig_tags;
pub mod sigstore;
pub mod tls_server;
pub mod tsa;
pub mod upstream;
pub mod world;
