//! Add-on content (`build --image`, `--images-file`, `--manifest`; the domain's plan/addons.rs):
//! extra images and manifests shipped and recorded, held to the signature rules core images are
//! held to, and where a Headlamp release's image comes from. A new test of what a user adds to
//! an ISO goes here; a hostile add-on goes in `hostile/`.

/// Extras carried through `cache export --locked` and `import`, rebuilt offline.
mod air_gap;
/// Extras bundled, imported, locked, listed and diffed; owned names and missing arches refused.
pub(crate) mod content;
/// Where a Headlamp release's image comes from.
mod headlamp_source;
/// `resolve` sizing extras from their manifests without downloading a layer.
mod resolve;
/// Extras held to the signature rules core images are held to.
mod trust;
