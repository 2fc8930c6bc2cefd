//! A planted or shared cache: index entries written by someone with write access to the cache
//! directory, or carried in by `cache import` of a crafted directory. Each scenario runs the real
//! binary against the local world and asserts that nothing planted ships in an unlocked offline
//! build, that `cache import` and `cache verify` name what cannot be tied to a verification, and
//! that a cache directory others can write is refused.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use cks_iso::cache::{Cache, Key};
use cks_iso::image::Digest;
use cks_iso_testworld::upstream::sha256_hex;

use super::common::Scene;
use crate::support::hostile::*;
use crate::support::*;

const KUBEADM: &str = "url:https://dl.k8s.io/release/v1.33.1/bin/linux/amd64/kubeadm";
const CNI: &str = "url:https://github.com/containernetworking/plugins/releases/download/v1.6.2/cni-plugins-linux-amd64-v1.6.2.tgz";

/// Plants `bytes` in the cache at `cache` as what `key` names, as someone with write access to a
/// shared cache directory (or a crafted `cache import` directory) would.
fn plant(cache: &Path, key: &str, bytes: &[u8]) {
    let hex = sha256_hex(bytes);
    fs::create_dir_all(cache.join("blobs/sha256")).unwrap();
    fs::write(cache.join("blobs/sha256").join(&hex), bytes).unwrap();
    fs::create_dir_all(cache.join("index")).unwrap();
    let url = key.trim_start_matches("url:");
    fs::write(
        cache.join("index").join(sha256_hex(key.as_bytes())),
        format!("sha256:{hex} {}\n{key}\n{url}\n", bytes.len()),
    )
    .unwrap();
}

/// `cp -a` of a cache.
fn copy_cache(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    run(Command::new("cp").args(["-a", &format!("{}/.", p(from)), p(to)]));
}

/// `cks-iso cache SUBCOMMAND … --cache-dir CACHE`.
fn cache_cmd(cache: &Path, args: &[&str]) -> Command {
    let mut cmd = cks_iso();
    cmd.arg("cache").args(args).args(["--cache-dir", p(cache)]);
    cmd
}

/// `bsdtar -x -O` of the CNI tarball an amd64 ISO in `out` ships.
fn shipped_cni(out: &Path) -> Vec<u8> {
    let iso = out.join("setup-v1.33.1-x86_64.iso");
    let member = "cni/cni-plugins-amd64.tgz";
    run(Command::new("bsdtar").args(["-x", "-O", "-f", p(&iso), member])).stdout
}

/// A kubeadm for amd64 that no release published, as a planter would put it in a cache.
fn planted_kubeadm() -> Vec<u8> {
    cks_iso_testworld::upstream::elf("amd64", 99, "planted", 4096)
}

/// Fills `cache` online; what it kept is enough offline, verifies again, and `cache verify`
/// finds it sound.
fn fill_sound_cache(scene: &Scene, cache: &Path) {
    let d = scene.dir();
    run(&mut scene.build_pinned(cache, &d.join("online"), &[]));
    run(&mut scene.build_pinned(cache, &d.join("offline"), &["--offline"]));
    run(&mut cache_cmd(cache, &["verify"]));
}

/// `planted` as kubeadm in a cache that keeps kubeadm's published checksum: the offline build
/// refuses it and leaves nothing in `out`; `cache verify` names the entry the checksum no longer
/// vouches for.
fn assert_planted_kubeadm_refused(scene: &Scene, cache: &Path, planted: &[u8], out: &Path) {
    plant(cache, KUBEADM, planted);
    fails(
        &mut scene.build_pinned(cache, out, &["--offline"]),
        1,
        &[
            KUBEADM,
            "cannot be tied to a verification",
            "published in",
            "hint:",
        ],
    );
    assert!(files_under(out).is_empty(), "{:?}", files_under(out));
    let said = fails(
        &mut cache_cmd(cache, &["verify"]),
        1,
        &[
            &format!("unverified index entry {KUBEADM}"),
            "the checksum published in",
        ],
    );
    assert!(said.contains("1 problem(s)"), "{said}");
}

