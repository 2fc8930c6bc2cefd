//! Property tests for every parser that reads what the network or a user hands cks-iso: image
//! references, manifests and indexes, `WWW-Authenticate`, git pkt-lines and ref listings, kubeadm's
//! constants, `versions.txt`, the YAML image listing, the pull-policy edit, locks, and the ISO
//! reader `verify` runs on untrusted ISOs. None may panic on any input; the writers' outputs must
//! parse back to what they were given; an edit never touches a byte outside the lines it edits.
//! Bounded in cases, so they run in `make test`; `make fuzz` runs the same parsers coverage-guided.

use cks_iso::image::{Index, Manifest, MediaType, Reference};
use cks_iso::lock::Lock;
use cks_iso::manifest::{check_yaml, images, pull_if_not_present};
use cks_iso::registry::Challenge;
use cks_iso::release::Extras;
use cks_iso::release::git::{parse_discovery, parse_ls_refs};
use cks_iso::versions::{FileRecord, ImageRecord, Versions};
use proptest::prelude::*;

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn references_parse_or_refuse_and_print_back_to_themselves(text in "\\PC{0,80}") {
        if let Ok(reference) = Reference::parse(&text) {
            let again = Reference::parse(&reference.to_string()).unwrap();
            prop_assert_eq!(again, reference);
        }
    }

    #[test]
    fn reference_shaped_text_never_panics(
        text in "[a-z0-9.:/@_-]{0,20}(/[a-zA-Z0-9._-]{0,12}){0,3}(:[A-Za-z0-9._-]{0,12})?(@sha256:[0-9a-f]{0,64})?"
    ) {
        let _ = Reference::parse(&text);
    }

    #[test]
    fn manifests_and_indexes_of_any_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = MediaType::sniff(&bytes);
        let _ = serde_json::from_slice::<Manifest>(&bytes);
        let _ = serde_json::from_slice::<Index>(&bytes);
    }

    #[test]
    fn www_authenticate_never_panics(header in "\\PC{0,120}") {
        let _ = Challenge::parse(&header);
    }

    #[test]
    fn bearer_challenges_keep_their_realm(realm in "https://[a-z]{1,10}\\.example/[a-z]{0,8}", service in "[a-z.]{1,12}") {
        let header = format!("Bearer realm=\"{realm}\",service=\"{service}\",scope=\"repository:a:pull\"");
        prop_assert!(Challenge::parse(&header).is_some(), "{}", header);
    }

    #[test]
    fn git_replies_of_any_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = parse_discovery(&bytes);
        let _ = parse_ls_refs(&bytes);
    }

    #[test]
    fn pkt_line_shaped_replies_never_panic(lines in proptest::collection::vec("[0-9a-f]{4}[ -~]{0,60}\n?", 0..12)) {
        let body = lines.concat();
        let _ = parse_discovery(body.as_bytes());
        let _ = parse_ls_refs(body.as_bytes());
    }

    #[test]
    fn kubeadm_constants_of_any_text_never_panic(src in "\\PC{0,400}", minor in 0u64..60) {
        let _ = Extras::from_constants(&src, minor);
    }

    /// kubeadm 1.35's form (kubernetes PR #134866): whatever skews the map lists, in any order and
    /// spacing, the release's own minor (skew 0) is the entry kubeadm lists.
    #[test]
    fn skew_keyed_maps_give_the_entry_of_skew_zero(
        minor in 3u64..80,
        others in proptest::collection::btree_set(-3i64..0, 0..3),
        spaced in any::<bool>(),
    ) {
        let space = if spaced { " " } else { "" };
        let mut entries: Vec<String> = others
            .iter()
            .map(|skew| format!("\tuint8(getSkewedKubernetesVersion({space}{skew}{space}).Minor()): \"3.5.{}-0\",\n", -skew))
            .collect();
        entries.insert(entries.len() / 2, format!("\tuint8(getSkewedKubernetesVersion({space}0{space}).Minor()):  \"3.6.{minor}-0\",\n"));
        let src = format!(
            "PauseVersion = \"3.10.1\"\nCoreDNSVersion = \"v1.13.1\"\nSupportedEtcdVersion = map[uint8]string{{\n{}}}\n",
            entries.concat()
        );
        let extras = Extras::from_constants(&src, minor).unwrap();
        prop_assert_eq!(extras.etcd, format!("3.6.{minor}-0"));
    }

    #[test]
    fn versions_txt_of_any_text_never_panics(text in "\\PC{0,400}") {
        let _ = Versions::parse(&text);
    }

    #[test]
    fn versions_txt_round_trips(
        version in "v[0-9]{1,2}\\.[0-9]{1,2}\\.[0-9]{1,2}",
        files in proptest::collection::vec(("[a-z0-9][a-z0-9/._-]{0,30}", "[0-9a-f]{64}", "[ -~]{0,50}"), 0..6),
        images in proptest::collection::vec(("[a-z0-9.]{1,10}/[a-z0-9]{1,10}:[a-z0-9.]{1,8}", "[0-9a-f]{64}"), 0..6),
    ) {
        let mut v = Versions {
            kubernetes: version.clone(),
            arch: "amd64".into(),
            cni_plugins: version.clone(),
            crictl: version.clone(),
            etcd: Some(version.clone()),
            autoscaler: "1.33.4".into(),
            ccm: version.clone(),
            csi_driver: None,
            cloudstack: None,
            files: files.into_iter().map(|(path, sha256, source)| FileRecord { path, sha256, source }).collect(),
            images: images
                .into_iter()
                .map(|(name, hex)| ImageRecord {
                    archive: format!("docker/{}.tar", name.rsplit('/').next().unwrap()),
                    name,
                    digest: format!("sha256:{hex}"),
                })
                .collect(),
        };
        v.files.sort_by(|a, b| a.path.cmp(&b.path));
        v.files.dedup_by(|a, b| a.path == b.path);
        v.images.sort_by(|a, b| a.name.cmp(&b.name));
        v.images.dedup_by(|a, b| a.name == b.name);
        let back = Versions::parse(&v.render());
        prop_assert!(back.is_ok(), "{:?}\n{}", back, v.render());
        prop_assert_eq!(back.unwrap(), v);
    }

    #[test]
    fn yaml_image_listing_never_panics(text in "\\PC{0,300}") {
        if let Ok(docs) = check_yaml("x.yaml", &text) {
            let _ = images(&docs);
        }
    }

    #[test]
    fn the_pull_policy_edit_touches_only_pull_policy_lines(
        lines in proptest::collection::vec(prop_oneof![
            "[ -~]{0,40}",
            " {0,8}imagePullPolicy: ?(Always|Never|IfNotPresent|\"Always\"|'Never')( #[ -~]{0,10})?",
            " {0,8}image: [a-z./:0-9]{1,30}",
        ], 0..20),
        crlf in any::<bool>(),
    ) {
        let ending = if crlf { "\r\n" } else { "\n" };
        let text: String = lines.iter().map(|l| format!("{l}{ending}")).collect();
        let (edited, changed) = pull_if_not_present(&text);
        let before: Vec<&str> = text.split_inclusive('\n').collect();
        let after: Vec<&str> = edited.split_inclusive('\n').collect();
        prop_assert_eq!(before.len(), after.len());
        let mut differing = 0;
        for (b, a) in before.iter().zip(&after) {
            if b != a {
                differing += 1;
                prop_assert!(b.contains("imagePullPolicy"), "edited a line that is not a pull policy: {:?}", b);
                prop_assert!(a.contains("IfNotPresent"), "{:?} became {:?}", b, a);
                prop_assert!(a.ends_with(ending), "line ending lost: {:?}", a);
            }
        }
        prop_assert_eq!(differing, changed);
    }

    #[test]
    fn locks_of_any_text_never_panic(text in "\\PC{0,300}") {
        let _ = Lock::parse(&text, "x");
    }
}

