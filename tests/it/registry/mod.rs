//! The OCI distribution client (src/registry) against Debian's docker-registry: `pull` through
//! mirrors, TLS and token fronts, faults, ranged blob fetches, storage redirects, credentials and
//! where they may go, and `push` with its signatures. A new test of talking to a registry goes
//! here; one of judging a signature goes in `signatures/`.

mod credentials;
mod credentials_reach;
mod faults;
mod pull;
mod push;
mod push_identity;
mod push_list;
mod push_signatures;
mod ranged_pull;
mod tls_storage;
