//! Every shell command the documentation prints works, or is at least understood by cks-iso: a
//! flag renamed or a required flag added breaks this test, not the reader who copies the line.
//!
//! Every fenced block of README.md and docs/**/*.md says what it is in its info string. A shell
//! block (`sh`, `bash`, `shell`, `console`) carries a second word:
//!
//! - `world`: run here, in order per page, in one directory per page, inside the test world
//!   with the variables `cks-iso-world` gives its command (`CKS_WORLD_NETWORK`, …, and a cache
//!   of the world's own), started as `CKS_WORLD_ALSO_KUBERNETES=1.33.0 CKS_WORLD_FAR_SIDE=far-side
//!   cks-iso-world` would start it. A line ending in `# exit N` must exit N; any other must
//!   exit 0.
//! - `far-side`: run after the world has stopped, in the same page's directory, with an empty
//!   cache of its own: the far side of an air gap.
//! - `upstream` (needs the real upstream, or a CloudStack) and `host` (needs more of this machine
//!   than the world: make, cargo, root, a package manager): not run; every `cks-iso` command in
//!   them must parse with cks-iso's own parser (and a `build` must name a whole request, as the
//!   binary checks before any request, unless `…` stands for flags left out), and every `make`
//!   target must be in the Makefile.
//! - `synopsis`: a command's form (`[--flag V]`, `A|B`): every `--flag` it names must be one the
//!   subcommand takes.
//!
//! A block with no info string, or a shell block with no second word, fails the test. The demo's
//! printed next steps are held to the same rules: `the_demo_keeps_to_itself_and_its_next_steps_run`
//! runs `make demo`'s script with its own home and checks that it never wrote there.
//!
//! Markdown is read with pulldown-cmark, as docs_links.rs reads it.

use std::collections::BTreeMap;
use std::path::Path;

use cks_iso::cli::{Cli, Command as Subcommand};
use cks_iso::plan;
use clap::Parser as _;
use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag};

mod run;

/// The languages whose blocks are commands.
const SHELLS: [&str; 4] = ["sh", "bash", "shell", "console"];

/// What a block's info string says of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mark {
    /// Run in the test world.
    World,
    /// Run after the world stopped.
    FarSide,
    /// Not run: needs the real upstream or more of the machine; parsed.
    Elsewhere,
    /// A command's form (`[--flag V]`, `A|B`): every flag it names must be one of the command's.
    Synopsis,
    /// Not commands (YAML, JSON, text, …).
    NotShell,
}

/// One fenced code block.
#[derive(Debug, Clone)]
struct Block {
    /// The page, relative to the repository.
    page: String,
    /// The line of the opening fence.
    line: usize,
    /// The info string.
    info: String,
    /// The contents.
    text: String,
}

impl Block {
    fn at(&self) -> String {
        format!("{}:{}", self.page, self.line)
    }
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every page under docs/, relative to the repository, sorted.
fn pages() -> Vec<String> {
    fn walk(dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path.strip_prefix(root()).unwrap().display().to_string());
            }
        }
    }
    let mut out = vec!["README.md".to_owned()];
    walk(&root().join("docs"), &mut out);
    out.sort();
    out
}

/// Every code block of `markdown` (the page `page`), fenced or indented.
fn blocks(page: &str, markdown: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (event, range) in Parser::new(markdown).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(kind)) => {
                let info = match kind {
                    CodeBlockKind::Fenced(info) => info.to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                let line = markdown[..range.start].matches('\n').count() + 1;
                let (page, text) = (page.to_owned(), String::new());
                open = Some(Block {
                    page,
                    line,
                    info,
                    text,
                });
            }
            Event::Text(text) => {
                if let Some(block) = open.as_mut() {
                    block.text.push_str(&text);
                }
            }
            Event::End(pulldown_cmark::TagEnd::CodeBlock) => out.extend(open.take()),
            _ => {}
        }
    }
    out
}

