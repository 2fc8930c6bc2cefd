//! The scene most hostile suites start from: a started world with its configuration in a temporary
//! directory, and `build` of its amd64 request with a cache and an output directory of the test's
//! choosing. It exists so that each test reads as its steps, not as the same argument lists again.

use std::path::{Path, PathBuf};
use std::process::Command;

use cks_iso_testworld::world::World;

use crate::support::hostile::{build, world_args, world_in};
use crate::support::p;

/// A started world, its configuration (and trust root) written into a directory of its own.
pub struct Scene {
    /// Declared before `dir`: the world stops before its directory goes.
    pub world: World,
    pub config: PathBuf,
    /// The world's autoscaler version, pinned by [`Scene::build_pinned`].
    pub autoscaler: String,
    dir: tempfile::TempDir,
}

impl Scene {
    pub fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let (world, config) = world_in(dir.path());
        let autoscaler = world.autoscaler_version().unwrap().to_owned();
        Scene {
            world,
            config,
            autoscaler,
            dir,
        }
    }

    /// The scene's directory: configuration, trust root, TMPDIR and whatever the test puts there.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// `cks-iso build` of the world's amd64 request into `out` with `cache`, and `extra`.
    pub fn build(&self, cache: &Path, out: &Path, extra: &[&str]) -> Command {
        let mut args = world_args(&self.world, self.world.dashboard_url());
        args.extend(["--cache-dir", p(cache), "--output", p(out)]);
        args.extend(extra);
        build(&self.config, self.dir(), &args)
    }

    /// [`Scene::build`] with the world's autoscaler release pinned (`--autoscaler-version`), as
    /// an unlocked `--offline` build needs it (docs/guide/locks-and-offline.md).
    pub fn build_pinned(&self, cache: &Path, out: &Path, extra: &[&str]) -> Command {
        let mut args = vec!["--autoscaler-version", self.autoscaler.as_str()];
        args.extend(extra);
        self.build(cache, out, &args)
    }
}
