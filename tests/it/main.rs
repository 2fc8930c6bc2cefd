//! The one integration test binary of cks-iso: every suite is a module here, so the dependency
//! tree is linked once and `support` compiles once. Each module opens with what it protects;
//! run one with `cargo test --test it MODULE::` (e.g. `cargo test --test it build_e2e::`).

mod support;

mod archive;
mod archive_memory;
mod autoscaler_tags;
mod build_e2e;
mod cache_cmd;
mod chaos_soak;
mod cloudstack_profiles;
mod cloudstack_releases;
mod conformance;
mod crash_and_concurrency;
mod diff;
mod diff_e2e;
mod doctor;
mod full_disk;
mod hostile;
mod hostile_bounds;
mod hostile_cache;
mod iso_errors;
mod iso_large;
mod iso_readers;
mod iso_reproducible;
mod kubeadm_images;
mod lock_offline;
mod log_json;
mod messages;
mod no_internet;
mod packaging;
mod parser_properties;
mod ranged_pull;
mod real_tools;
mod registry_credentials;
mod registry_faults;
mod registry_pull;
mod resolve_cli;
mod rootless;
mod sbom_sources;
mod signature_properties;
mod signatures;
mod upstream_downloads;
mod verify;
mod verify_bundle;
mod verify_image;
mod version_labels;
