//! The flags `build` and `resolve --lock` share ([`crate::cli::RequestArgs`], the versions, the
//! add-ons) turned into the pipeline's [`RequestOptions`]: plain values, each pin with where it
//! came from (its flag, or the environment variable that stood in for it). The pipeline then sets
//! the request up the same way for both commands ([`crate::pipeline::Build::request`]).

use std::path::PathBuf;

use crate::cli::{AddonArgs, FromEnv, RequestArgs, VersionArgs};
use crate::env;
use crate::pipeline::RequestOptions;

/// What a command's flags say of the request: `build`'s, or `resolve`'s with `--lock`.
pub(super) struct Asked<'a> {
    /// Upstream's positional arguments (`build` only).
    pub positional: &'a [String],
    /// `--kubernetes`.
    pub kubernetes: Option<String>,
    /// The component versions.
    pub versions: &'a FromEnv<VersionArgs>,
    /// `--arch`, as given.
    pub arches: &'a [String],
    /// `--output` (`build` only).
    pub output: Option<PathBuf>,
    /// The manifests, name, volume ID, date and CloudStack release.
    pub request: &'a RequestArgs,
    /// The add-ons the flags ask for.
    pub addons: &'a AddonArgs,
}

/// The request options `asked` for.
pub(super) fn options(asked: &Asked<'_>) -> RequestOptions {
    let (v, r) = (asked.versions, asked.request);
    // Where a pin came from, for the messages that name it.
    let from = |value: &Option<String>, id, flag: &'static str, var: &env::Var| {
        let origin = if v.from_env(id) { var.name } else { flag };
        value.clone().map(|value| (value, origin))
    };
    RequestOptions {
        positional: asked.positional.to_vec(),
        kubernetes: asked.kubernetes.clone(),
        kubernetes_label: None,
        cni: v.cni.clone(),
        crictl: v.crictl.clone(),
        etcd: v.etcd.clone(),
        csi: v.csi_version.clone(),
        autoscaler: from(
            &v.autoscaler_version,
            "autoscaler_version",
            "--autoscaler-version",
            &env::AUTOSCALER_VERSION,
        ),
        ccm: from(
            &v.ccm_version,
            "ccm_version",
            "--ccm-version",
            &env::CCM_VERSION,
        ),
        arches: asked.arches.to_vec(),
        output: asked.output.clone(),
        network: r.network.clone(),
        dashboard: r.dashboard.clone(),
        headlamp: r.headlamp.clone(),
        headlamp_version: r.headlamp_version.clone(),
        name: r.name.clone(),
        volume_id: r.volume_id.clone(),
        source_date_epoch: r.source_date_epoch,
        cloudstack: r.cloudstack.clone(),
        images: asked.addons.images.clone(),
        images_files: asked.addons.images_files.clone(),
        manifests: asked.addons.manifests.clone(),
    }
}
