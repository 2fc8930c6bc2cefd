//! HTTP as cks-iso speaks it (src/fetch, src/upstream): verified downloads through mirrors and
//! CDN redirects, retries under seeded random faults (the chaos soak), and no connection ever
//! leaving loopback. A new test of downloads, retries or proxies goes here; one of the registry
//! protocol goes in `registry/`.

mod chaos_soak;
mod no_internet;
mod upstream_downloads;
