//! `cks-iso completions SHELL` and `cks-iso man [COMMAND]`: generated from the clap definitions,
//! so they cannot drift from the flags. Both print on stdout; the Debian package runs them at
//! package time (`make deb`).

use std::io;

use clap::CommandFactory;
use clap_mangen::Man;
use clap_mangen::roff::{Roff, bold, roman};

use super::AppError;
use crate::cli::{Cli, CompletionsArgs, ManArgs, Shell};
use crate::env;

/// The binary's name, as users type it and as the packages install it.
const BIN: &str = "cks-iso";

/// What each exit code means; the README's table says the same.
const EXIT_CODES: &[(&str, &str)] = &[
    ("0", "success (diff: identical)"),
    (
        "1",
        "the work failed (unreadable input, full disk, a download that does not verify, a failed doctor check, a signature verify-bundle or verify-image does not verify, ...); nothing partial is left behind; diff: the inputs differ",
    ),
    (
        "2",
        "usage or configuration error (unknown flag, invalid volume ID, malformed SOURCE_DATE_EPOCH, unknown key in the configuration file)",
    ),
    (
        "130",
        "interrupted (SIGINT, SIGTERM, SIGHUP); temporary files are removed first",
    ),
];

/// Prints the completion script for `args.shell`.
pub fn completions(args: CompletionsArgs) -> Result<(), AppError> {
    let shell = match args.shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), BIN, &mut buf);
    if shell == clap_complete::Shell::Bash {
        buf = fix_bash_hyphenated_bin(&buf);
    }
    crate::out::bytes(&buf);
    Ok(())
}

/// clap_complete's bash script labels the states of a hyphenated binary's subcommands
/// `cks__subcmd__iso__subcmd__build` while its dispatch loop arrives at `cks__iso__subcmd__build`,
/// so no subcommand's options ever complete (clap-rs/clap#6421, open). Spell the labels the way
/// the loop does; once clap_complete is fixed this replaces nothing. `tests/it/packaging.rs` checks
/// that `cks-iso build --kub` completes either way.
fn fix_bash_hyphenated_bin(script: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(script);
    let wrong = BIN.replace('-', "__subcmd__");
    let right = BIN.replace('-', "__");
    text.replace(&wrong, &right).into_bytes()
}

/// Prints the manual page of cks-iso, or of `args.command` (`cks-iso-COMMAND(1)`).
pub fn man(args: ManArgs) -> Result<(), AppError> {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    // Building propagates the global options into the subcommands and names them `cks-iso-X`.
    cmd.build();
    let mut buf = Vec::new();
    if args.command.is_empty() {
        main_page(cmd, &mut buf)
    } else {
        let mut page = cmd;
        for name in &args.command {
            let Some(sub) = page.find_subcommand(name).cloned() else {
                let names: Vec<&str> = page.get_subcommands().map(|s| s.get_name()).collect();
                let hint = match names.is_empty() {
                    true => format!("{} has no subcommands", page.get_name()),
                    false => format!("one of: {}", names.join(", ")),
                };
                return Err(AppError::usage(
                    anyhow::anyhow!("there is no subcommand {name:?} to print the page of"),
                    Some(hint),
                ));
            };
            page = sub;
        }
        man_for(page).render(&mut buf)
    }
    .map_err(|e| {
        AppError::failure(
            anyhow::Error::new(e).context("cannot render the manual page"),
            None,
        )
    })?;
    crate::out::bytes(&buf);
    Ok(())
}

/// The same title line on every page; no date, so the pages are reproducible.
fn man_for(cmd: clap::Command) -> Man {
    Man::new(cmd)
        .source(format!("{BIN} {}", env!("CARGO_PKG_VERSION")))
        .manual("User Commands")
}

/// `cks-iso(1)`: clap's sections plus ENVIRONMENT and EXIT STATUS, before VERSION.
fn main_page(cmd: clap::Command, w: &mut Vec<u8>) -> io::Result<()> {
    let man = man_for(cmd);
    man.render_title(w)?;
    man.render_name_section(w)?;
    man.render_synopsis_section(w)?;
    man.render_description_section(w)?;
    man.render_options_section(w)?;
    man.render_subcommands_section(w)?;

    let mut roff = Roff::new();
    roff.control("SH", ["ENVIRONMENT"]);
    for var in env::ALL {
        roff.control("TP", []);
        roff.text([bold(var.name)]);
        roff.text([roman(var.about.replace('`', ""))]);
    }
    roff.control("SH", ["EXIT STATUS"]);
    for (code, meaning) in EXIT_CODES {
        roff.control("TP", []);
        roff.text([bold(*code)]);
        roff.text([roman(*meaning)]);
    }
    roff.control("SH", ["FILES"]);
    roff.control("TP", []);
    roff.text([roman("$XDG_CACHE_HOME/cks-iso, else ~/.cache/cks-iso")]);
    roff.text([roman(
        "the cache of verified downloads and image blobs, kept by content (--cache-dir)",
    )]);
    roff.control("SH", ["SEE ALSO"]);
    roff.text([roman(
        "cks-iso-COMMAND(1) for each subcommand above; cks-iso COMMAND --help; the README in /usr/share/doc/cks-iso.",
    )]);
    roff.to_writer(w)?;

    man.render_version_section(w)
}
