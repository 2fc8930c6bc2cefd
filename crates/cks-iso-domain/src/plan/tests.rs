//! The plan's request, edits and image set.

use super::*;

fn pos(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

#[test]
fn upstream_positional_form_maps_to_the_same_request_as_flags() {
    let p = request(
        &pos(&[
            "out",
            "1.33.1",
            "1.6.2",
            "1.33.0",
            "net.yaml",
            "https://x/d.yaml",
            "setup-x",
            "aarch64",
            "3.5.21",
        ]),
        Flags::default(),
    )
    .unwrap();
    let f = request(
        &[],
        Flags {
            output: Some("out".into()),
            kubernetes: Some("1.33.1".into()),
            cni: Some("1.6.2".into()),
            crictl: Some("1.33.0".into()),
            network: Some("net.yaml".into()),
            dashboard: Some("https://x/d.yaml".into()),
            name: Some("setup-x".into()),
            arches: vec!["arm64".into()],
            etcd: Some("3.5.21".into()),
            headlamp: None,
            headlamp_version: None,
        },
    )
    .unwrap();
    assert_eq!(p, f);
    assert_eq!(p.network, Source::File("net.yaml".into()));
    assert_eq!(p.dashboard, Some(Source::Url("https://x/d.yaml".into())));
    assert_eq!(iso_file_name(&p.name, p.arches[0]), "setup-x-aarch64.iso");
}

#[test]
fn defaults_and_errors() {
    let r = request(
        &[],
        Flags {
            kubernetes: Some("v1.33.1".into()),
            network: Some("n".into()),
            dashboard: Some("d".into()),
            ..Flags::default()
        },
    )
    .unwrap();
    assert_eq!(
        (r.name.as_str(), r.arches.clone()),
        ("setup-v1.33.1", vec![Arch::Amd64])
    );
    assert!(matches!(
        request(&pos(&["a", "b"]), Flags::default()),
        Err(PlanError::Positional { count: 2 })
    ));
    let twice = request(
        &pos(&["o", "1.33.1", "1", "1", "n", "d", "x"]),
        Flags {
            kubernetes: Some("1.32.0".into()),
            ..Flags::default()
        },
    );
    assert!(matches!(twice, Err(PlanError::Twice { .. })));
    let arch = request(
        &[],
        Flags {
            kubernetes: Some("1".into()),
            network: Some("n".into()),
            dashboard: Some("d".into()),
            arches: vec!["s390x".into()],
            ..Flags::default()
        },
    );
    assert!(matches!(arch, Err(PlanError::Arch { .. })));
}

#[test]
fn cloudstack_4_23_headlamp_version_in_argument_6_builds_headlamp_and_no_dashboard() {
    let args = pos(&[
        "out",
        "1.33.1",
        "1.6.2",
        "1.33.0",
        "https://x/net.yaml",
        "0.40.1",
        "setupheadlamp-v1.33.1",
        "amd64",
    ]);
    let none = |_: &str| false;
    let url = "https://raw.githubusercontent.com/kubernetes-sigs/headlamp/v0.40.1/kubernetes-headlamp.yaml";
    for version in ["0.40.1", "v0.40.1"] {
        let mut args = args.clone();
        args[5] = version.into();
        let r = request_in(&args, Flags::default(), &none).unwrap();
        assert_eq!(r.headlamp_version.as_deref(), Some("0.40.1"), "{version}");
        assert_eq!(
            r.headlamp,
            Some(Source::Url(url.into())),
            "a `v` is never doubled"
        );
        assert_eq!(r.dashboard, None);
        // The flag builds the same request.
        let f = request_in(
            &[],
            Flags {
                output: Some("out".into()),
                kubernetes: Some("1.33.1".into()),
                cni: Some("1.6.2".into()),
                crictl: Some("1.33.0".into()),
                network: Some("https://x/net.yaml".into()),
                name: Some("setupheadlamp-v1.33.1".into()),
                arches: vec!["amd64".into()],
                headlamp_version: Some(version.into()),
                ..Flags::default()
            },
            &none,
        )
        .unwrap();
        assert_eq!(r, f);
    }
    // A URL, or text that is no version, is 4.22's dashboard manifest.
    for dashboard in ["dash.yaml", "v2", "1.yaml", "https://x/2.7.0", "./0.40.1"] {
        let mut ok = args.clone();
        ok[5] = dashboard.into();
        let r = request_in(&ok, Flags::default(), &none).unwrap();
        assert_eq!(r.dashboard, Some(Source::parse(dashboard)), "{dashboard}");
        assert_eq!(r.headlamp_version, None);
    }
}

#[test]
fn a_version_in_argument_6_that_is_also_a_file_is_ambiguous_naming_both_readings() {
    let args = pos(&["out", "1.33.1", "1.6.2", "1.33.0", "n.yaml", "v0.40.1", "x"]);
    let err = request_in(&args, Flags::default(), &|p| p == "v0.40.1").unwrap_err();
    assert!(matches!(err, PlanError::Ambiguous { .. }), "{err}");
    let msg = err.to_string();
    for want in [
        "Headlamp version",
        "v0.40.1 release",
        "dashboard manifest file \"v0.40.1\"",
    ] {
        assert!(msg.contains(want), "{want:?} not in {msg}");
    }
    let hint = err.hint().unwrap();
    assert!(
        hint.contains("--headlamp-version 0.40.1") && hint.contains("./v0.40.1"),
        "{hint}"
    );
    // A Headlamp version and --headlamp, or a malformed version, are refused too.
    let both = Flags {
        headlamp: Some("h.yaml".into()),
        ..Flags::default()
    };
    let mut v = args.clone();
    v[5] = "0.40.1".into();
    assert!(matches!(
        request_in(&v, both, &|_| false),
        Err(PlanError::Twice { .. })
    ));
    let bad = Flags {
        kubernetes: Some("1.33.1".into()),
        network: Some("n".into()),
        headlamp_version: Some("latest".into()),
        ..Flags::default()
    };
    assert!(matches!(
        request_in(&[], bad, &|_| false),
        Err(PlanError::HeadlampVersion { .. })
    ));
}

#[test]
fn a_headlamp_release_manifest_gets_its_policy_then_its_tag() {
    let text = "kind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n        - name: headlamp\n          image: ghcr.io/headlamp-k8s/headlamp:latest\n          args: []\n";
    let image = headlamp_image("0.40.1");
    let e = edit(
        "headlamp.yaml",
        text,
        &Role::HeadlampRelease {
            image: image.clone(),
        },
    )
    .unwrap();
    assert!(e.text.contains(
        "          image: ghcr.io/headlamp-k8s/headlamp:v0.40.1\n          imagePullPolicy: IfNotPresent\n"
    ), "{}", e.text);
    assert_eq!(e.images, std::slice::from_ref(&image));
    assert!(
        e.notes
            .iter()
            .any(|n| n == &format!("image set to {image}")),
        "{:?}",
        e.notes
    );
}

#[test]
fn autoscaler_gets_its_pin_rbac_and_pull_policy_and_keeps_placeholders() {
    let text = "kind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n        - image: apache/cloudstack-kubernetes-autoscaler:latest\n          imagePullPolicy: Always\n          command:\n            - --nodes=<min>:<max>:<cluster-id>\n";
    let image = "registry.k8s.io/autoscaling/cluster-autoscaler:v1.33.6".to_owned();
    let e = edit(
        "autoscaler.yaml",
        text,
        &Role::Autoscaler {
            image: image.clone(),
        },
    )
    .unwrap();
    assert_eq!(e.images, [image]);
    assert!(e.text.contains("<min>:<max>:<cluster-id>"));
    assert!(e.text.contains("imagePullPolicy: IfNotPresent") && !e.text.contains("Always"));
    assert!(e.text.contains("name: cluster-autoscaler-extra"));
}

#[test]
fn joined_separators_are_split_and_reported() {
    let text =
        "kind: A\nmetadata:\n  name: rbac.authorization.k8s.io---\nkind: B\nmetadata:\n  name: b\n";
    let e = edit("manifest.yaml", text, &Role::Csi).unwrap();
    assert_eq!(
        e.notes.len(),
        1,
        "one line per repaired file: {:?}",
        e.notes
    );
    assert!(e.notes[0].contains("line(s) 3"), "{:?}", e.notes);
    assert_eq!(e.edits, e.notes, "recorded in versions.txt");
    assert!(!e.text.contains("k8s.io---"), "split: {}", e.text);
}

#[test]
fn a_byte_order_mark_and_a_right_quoted_policy_leave_the_file_unchanged() {
    let text = "\u{feff}---\nkind: Pod\nspec:\n  containers:\n  - image: busybox:1\n    imagePullPolicy: \"IfNotPresent\"\n";
    let e = edit("network.yaml", text, &Role::Network).unwrap();
    assert_eq!(e.text, text);
    assert!(e.notes.is_empty(), "{:?}", e.notes);
    assert_eq!(e.images, ["busybox:1"]);
}

#[test]
fn a_latest_image_without_policy_gets_one_noted_for_versions_txt() {
    let text = "kind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n        - name: headlamp\n          image: ghcr.io/headlamp-k8s/headlamp:latest\n          args:\n            - \"-in-cluster\"\n";
    let e = edit("headlamp.yaml", text, &Role::Headlamp).unwrap();
    assert!(e.text.contains(
        "          image: ghcr.io/headlamp-k8s/headlamp:latest\n          imagePullPolicy: IfNotPresent\n          args:"
    ));
    assert_eq!(
        e.text.len(),
        text.len() + "          imagePullPolicy: IfNotPresent\n".len()
    );
    assert_eq!(e.edits.len(), 1);
    assert!(e.edits[0].contains("1 container(s)") && e.edits[0].contains("line(s) 7"));
    assert!(e.notes.contains(&e.edits[0]), "logged too");
    // Flow style, which a line edit cannot reach, is refused rather than left to pull.
    let flow = "kind: Pod\nspec:\n  containers: [{name: a, image: nginx}]\n";
    let err = edit("network.yaml", flow, &Role::Network).unwrap_err();
    assert!(matches!(err, ManifestError::PullAlways { .. }), "{err}");
    assert!(err.to_string().contains("nginx") && err.hint().is_some());
}

#[test]
fn image_set_normalises_and_deduplicates() {
    let set = image_set([
        "nginx",
        "docker.io/library/nginx:latest",
        "k8s.gcr.io/pause:3.2",
    ])
    .unwrap();
    let names: Vec<String> = set.iter().map(ToString::to_string).collect();
    assert_eq!(
        names,
        ["docker.io/library/nginx:latest", "k8s.gcr.io/pause:3.2"]
    );
}

#[test]
fn headlamp_releases_registry_k8s_io_serves_are_pinned_there_and_others_to_ghcr() {
    for v in ["0.41.0", "0.42.0", "0.43.0"] {
        assert_eq!(
            super::headlamp_image(v),
            format!("registry.k8s.io/headlamp/headlamp:v{v}")
        );
    }
    for v in ["0.40.1", "0.44.0", "0.41", "0.41.0.1"] {
        assert_eq!(
            super::headlamp_image(v),
            format!("ghcr.io/headlamp-k8s/headlamp:v{v}")
        );
    }
}
