use super::locate::first_present;
use super::*;

#[test]
fn the_first_default_location_present_wins() {
    let dir = tempfile::tempdir().unwrap();
    let (user, system) = (dir.path().join("user.yaml"), dir.path().join("system.yaml"));
    let both = [user.clone(), system.clone()];
    assert_eq!(first_present(&both), None);
    std::fs::write(&system, "jobs: 2\n").unwrap();
    assert_eq!(first_present(&both), Some(&system));
    std::fs::write(&user, "jobs: 3\n").unwrap();
    assert_eq!(first_present(&both), Some(&user));
    // Under a file, not a directory: not there.
    let under_file = [user.join("config.yaml"), system.clone()];
    assert_eq!(first_present(&under_file), Some(&system));
}

#[test]
fn unknown_keys_are_errors_naming_the_key() {
    let err = Network::parse("mirrors: {}\nmirorrs:\n  a: b\n").unwrap_err();
    assert!(err.to_string().contains("mirorrs"), "{err}");
}

#[test]
fn every_key_parses() {
    let c = Network::parse(
        "mirrors:\n  https://github.com: http://m:1/github.com\n\
         registry-mirrors:\n  docker.io: m:5000\n\
         insecure-registries: [m:5000]\nca-files: [ca.pem]\nauthfile: auth.json\n\
         jobs: 2\nretries: 3\nconnect-timeout: 4\nidle-timeout: 5\n\
         signatures: enforce\ntrusted-root: root.json\nsignature-policy: p.yaml\n",
    )
    .unwrap();
    assert_eq!(c.signatures.as_deref(), Some("enforce"));
    assert_eq!(c.trusted_root, Some(PathBuf::from("root.json")));
    assert_eq!(c.signature_policy, Some(PathBuf::from("p.yaml")));
    assert_eq!(
        c.mirrors[0].to_string(),
        "https://github.com=http://m:1/github.com"
    );
    assert_eq!(c.registry_mirrors, [("docker.io".into(), "m:5000".into())]);
    assert_eq!(c.insecure_registries, ["m:5000"]);
    assert_eq!(c.jobs, Some(2));
    assert_eq!(c.retries, Some(3));
    assert_eq!(c.idle_timeout, Some(5));
    assert!(Network::parse("").unwrap().mirrors.is_empty());
    assert!(
        Network::parse("# only a comment\n")
            .unwrap()
            .mirrors
            .is_empty()
    );
}

#[test]
fn flags_override_the_file() {
    let file = Network::parse(
        "mirrors:\n  https://github.com: http://file:1/gh\n  https://dl.k8s.io: http://file:1/dl\n\
         jobs: 2\nretries: 3\nidle-timeout: 9\nca-files: [/a.pem]\n",
    )
    .unwrap();
    let flags = Network {
        mirrors: vec!["https://github.com=http://flag:2/gh".parse().unwrap()],
        jobs: Some(7),
        ca_files: vec!["/b.pem".into()],
        ..Network::default()
    };
    let s = merge(Some(("/etc/c.yaml".into(), file)), flags).unwrap();
    assert_eq!(s.jobs, 7);
    assert_eq!(s.http.retry.attempts, 3);
    assert_eq!(s.http.idle_timeout, Duration::from_secs(9));
    assert_eq!(
        s.mirrors.rewrite("https://github.com/x"),
        "http://flag:2/gh/x"
    );
    assert_eq!(
        s.mirrors.rewrite("https://dl.k8s.io/x"),
        "http://file:1/dl/x"
    );
    assert_eq!(s.http.ca_files, [PathBuf::from("/a.pem"), "/b.pem".into()]);
}

#[test]
fn bad_values_name_the_key() {
    let file = Network::parse("mirrors:\n  github.com: http://m\n").unwrap();
    let err = merge(Some(("c.yaml".into(), file)), Network::default()).unwrap_err();
    assert!(err.to_string().contains("mirrors.github.com"), "{err}");
    let file = Network::parse("jobs: 0\n").unwrap();
    let err = merge(Some(("c.yaml".into(), file)), Network::default()).unwrap_err();
    assert!(err.to_string().contains("jobs"), "{err}");
}

#[test]
fn a_cloudstack_release_reads_written_as_a_number_or_a_string_and_an_unknown_one_is_named() {
    for text in ["cloudstack: 4.21\n", "cloudstack: \"4.21\"\n"] {
        let file = Network::parse(text).unwrap();
        let s = merge(Some(("c.yaml".into(), file)), Network::default()).unwrap();
        assert_eq!(
            s.cloudstack,
            Some(crate::cloudstack::CloudStack::V4_21),
            "{text}"
        );
    }
    let file = Network::parse("cloudstack: 4.19\n").unwrap();
    let err = merge(Some(("c.yaml".into(), file)), Network::default()).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("cloudstack") && msg.contains("4.19"), "{msg}");
}

#[test]
fn extras_read_with_their_files_relative_to_the_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.yaml");
    std::fs::write(
        &path,
        "extras:\n  images: [velero/velero:v1.14.0]\n  manifests:\n    - velero.yaml=rendered/v.yaml\n    - https://example.org/ms.yaml\n    - /abs/x.yaml\n",
    )
    .unwrap();
    let file = Network::load(&path).unwrap();
    let settings = merge(Some((path.clone(), file)), Network::default()).unwrap();
    assert_eq!(settings.extras.images, ["velero/velero:v1.14.0"]);
    assert_eq!(
        settings.extras.manifests,
        [
            format!(
                "velero.yaml={}",
                dir.path().join("rendered/v.yaml").display()
            ),
            "https://example.org/ms.yaml".to_owned(),
            "/abs/x.yaml".to_owned(),
        ]
    );
    assert!(
        Network::parse("extras:\n  charts: [x]\n").is_err(),
        "unknown keys are refused"
    );
}

#[test]
fn kubernetes_lists_releases_as_text_and_refuses_a_bare_number() {
    let c = Network::parse("kubernetes: [1.33.1, \"1.30\", stable-1.32]\n").unwrap();
    assert_eq!(c.kubernetes, ["1.33.1", "1.30", "stable-1.32"]);
    let one = Network::parse("kubernetes: 1.33.1\n").unwrap();
    assert_eq!(one.kubernetes, ["1.33.1"]);
    // YAML reads 1.30 as 1.3: refused, saying to quote it, never taken as another release.
    let err = Network::parse("kubernetes: [1.33.1, 1.30]\n").unwrap_err();
    let text = err.to_string();
    assert!(text.contains("\"1.30\"") && text.contains("1.3"), "{text}");
    assert!(Network::parse("").unwrap().kubernetes.is_empty());
}