/// `planted` as kubeadm in a cache that never kept kubeadm's published checksum: refused too, by
/// the build and by `cache verify`, and `cache verify --fix` leaves a sound cache.
fn assert_kubeadm_without_its_checksum_refused(
    scene: &Scene,
    cache: &Path,
    planted: &[u8],
    out: &Path,
) {
    let sum_key = format!("{KUBEADM}.sha256");
    let sum_entry = cache.join("index").join(sha256_hex(sum_key.as_bytes()));
    fs::remove_file(&sum_entry).unwrap();
    plant(cache, KUBEADM, planted);
    let no_sum = [
        "cannot be tied to a verification",
        "holds no published checksum",
    ];
    fails(
        &mut scene.build_pinned(cache, out, &["--offline"]),
        1,
        &no_sum,
    );
    fails(&mut cache_cmd(cache, &["verify"]), 1, &no_sum);
    run(&mut cache_cmd(cache, &["verify", "--fix"]));
    run(&mut cache_cmd(cache, &["verify"]));
}

/// `cache import` of a crafted directory into `cache`: the planted CNI tarball's entry is named
/// and skipped, with or without a published checksum naming another file; its blob (verified by
/// its name) comes in, and the offline build still ships the CNI tarball it verified online.
fn assert_crafted_import_skips_the_cni_tarball(scene: &Scene, cache: &Path) {
    let d = scene.dir();
    let crafted = d.join("crafted");
    let tgz = hostile_tgz(&[file("./bridge")]);
    plant(&crafted, CNI, &tgz);
    let said = stderr(&run(&mut cache_cmd(cache, &["import", p(&crafted)])));
    assert!(
        said.contains(&format!("index entry {CNI} not imported")),
        "{said}"
    );
    assert!(said.contains("no published checksum for it"), "{said}");
    let other = "0".repeat(64);
    let sum = format!("{other}  cni-plugins-linux-amd64-v1.6.2.tgz\n");
    plant(&crafted, &format!("{CNI}.sha256"), sum.as_bytes());
    let said = stderr(&run(&mut cache_cmd(cache, &["import", p(&crafted)])));
    assert!(
        said.contains(&format!("index entry {CNI} not imported")),
        "{said}"
    );
    assert!(said.contains(&format!("is sha256:{other}")), "{said}");
    assert!(
        said.contains(&format!("index entry {CNI}.sha256 not imported"))
            && said.contains("the published checksum of no download imported with it"),
        "{said}"
    );
    let out = d.join("imported");
    run(&mut scene.build_pinned(cache, &out, &["--offline"]));
    let shipped = shipped_cni(&out);
    assert!(
        !shipped.is_empty() && shipped != tgz,
        "the planted tarball shipped"
    );
}

#[test]
fn an_unlocked_offline_build_ships_no_planted_or_imported_download() {
    let scene = Scene::start();
    let d = scene.dir();
    let cache = d.join("cache");
    fill_sound_cache(&scene, &cache);
    let (cache2, bare) = (d.join("cache2"), d.join("bare"));
    copy_cache(&cache, &cache2);
    copy_cache(&cache, &bare);

    let planted = planted_kubeadm();
    let out = d.join("planted");
    assert_planted_kubeadm_refused(&scene, &cache, &planted, &out);
    assert_kubeadm_without_its_checksum_refused(&scene, &bare, &planted, &out);
    assert_crafted_import_skips_the_cni_tarball(&scene, &cache2);
}

/// The digest under which `cache` keeps the CNI tarball.
fn cni_digest(cache: &Path) -> Digest {
    Cache::new(cache)
        .recall(&Key::parse(CNI).unwrap())
        .expect("the cache keeps the CNI tarball")
        .digest
}

