//! Where the operator publishes ISOs for CloudStack to download: a plain web server over a
//! directory (`GET` and `HEAD` with the file's length), plus `/redirect/<file>` answering `302`
//! to `/<file>`, the shape of a release URL that redirects to a CDN.

use std::path::PathBuf;

use crate::server::{HttpServer, Outgoing};

/// A file server for ISOs; stops when dropped.
pub struct IsoHost {
    server: HttpServer,
}

impl IsoHost {
    /// Serves the files of `dir` (flat) on an ephemeral loopback port.
    pub fn start(dir: PathBuf) -> Self {
        let server = HttpServer::start(move |request| {
            let path = request
                .target
                .split('?')
                .next()
                .unwrap_or_default()
                .to_owned();
            if let Some(name) = path.strip_prefix("/redirect/") {
                return Outgoing::new(302, "").with("Location", &format!("/{name}"));
            }
            let name = path.trim_start_matches('/');
            if name.is_empty() || name.contains('/') || name.contains("..") {
                return Outgoing::new(404, "Not Found");
            }
            match std::fs::read(dir.join(name)) {
                Ok(bytes) => {
                    let length = bytes.len();
                    let mut out = Outgoing::new(
                        200,
                        if request.method == "HEAD" {
                            Vec::new()
                        } else {
                            bytes
                        },
                    )
                    .with("Content-Type", "application/octet-stream");
                    out.length = Some(length);
                    out
                }
                Err(_) => Outgoing::new(404, "Not Found"),
            }
        });
        Self { server }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.server.host())
    }
}
