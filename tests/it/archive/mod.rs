//! Image archives (crates/cks-iso-oci's archive/): the writer's layout, determinism and refusals,
//! memory that stays flat whatever the blob size, and the archives read by skopeo and containerd.
//! A new test of what an archive holds or how it is written goes here.

mod memory;
mod real_tools;
mod writer;