proptest! {
    #![proptest_config(config(48))]

    /// A small real ISO with bytes overwritten at random: opening, listing and reading every file
    /// must end in a value or an error, within bounded time and memory.
    #[test]
    fn the_iso_reader_survives_damaged_isos(damage in proptest::collection::vec((0usize..200_000, any::<u8>()), 1..64)) {
        let iso = pristine_iso();
        let mut bytes = iso.clone();
        for (at, value) in damage {
            let at = at % bytes.len();
            bytes[at] = value;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("damaged.iso");
        std::fs::write(&path, &bytes).unwrap();
        let started = std::time::Instant::now();
        if let Ok(reader) = cks_iso_iso9660::read::IsoReader::open(&path)
            && let Ok(entries) = reader.entries()
        {
            prop_assert!(entries.len() < 10_000, "{} entries from a 5-file ISO", entries.len());
            for entry in entries.iter().take(64) {
                let _ = reader.read_small(&entry.path, 1 << 20);
            }
        }
        prop_assert!(started.elapsed() < std::time::Duration::from_secs(10));
    }
}

/// A small ISO authored once per test binary with cks-iso itself.
fn pristine_iso() -> Vec<u8> {
    static ISO: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    ISO.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("tree");
        std::fs::create_dir_all(tree.join("docker/sub")).unwrap();
        std::fs::write(
            tree.join("versions.txt"),
            "kubernetes v1.33.1\narch amd64\n",
        )
        .unwrap();
        std::fs::write(tree.join("docker/a.tar"), crate::support::noise(1, 70_000)).unwrap();
        std::fs::write(tree.join("docker/sub/b"), b"b").unwrap();
        std::fs::write(tree.join("network.yaml"), "kind: List\n").unwrap();
        std::fs::write(tree.join(format!("{}.yaml", "n".repeat(150))), "x: 1\n").unwrap();
        let iso = dir.path().join("p.iso");
        crate::support::run(
            crate::support::cks_iso()
                .args(["iso"])
                .arg(&tree)
                .arg("-o")
                .arg(&iso),
        );
        std::fs::read(iso).unwrap()
    })
    .clone()
}