/// The carry the second probe found: `cache export --locked LOCK` into `carry`, then its CNI
/// tarball replaced (one `bridge`) and a "published checksum" naming the replacement put beside
/// it. Returns the replacement's digest.
fn swapped_carry(cache: &Path, lock: &Path, carry: &Path) -> String {
    run(&mut cache_cmd(
        cache,
        &["export", "--locked", p(lock), "-o", p(carry)],
    ));
    let tgz = hostile_tgz(&[file("./bridge")]);
    plant(carry, CNI, &tgz);
    let sum = format!("{}  cni-plugins-linux-amd64-v1.6.2.tgz\n", sha256_hex(&tgz));
    plant(carry, &format!("{CNI}.sha256"), sum.as_bytes());
    format!("sha256:{}", sha256_hex(&tgz))
}

/// Unlocked into `good` (a copy of a good cache): the swapped entry is named and skipped, with
/// its checksum; the good entry stays and the offline build ships the tarball the online one
/// verified.
fn assert_unlocked_import_skips_the_swap(
    scene: &Scene,
    good: &Path,
    carry: &Path,
    genuine: &Digest,
) {
    let said = stderr(&run(&mut cache_cmd(good, &["import", p(carry)])));
    assert!(
        said.contains(&format!(
            "index entry {CNI} not imported: only DIR's own published checksum vouches for it"
        )) && said.contains("no --locked lock names it"),
        "{said}"
    );
    assert!(
        said.contains(&format!("index entry {CNI}.sha256 not imported")),
        "{said}"
    );
    let out = scene.dir().join("unlocked");
    run(&mut scene.build_pinned(good, &out, &["--offline"]));
    assert_eq!(
        format!("sha256:{}", sha256_hex(&shipped_cni(&out))),
        genuine.to_string(),
        "the swapped tarball shipped"
    );
}

/// With the lock: the swapped entry is refused naming both digests and the lock, exit 1 with a
/// hint, and `good` keeps the genuine entry.
fn assert_locked_import_refuses_the_swap(
    good: &Path,
    carry: &Path,
    lock: &Path,
    genuine: &Digest,
    swapped: &str,
) {
    let said = fails(
        &mut cache_cmd(good, &["import", p(carry), "--locked", p(lock)]),
        1,
        &[
            &format!("index entry {CNI} refused"),
            &format!("names {swapped}, but the lock {} names {genuine}", p(lock)),
            "hint:",
            "cache export --locked",
        ],
    );
    assert!(
        !said.contains(&format!("index entry {CNI}.sha256 refused")),
        "{said}"
    );
    assert_eq!(&cni_digest(good), genuine, "the good entry was replaced");
}

/// A copy of `cache` without the CNI tarball, the carry imported unlocked: the unlocked offline
/// build that needs the tarball fails, leaves nothing, and says to import with the lock.
fn assert_a_cache_lacking_the_tarball_asks_for_the_lock(scene: &Scene, cache: &Path, carry: &Path) {
    let d = scene.dir();
    let lacking = d.join("lacking");
    copy_cache(cache, &lacking);
    fs::remove_file(lacking.join("index").join(sha256_hex(CNI.as_bytes()))).unwrap();
    run(&mut cache_cmd(&lacking, &["import", p(carry)]));
    let out = d.join("lacking-out");
    fails(
        &mut scene.build_pinned(&lacking, &out, &["--offline"]),
        1,
        &[
            "cni-plugins-linux-amd64-v1.6.2.tgz with --offline: it is not in the cache",
            "hint:",
            "cks-iso cache import --locked LOCK",
        ],
    );
    assert!(files_under(&out).is_empty());
}

/// A signed download (kubeadm) comes in without the lock when its signature in the carry
/// verifies against the trusted root given (the world's), not without that root, and not for
/// other bytes.
fn assert_signed_downloads_come_in_against_the_trusted_root(d: &Path, carry: &Path) {
    let root = d.join("trusted_root.json");
    let signed = d.join("signed");
    let said = stderr(&run(&mut cache_cmd(
        &signed,
        &["import", p(carry), "--trusted-root", p(&root)],
    )));
    assert!(
        !said.contains(&format!("index entry {KUBEADM} not")),
        "{said}"
    );
    assert!(
        Cache::new(&signed)
            .recall(&Key::parse(KUBEADM).unwrap())
            .is_some()
    );
    let unsigned = d.join("unsigned");
    let said = stderr(&run(&mut cache_cmd(&unsigned, &["import", p(carry)])));
    assert!(
        said.contains(&format!("index entry {KUBEADM} not imported"))
            && said.contains("its signature does not verify"),
        "{said}"
    );
    plant(carry, KUBEADM, &planted_kubeadm());
    let said = stderr(&run(&mut cache_cmd(
        &d.join("planted"),
        &["import", p(carry), "--trusted-root", p(&root)],
    )));
    assert!(
        said.contains(&format!("index entry {KUBEADM} not imported"))
            && said.contains("its signature does not verify"),
        "{said}"
    );
}

