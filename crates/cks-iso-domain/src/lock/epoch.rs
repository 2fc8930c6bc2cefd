//! The date of an unlocked build that was given none: taken from what the ISO contains, never from
//! the clock, so that the same request built twice — on different days, on different machines —
//! gives the same bytes, and CloudStack sees the same checksum for a name it already has.
//!
//! The rule: the newest `created` among the configs of kubeadm's images (kube-apiserver,
//! kube-controller-manager, kube-scheduler, kube-proxy, pause, etcd, CoreDNS) for linux/amd64 —
//! the date the Kubernetes release's own images were built, the closest thing to "the release's
//! date" that is content-addressed: a config is named by its digest, so every registry mirror
//! gives the same date, and it depends on no signature being checked. linux/amd64 whatever the
//! architectures built, so that an arm64 ISO is the same built alone or beside an amd64 one (the
//! images of one release are built per platform, minutes apart). Dates on or before 1970-01-01
//! (`0001-01-01`, `1970-01-01T00:00:00Z`: what reproducible image builders write when told no
//! date) say nothing and are passed over; when no image is dated the epoch is 0. The lock records
//! which config gave the date (`epoch_from`), so a reader can check it, and `build --locked`
//! takes the lock's epoch as it always did.

use cks_iso_io::date::parse_rfc3339;
use serde::{Deserialize, Serialize};

/// Where a lock's `epoch` came from, when the build was given none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "rule", rename_all = "kebab-case", deny_unknown_fields)]
pub enum EpochFrom {
    /// The newest `created` of kubeadm's images for linux/amd64: this image's config.
    ImageCreated {
        /// The image, as kubeadm names it (`registry.k8s.io/kube-apiserver:v1.33.1`).
        image: String,
        /// Its linux/amd64 config's digest.
        config: String,
        /// The config's `created`, as written there.
        created: String,
    },
    /// No image was dated after 1970: the epoch is 0.
    Undated,
}

/// One image's linux/amd64 config, as the rule reads it.
#[derive(Debug, Clone, Copy)]
pub struct Dated<'a> {
    /// The image.
    pub image: &'a str,
    /// Its config's digest.
    pub config: &'a str,
    /// The config's `created`, when it has one.
    pub created: Option<&'a str>,
}

/// The epoch the rule gives for `images`, and where it came from. Of two images with the same
/// date, the first by name is named, so the result does not depend on the order given.
pub fn newest_created<'a>(images: impl IntoIterator<Item = Dated<'a>>) -> (i64, EpochFrom) {
    let newest = images
        .into_iter()
        .filter_map(|d| {
            let created = d.created?;
            let epoch = parse_rfc3339(created).filter(|&e| e > 0)?;
            Some((epoch, d, created))
        })
        .max_by(|(a, da, _), (b, db, _)| a.cmp(b).then_with(|| db.image.cmp(da.image)));
    match newest {
        Some((epoch, d, created)) => (
            epoch,
            EpochFrom::ImageCreated {
                image: d.image.to_owned(),
                config: d.config.to_owned(),
                created: created.to_owned(),
            },
        ),
        None => (0, EpochFrom::Undated),
    }
}

/// `created` of an image config (the OCI image configuration's and Docker's, the same field);
/// `None` when the config is no JSON object or has no such string.
pub fn config_created(config: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Config {
        created: Option<String>,
    }
    serde_json::from_slice::<Config>(config).ok()?.created
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dated<'a>(image: &'a str, created: Option<&'a str>) -> Dated<'a> {
        Dated {
            image,
            config: "sha256:c",
            created,
        }
    }

    #[test]
    fn the_newest_date_wins_and_is_named() {
        let (epoch, from) = newest_created([
            dated("registry.k8s.io/pause:3.10", Some("2024-05-22T10:00:00Z")),
            dated(
                "registry.k8s.io/kube-apiserver:v1.33.1",
                Some("2025-05-15T08:19:31Z"),
            ),
            dated("registry.k8s.io/etcd:3.5.21-0", None),
        ]);
        assert_eq!(epoch, 1_747_297_171);
        assert_eq!(
            from,
            EpochFrom::ImageCreated {
                image: "registry.k8s.io/kube-apiserver:v1.33.1".into(),
                config: "sha256:c".into(),
                created: "2025-05-15T08:19:31Z".into(),
            }
        );
    }

    #[test]
    fn placeholder_and_malformed_dates_are_passed_over() {
        let (epoch, from) = newest_created([
            dated("a", Some("1970-01-01T00:00:00Z")),
            dated("b", Some("0001-01-01T00:00:00Z")),
            dated("c", Some("yesterday")),
            dated("d", None),
        ]);
        assert_eq!((epoch, from), (0, EpochFrom::Undated));
    }

    #[test]
    fn ties_name_the_first_image_whatever_the_order() {
        let at = Some("2025-01-01T00:00:00Z");
        let one = newest_created([dated("b", at), dated("a", at)]);
        let two = newest_created([dated("a", at), dated("b", at)]);
        assert_eq!(one, two);
        assert!(matches!(one.1, EpochFrom::ImageCreated { ref image, .. } if image == "a"));
    }

    #[test]
    fn created_is_read_from_a_config() {
        let config =
            br#"{"architecture":"amd64","created":"2025-05-15T08:19:31.123Z","os":"linux"}"#;
        assert_eq!(
            config_created(config).as_deref(),
            Some("2025-05-15T08:19:31.123Z")
        );
        assert_eq!(config_created(br#"{"architecture":"amd64"}"#), None);
        assert_eq!(config_created(b"[1]"), None);
    }

    #[test]
    fn the_lock_field_round_trips() {
        for from in [
            EpochFrom::Undated,
            EpochFrom::ImageCreated {
                image: "i".into(),
                config: "sha256:c".into(),
                created: "2025-01-01T00:00:00Z".into(),
            },
        ] {
            let text = serde_json::to_string(&from).unwrap();
            assert_eq!(serde_json::from_str::<EpochFrom>(&text).unwrap(), from);
        }
        assert_eq!(
            serde_json::to_string(&EpochFrom::Undated).unwrap(),
            r#"{"rule":"undated"}"#
        );
    }
}