/// What is wrong with a block or a command of a page.
#[derive(Debug)]
enum Problem {
    /// A code block without an info string.
    NoInfo,
    /// A shell block whose second word is not a place it runs.
    Unmarked {
        language: String,
        second: Option<String>,
    },
    /// A line shlex cannot split into words.
    Unsplittable(String),
    /// cks-iso's parser refuses the command: its first line.
    Parse(String),
    /// A `build` whose request is not whole.
    Request(String),
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NoInfo => f.write_str(
                "a code block without an info string: say what it holds (```text, ```yaml, \
                 ```json), or for commands ```sh world, ```sh far-side, ```sh upstream or \
                 ```sh host (tests/it/docs/commands/mod.rs)",
            ),
            Self::Unmarked { language, second } => write!(
                f,
                "a ```{language} block marked {second:?}: add `world` (the test runs it in the \
                 test world), `far-side`, `upstream` or `host` (not run; its cks-iso commands are \
                 parsed) or `synopsis` (a command's form; its flags are checked) after the \
                 language"
            ),
            Self::Unsplittable(line) => write!(f, "cannot split into words: {line}"),
            Self::Parse(first) | Self::Request(first) => f.write_str(first),
        }
    }
}

/// What `info` marks its block as, or why it does not.
fn mark(info: &str) -> Result<Mark, Problem> {
    let mut words = info.split_whitespace();
    let Some(language) = words.next() else {
        return Err(Problem::NoInfo);
    };
    if !SHELLS.contains(&language) {
        return Ok(Mark::NotShell);
    }
    match words.next() {
        Some("world") => Ok(Mark::World),
        Some("far-side") => Ok(Mark::FarSide),
        Some("upstream" | "host") => Ok(Mark::Elsewhere),
        Some("synopsis") => Ok(Mark::Synopsis),
        other => Err(Problem::Unmarked {
            language: language.to_owned(),
            second: other.map(str::to_owned),
        }),
    }
}

/// The block's command lines, each with its continuation lines joined, comments and blank lines
/// left out; a `console` block's are its `$ ` lines.
fn lines(block: &Block) -> Vec<String> {
    let console = block.info.starts_with("console");
    let mut out: Vec<String> = Vec::new();
    let mut continued = false;
    for raw in block.text.lines() {
        let line = match (console, continued) {
            (_, true) => raw,
            (true, false) => match raw.strip_prefix("$ ") {
                Some(command) => command,
                None => continue,
            },
            (false, false) => raw,
        };
        let trimmed = line.trim();
        if !continued && (trimmed.is_empty() || trimmed.starts_with('#')) {
            continue;
        }
        let (body, more) = match trimmed.strip_suffix('\\') {
            Some(body) => (body, true),
            None => (trimmed, false),
        };
        match continued {
            true => {
                let last = out.last_mut().unwrap();
                last.push(' ');
                last.push_str(body);
            }
            false => out.push(body.to_owned()),
        }
        continued = more;
    }
    out
}

/// The simple commands of a shell line, each as its words without the variable assignments and
/// redirections around it; `sh -c 'TEXT'` (also after `cks-iso-world`) gives TEXT's commands.
fn commands(line: &str) -> Result<Vec<Vec<String>>, Problem> {
    let words = shlex::split(line).ok_or_else(|| Problem::Unsplittable(line.to_owned()))?;
    let mut out = Vec::new();
    let mut current: Vec<String> = Vec::new();
    let (mut skip_next, mut in_substitution) = (false, false);
    for word in words {
        // A process substitution (`2> >(jq …)`) is another command's, up to its `)`.
        let opens = word.starts_with(">(") || word.starts_with("<(");
        if in_substitution || (opens && !word.ends_with(')')) {
            in_substitution = !word.ends_with(')');
            skip_next = false;
            continue;
        }
        if skip_next || opens {
            skip_next = false;
            continue;
        }
        let (word, ends) = match word.strip_suffix(';') {
            Some(w) if !w.is_empty() => (w.to_owned(), true),
            _ => (word, false),
        };
        if ["|", "||", "&&", ";", "&"].contains(&word.as_str()) {
            out.push(std::mem::take(&mut current));
            continue;
        }
        if [">", ">>", "<", "2>", "2>>", "&>"].contains(&word.as_str()) {
            skip_next = true;
        } else if !(word.starts_with('>') || word.starts_with("2>") || word.starts_with('<')) {
            let assignment = current.is_empty()
                && word.split_once('=').is_some_and(|(name, _)| {
                    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                });
            let wrapper = current.is_empty() && ["sudo", "env", "time"].contains(&&*word);
            if !(assignment || wrapper) {
                current.push(word);
            }
        }
        if ends {
            out.push(std::mem::take(&mut current));
        }
    }
    out.push(current);
    let mut all = Vec::new();
    for command in out.into_iter().filter(|c| !c.is_empty()) {
        let inner = command
            .iter()
            .position(|w| w == "-c")
            .filter(|&at| at > 0 && ["sh", "bash"].contains(&program(&command[at - 1])));
        match inner.and_then(|at| command.get(at + 1)) {
            Some(text) => all.extend(commands(text)?),
            None if program(&command[0]) == "cks-iso-world" && command.len() > 1 => {
                all.push(command[1..].to_vec())
            }
            None => all.push(command),
        }
    }
    Ok(all)
}