/// The carry the second probe found vouches for nothing by itself: unlocked, its swapped CNI
/// entry is skipped and named; with the lock, refused naming both digests; a cache that lacks the
/// tarball then builds offline only with the lock. Signed downloads still come in unlocked when
/// their signature verifies against the trusted root the import is given.
#[test]
fn a_carry_vouches_for_no_download_by_itself() {
    let scene = Scene::start();
    let d = scene.dir();
    let (cache, lock, carry) = (d.join("cache"), d.join("run.lock"), d.join("carry"));
    let online = d.join("online");
    run(&mut scene.build_pinned(&cache, &online, &["--lock-file", p(&lock)]));
    let genuine = cni_digest(&cache);
    let swapped = swapped_carry(&cache, &lock, &carry);

    let good = d.join("good");
    copy_cache(&cache, &good);
    assert_unlocked_import_skips_the_swap(&scene, &good, &carry, &genuine);
    assert_locked_import_refuses_the_swap(&good, &carry, &lock, &genuine, &swapped);
    assert_a_cache_lacking_the_tarball_asks_for_the_lock(&scene, &cache, &carry);
    assert_signed_downloads_come_in_against_the_trusted_root(d, &carry);
}

/// pause's tag in the cache's index.
const PAUSE: &str = "tag:registry.k8s.io/pause:3.10";

/// Plants pause:3.10 in `cache` as another cached registry.k8s.io image: signed, but not as
/// pause, so the cache holds no signature for it in pause's repository. Returns the path of
/// pause's index entry and its genuine bytes.
fn plant_another_image_as_pause(cache: &Path) -> (PathBuf, Vec<u8>) {
    let index = cache.join("index");
    let other = fs::read_dir(&index)
        .unwrap()
        .map(|e| fs::read_to_string(e.unwrap().path()).unwrap_or_default())
        .find(|text| {
            let key = text.lines().nth(1).unwrap_or_default();
            key.starts_with("tag:registry.k8s.io/") && key != PAUSE
        })
        .expect("another registry.k8s.io tag in the cache");
    let first = other.lines().next().unwrap();
    let planted = index.join(sha256_hex(PAUSE.as_bytes()));
    let genuine = fs::read(&planted).unwrap();
    fs::write(
        &planted,
        format!("{first}\n{PAUSE}\nregistry.k8s.io/pause:3.10\n"),
    )
    .unwrap();
    (planted, genuine)
}

/// What `cache verify` lists on stdout for `cache`.
fn verify_listing(cache: &Path) -> String {
    let verified = run(&mut cache_cmd(cache, &["verify"]));
    String::from_utf8_lossy(&verified.stdout).into_owned()
}

/// The unlocked offline build refuses the planted pause naming the entry and `--locked`, and
/// writes nothing; `cache verify` says so too; `cache import` of that cache skips the entry,
/// naming it.
fn assert_planted_pause_refused(scene: &Scene, cache: &Path) {
    let d = scene.dir();
    let out = d.join("planted");
    let said = fails(
        &mut scene.build_pinned(cache, &out, &["--offline"]),
        1,
        &[
            "registry.k8s.io/pause:3.10",
            &format!("the cache's entry {PAUSE} cannot be tied to a verification"),
            "no signature for",
            "hint:",
            "--locked",
        ],
    );
    assert!(!said.contains("UNSIGNED"), "{said}");
    assert!(files_under(&out).is_empty());
    let listed = verify_listing(cache);
    assert!(
        listed.contains(&format!("unsigned index entry {PAUSE}: no signature for")),
        "{listed}"
    );
    let other_side = d.join("other-side");
    let imported = run(&mut cache_cmd(&other_side, &["import", p(cache)]));
    let skipped = stderr(&imported);
    assert!(
        skipped.contains(&format!("index entry {PAUSE} not imported"))
            && skipped.contains("DIR holds no signature for it"),
        "{skipped}"
    );
}

