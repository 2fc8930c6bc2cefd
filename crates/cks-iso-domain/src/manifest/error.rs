//! Why a manifest cannot be used as it is.

/// Errors of the manifest checks and edits; `name` is the manifest's role or file name.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The text is not YAML.
    #[error("{name} is not valid YAML")]
    Yaml {
        /// The manifest.
        name: String,
        /// The parser's message, with line and column.
        #[source]
        source: Box<serde_saphyr::Error>,
    },
    /// The body is an HTML page (an error page served with 200), not a manifest.
    #[error("{name} is an HTML page, not a Kubernetes manifest")]
    Html {
        /// The manifest.
        name: String,
    },
    /// A document is not a mapping (for example a bare string).
    #[error("{name}: document {index} is not a Kubernetes object")]
    NotObject {
        /// The manifest.
        name: String,
        /// 1-based document number.
        index: usize,
    },
    /// An add-on manifest's document that `kubectl apply` would refuse: a mapping without a
    /// non-empty `apiVersion` or `kind` string, or no object at all.
    #[error(
        "{name}: {} is not a Kubernetes object: {problem}",
        index.map_or("it".to_owned(), |i| format!("document {i}"))
    )]
    NotKubernetes {
        /// The manifest.
        name: String,
        /// 1-based document number; `None` when the file holds no object.
        index: Option<usize>,
        /// What is missing (`it has no apiVersion`).
        problem: String,
    },
    /// A pinned manifest must have exactly one `image:` line.
    #[error(
        "{name} has {count} `image:` lines where exactly one is expected{}",
        lines_note(lines)
    )]
    ImageCount {
        /// The manifest.
        name: String,
        /// How many it has.
        count: usize,
        /// Their 1-based line numbers.
        lines: Vec<usize>,
    },
    /// A container would still be pulled `Always`: written where the text edit cannot reach it.
    #[error(
        "{name}: the container(s) of {} have no imagePullPolicy and an untagged or :latest \
         image, so Kubernetes pulls them Always and an air-gapped node never starts them; \
         cks-iso inserts the policy only in block-style YAML",
        images.join(", ")
    )]
    PullAlways {
        /// The manifest.
        name: String,
        /// The images, as written.
        images: Vec<String>,
    },
}

fn lines_note(lines: &[usize]) -> String {
    match lines.is_empty() {
        true => String::new(),
        false => format!(
            " (lines {})",
            lines
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

impl ManifestError {
    /// What the user can do.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            Self::Html { .. } => {
                "the server answered with a web page: check the URL, and the --mirror rule that \
                 rewrites it"
                    .into()
            }
            Self::ImageCount { .. } => {
                "the upstream manifest changed shape; pin another version, or report it so the pin rule can follow".into()
            }
            Self::PullAlways { .. } => {
                "give those containers `imagePullPolicy: IfNotPresent` (or a fixed tag) in the \
                 manifest, or write them in block style"
                    .into()
            }
            Self::NotKubernetes { .. } => {
                "an add-on manifest is what `kubectl apply -f` takes: every document a Kubernetes \
                 object with apiVersion and kind; check that the URL or file is that manifest"
                    .into()
            }
            Self::Yaml { .. } | Self::NotObject { .. } => {
                "check that the URL or file is the manifest itself, not a listing or an error page".into()
            }
        })
    }
}