/// The file name of a command's program (`target/release/cks-iso` → `cks-iso`).
fn program(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Whether cks-iso understands `words` (a `cks-iso …` command): its parser takes them, and a
/// `build` of a new request names everything a build needs, as the binary checks before any
/// request. `--help` and `--version` count as understood.
fn understood(words: &[String]) -> Result<(), Problem> {
    let cli = match Cli::try_parse_from(words) {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => return Ok(()),
        Err(e) => {
            let first = e.to_string().lines().next().unwrap_or_default().to_owned();
            return Err(Problem::Parse(first));
        }
    };
    // `…` stands for flags the page leaves out: the request is not whole on the page.
    let elided = words.iter().any(|w| w.contains('…'));
    if let Subcommand::Build(args) = cli.command
        && args.locked.is_empty()
        && !elided
    {
        let flags = plan::Flags {
            // Each of several releases is a request of its own; the first stands for them all.
            kubernetes: args.kubernetes.first().cloned(),
            cni: args.versions.cni.clone(),
            crictl: args.versions.crictl.clone(),
            arches: args.arches.clone(),
            etcd: args.versions.etcd.clone(),
            network: args.request.network.clone(),
            dashboard: args.request.dashboard.clone(),
            headlamp: args.request.headlamp.clone(),
            headlamp_version: args.request.headlamp_version.clone(),
            output: args.output.clone(),
            name: args.request.name.clone(),
        };
        plan::request(&args.positional, flags).map_err(|e| Problem::Request(e.to_string()))?;
    }
    Ok(())
}

/// The Makefile's targets.
fn make_targets() -> Vec<String> {
    let makefile = std::fs::read_to_string(root().join("Makefile")).unwrap();
    makefile
        .lines()
        .filter(|l| !l.starts_with(['\t', '#', ' ']) && !l.contains(":=") && !l.contains("?="))
        .filter_map(|l| l.split_once(':').map(|(t, _)| t))
        .flat_map(|targets| targets.split_whitespace().map(str::to_owned))
        .collect()
}

/// What is wrong with the commands of `lines` (each `cks-iso` must be understood, each `make`
/// target must exist), as `AT: problem` lines.
fn misunderstood(at: &str, lines: &[String]) -> Vec<String> {
    let targets = make_targets();
    let mut problems = Vec::new();
    for line in lines {
        let commands = match commands(line) {
            Ok(c) => c,
            Err(e) => {
                problems.push(format!("{at}: {e}"));
                continue;
            }
        };
        for command in commands {
            match program(&command[0]) {
                "cks-iso" => {
                    if let Err(e) = understood(&command) {
                        problems.push(format!("{at}: `{}`: {e}", command.join(" ")));
                    }
                }
                "make" => {
                    let unknown = command[1..]
                        .iter()
                        .filter(|w| !w.starts_with('-') && !w.contains('='))
                        .filter(|t| !targets.contains(t));
                    for target in unknown {
                        problems.push(format!("{at}: make {target}: no such target in Makefile"));
                    }
                }
                _ => {}
            }
        }
    }
    problems
}

/// What is wrong with the synopsis `lines`: a subcommand cks-iso does not have, or a `--flag` the
/// subcommand does not take.
fn synopsis_problems(at: &str, lines: &[String]) -> Vec<String> {
    use clap::CommandFactory as _;
    let flag = regex::Regex::new(r"--[a-z][a-z0-9-]*").unwrap();
    let mut problems = Vec::new();
    for line in lines {
        let mut words = line.split_whitespace();
        if words.next().map(program) != Some("cks-iso") {
            continue;
        }
        let mut command = Cli::command();
        let mut path = vec!["cks-iso".to_owned()];
        for word in words {
            match command.find_subcommand(word) {
                Some(sub) => {
                    path.push(word.to_owned());
                    command = sub.clone();
                }
                None => break,
            }
        }
        let mut known: Vec<String> = (command.get_arguments())
            .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
            .chain(["--help".to_owned(), "--version".to_owned()])
            .collect();
        known.extend(
            (Cli::command().get_arguments()).filter_map(|a| a.get_long().map(|l| format!("--{l}"))),
        );
        for found in flag.find_iter(line) {
            if !known.iter().any(|k| k == found.as_str()) {
                problems.push(format!(
                    "{at}: `{}` takes no {}",
                    path.join(" "),
                    found.as_str()
                ));
            }
        }
    }
    problems
}

/// Every block of every page.
fn all_blocks() -> Vec<Block> {
    pages()
        .iter()
        .flat_map(|page| blocks(page, &std::fs::read_to_string(root().join(page)).unwrap()))
        .collect()
}

#[test]
fn every_command_block_is_marked_and_every_cks_iso_command_in_it_parses() {
    let blocks = all_blocks();
    let mut problems = Vec::new();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut parsed = 0;
    for block in &blocks {
        match mark(&block.info) {
            Err(e) => problems.push(format!("{}: {e}", block.at())),
            Ok(Mark::NotShell) => {}
            Ok(Mark::Synopsis) => {
                *counts.entry("Synopsis".into()).or_default() += 1;
                problems.extend(synopsis_problems(&block.at(), &lines(block)));
            }
            Ok(m) => {
                *counts.entry(format!("{m:?}")).or_default() += 1;
                let lines = lines(block);
                parsed += lines.len();
                problems.extend(misunderstood(&block.at(), &lines));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
    // The pages hold dozens of command blocks; a reader that found none would pass vacuously.
    assert!(
        counts.values().sum::<usize>() > 40 && parsed > 60,
        "only {counts:?} blocks, {parsed} lines"
    );
    assert!(
        counts.contains_key("World"),
        "no block runs in the world: {counts:?}"
    );
}

/// The checker catches what it is for: an unmarked block, a shell block without a second word, an
/// unknown flag, a build missing its manifests, a make target that does not exist.
#[test]
fn the_check_catches_unmarked_blocks_unknown_flags_and_incomplete_builds() {
    let page = "```\nls\n```\n\n```sh\nls\n```\n\n```sh upstream\n\
                FOO=1 cks-iso build --kubernetes 1.33.1 --arch amd64 # the demo's old last line\n\
                cks-iso verify --no-such-flag out/x.iso | tee log\n\
                cks-iso-world sh -c 'cks-iso build --kubernetes 1.33.1 --network n --dashboard d'\n\
                cks-iso build out 1.33.1 1.6.2 1.33.0 \\\n    n.yaml d.yaml setup-v1.33.1 arm64\n\
                make demo && make no-such-target\n\
                cks-iso build … --log-format json 2> >(jq -c 'select(.a)')\n```\n\n\
                ```yaml\na: 1\n```\n\n\
                ```sh synopsis\ncks-iso cache import DIR [--locked FILE...] \\\n    \
                [--trusted-root FILE | --no-such-flag]\n```\n";
    let blocks = blocks("t.md", page);
    assert_eq!(blocks.len(), 5, "{blocks:?}");
    assert!(matches!(mark(&blocks[4].info), Ok(Mark::Synopsis)));
    assert_eq!(
        synopsis_problems("t.md:20", &lines(&blocks[4])),
        ["t.md:20: `cks-iso cache import` takes no --no-such-flag"]
    );
    assert!(
        mark(&blocks[0].info)
            .unwrap_err()
            .to_string()
            .contains("without an info string")
    );
    assert!(
        mark(&blocks[1].info)
            .unwrap_err()
            .to_string()
            .contains("add `world`")
    );
    assert!(matches!(mark(&blocks[2].info), Ok(Mark::Elsewhere)));
    assert!(matches!(mark(&blocks[3].info), Ok(Mark::NotShell)));
    let lines = lines(&blocks[2]);
    assert_eq!(lines.len(), 6, "{lines:?}");
    let problems = misunderstood("t.md:9", &lines);
    assert_eq!(problems.len(), 3, "{problems:#?}");
    assert!(problems[0].contains("--network"), "{problems:?}");
    assert!(problems[1].contains("--no-such-flag"), "{problems:?}");
    assert!(problems[2].contains("make no-such-target"), "{problems:?}");
}
