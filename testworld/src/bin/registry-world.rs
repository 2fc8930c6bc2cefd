//! Runs the registry world until stdin closes, for trying cks-iso by hand and for `make bench`:
//! prints `KEY=VALUE` lines (registry, front, mirror arguments, references) on stdout.
//!
//! `registry-world [--front]`

use std::io::Read;

use cks_iso_testworld::registry::{FrontAuth, TokenFront, world};

fn main() {
    let front = std::env::args().any(|a| a == "--front");
    let world = world();
    println!("REGISTRY={}", world.registry.host());
    let front = front.then(|| TokenFront::start(&world.registry.host(), FrontAuth::Anonymous));
    let base = front.as_ref().map_or(world.registry.url(), TokenFront::url);
    println!("MIRRORS={}", world.mirror_args(&base).join(" "));
    for fixture in &world.corpus.fixtures {
        println!("IMAGE={}", fixture.reference());
    }
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}
