//! OCI images without a network: the one image model every source yields (references, digests,
//! manifests, platform choice) and the image archives every writer takes (`ctr import`,
//! `docker load` and skopeo read them).
//!
//! A crate of its own so that "archives never touch the network" is the compiler's rule: it has no
//! HTTP client and no async runtime. The registry client (in the `cks-iso` crate) is one source of
//! [`image::Image`]s among others (the cache, an archive).

pub mod archive;
pub mod image;
