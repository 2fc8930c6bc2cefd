//! The checks of what signature verification needs, beside the mirrors and registries: the
//! trusted root the configuration names parses, and the Rekor server the build would ask
//! answers (through the mirrors, as a build reaches it).

use reqwest::Method;
use reqwest::header::HeaderMap;

use super::{Problem, Sink, chained, report};
use crate::config::Settings;
use crate::env;
use crate::fetch::{Download, probe, redact};

/// Reports the trusted root: the configured file parses as a Sigstore trusted root, or the
/// embedded public-good one is used.
pub fn trusted_root(sink: Sink<'_>, settings: &Settings) {
    let result = crate::trust::trusted_root(None, settings.trusted_root.as_deref())
        .map(|(_, _)| match &settings.trusted_root {
            Some(path) => format!("{} parses", path.display()),
            None => "Sigstore's public-good root (embedded)".to_owned(),
        })
        .map_err(|e| {
            let hint = e.hint().unwrap_or_else(|| {
                "point `trusted-root:` (or --trusted-root) at a Sigstore trusted_root.json".into()
            });
            Problem::new(chained(&e), hint)
        });
    report(sink, "trusted root", result);
}

/// Reports whether the Rekor server answers, when one is configured (`rekor-url:`,
/// `CKS_ISO_REKOR_URL`); the public one is left alone otherwise, as builds without a
/// configuration reach it only for signatures.
pub(super) async fn rekor(sink: Sink<'_>, settings: &Settings, download: &Download<'_>) {
    let Some(url) = env::CKS_ISO_REKOR_URL
        .get()
        .or_else(|| settings.rekor_url.clone())
    else {
        return;
    };
    let target = settings
        .mirrors
        .rewrite(&format!("{}/api/v1/log", url.trim_end_matches('/')));
    let hint = format!(
        "check `rekor-url:` ({}) and the network, or point --mirror at a reachable copy",
        env::CKS_ISO_REKOR_URL.name
    );
    let result = match probe(download, Method::GET, &target, &HeaderMap::new()).await {
        Ok(p) if p.status.is_server_error() => Err(Problem::new(
            format!("{} answers HTTP {}", redact(&target), p.status),
            hint,
        )),
        Ok(p) => Ok(super::answered(p.status.as_u16())),
        Err(e) => Err(Problem::new(chained(&e), hint)),
    };
    report(sink, &format!("rekor {}", redact(&url)), result);
}