/// The ISO an amd64 build wrote into `out`.
fn iso_in(out: &Path) -> Vec<u8> {
    fs::read(out.join("setup-v1.33.1-x86_64.iso")).unwrap()
}

#[test]
fn an_unlocked_offline_build_refuses_a_planted_tag_with_no_cached_signature() {
    let scene = Scene::start();
    let d = scene.dir();
    let (cache, lock) = (d.join("cache"), d.join("run.lock"));
    let online = d.join("online");
    run(&mut scene.build_pinned(&cache, &online, &["--lock-file", p(&lock)]));

    let (planted, genuine) = plant_another_image_as_pause(&cache);
    assert_planted_pause_refused(&scene, &cache);

    // The lock still names what the online build verified: the locked path does not read the
    // tag, and makes the online ISO byte for byte, offline.
    let locked = d.join("locked");
    let args = ["--locked", p(&lock), "--offline", "--cache-dir", p(&cache)];
    let mut cmd = build(&scene.config, d, &args);
    run(cmd.args(["--output", p(&locked)]));
    assert!(
        iso_in(&locked) == iso_in(&online),
        "the locked offline ISO differs"
    );
    // The genuine entry back: the unlocked offline build verifies pause's cached signature.
    fs::write(&planted, genuine).unwrap();
    run(&mut scene.build_pinned(&cache, &d.join("offline"), &["--offline"]));
    let listed = verify_listing(&cache);
    assert!(!listed.contains("unsigned index entry"), "{listed}");
}

#[test]
fn a_cache_others_can_write_or_that_links_elsewhere_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (world, config) = world_in(d);
    let cache = d.join("cache");
    let out = d.join("out");
    let in_cache = || {
        let mut args = world_args(&world, world.dashboard_url());
        args.extend(["--cache-dir", p(&cache), "--output", p(&out)]);
        build(&config, d, &args)
    };
    run(&mut in_cache());
    let mode = |path: &Path, mode| fs::set_permissions(path, fs::Permissions::from_mode(mode));

    // Group- or world-writable without the sticky bit: whoever else can write it could plant.
    let index = cache.join("index");
    for (path, m, said) in [
        (&cache, 0o757, "world-writable"),
        (&cache, 0o775, "group-writable"),
        (&index, 0o777, "world-writable"),
    ] {
        mode(path, m).unwrap();
        let named = format!("cannot use the cache directory {}", path.display());
        let shown = format!("mode {m:04o}");
        for cmd in [&mut in_cache(), &mut cache_cmd(&cache, &["ls"])] {
            fails(cmd, 1, &[&named, &shown, said, "hint:", "chmod go-w"]);
        }
        mode(path, 0o755).unwrap();
    }
    run(&mut cache_cmd(&cache, &["verify"]));

    // Owned by another user (root running on nobody's cache).
    if root_or_skip("a cache owned by another user") {
        std::os::unix::fs::chown(&cache, Some(65534), Some(65534)).unwrap();
        let named = format!("cannot use the cache directory {}", cache.display());
        fails(&mut in_cache(), 1, &[&named, "owned by uid 65534", "hint:"]);
        std::os::unix::fs::chown(&cache, Some(0), Some(0)).unwrap();
    }

    // `index -> elsewhere`: refused, not followed, whatever lies there.
    let elsewhere = d.join("elsewhere");
    fs::rename(&index, &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &index).unwrap();
    let named = format!("cannot use the cache directory {}", index.display());
    for cmd in [
        &mut in_cache(),
        &mut cache_cmd(&cache, &["verify"]),
        &mut cache_cmd(&cache, &["import", p(&cache)]),
    ] {
        fails(cmd, 1, &[&named, "symbolic link", p(&elsewhere), "hint:"]);
    }
}
