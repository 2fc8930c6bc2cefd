//! The arguments of `cks-iso completions` and `cks-iso man`.

use clap::Args;

/// `cks-iso completions`.
#[derive(Debug, Args)]
#[command(after_help = "Install, e.g.:\n  \
    cks-iso completions bash > ~/.local/share/bash-completion/completions/cks-iso\n  \
    cks-iso completions zsh > ~/.zfunc/_cks-iso   # a directory on $fpath\n  \
    cks-iso completions fish > ~/.config/fish/completions/cks-iso.fish")]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// A shell cks-iso writes completions for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Shell {
    /// GNU bash (bash-completion).
    Bash,
    /// Z shell.
    Zsh,
    /// fish.
    Fish,
}

/// `cks-iso man`.
#[derive(Debug, Args)]
#[command(after_help = "Read it with: cks-iso man | man -l -")]
pub struct ManArgs {
    /// The subcommand whose page to print, e.g. `build` for cks-iso-build(1) or `cache export`
    /// for cks-iso-cache-export(1) [default: cks-iso(1)].
    #[arg(value_name = "COMMAND")]
    pub command: Vec<String>,
}
