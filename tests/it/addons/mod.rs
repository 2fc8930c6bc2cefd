//! Add-on content (`build --image`, `--images-file`, `--manifest`; the domain's plan/addons.rs):
//! extra images and manifests shipped and recorded, held to the signature rules core images are
//! held to, and where a Headlamp release's image comes from. A new test of what a user adds to
//! an ISO goes here; a hostile add-on goes in `hostile/`.

pub(crate) mod content;
mod headlamp_source;
mod trust;
