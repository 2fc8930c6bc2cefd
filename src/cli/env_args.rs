//! Flags clap may also take from the environment (`env = …`), read the way [`crate::env::Var::get`]
//! reads a variable.
//!
//! clap takes a variable that is set but empty as an empty value; cks-iso has always taken it as
//! unset (`CCM_VERSION= cks-iso build …` builds the default CCM), so the wrapper drops such values
//! before the flags are read. It also keeps which flags the environment gave, for the messages
//! that name where a value came from (`AUTOSCALER_VERSION` rather than `--autoscaler-version`).

use std::ops::Deref;

use clap::parser::ValueSource;
use clap::{ArgMatches, Args, Command, FromArgMatches};

/// The flags `T`, with the ids of those that came from the environment.
#[derive(Debug, Clone, Default)]
pub struct FromEnv<T> {
    args: T,
    from_env: Vec<String>,
}

impl<T> FromEnv<T> {
    /// The flags themselves.
    pub fn into_inner(self) -> T {
        self.args
    }

    /// Whether the flag with this id (the field's name) took its value from the environment.
    pub fn from_env(&self, id: &str) -> bool {
        self.from_env.iter().any(|i| i == id)
    }
}

impl<T> Deref for FromEnv<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.args
    }
}

impl<T: Args + FromArgMatches> FromArgMatches for FromEnv<T> {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        Self::from_arg_matches_mut(&mut matches.clone())
    }

    fn from_arg_matches_mut(matches: &mut ArgMatches) -> Result<Self, clap::Error> {
        let ids: Vec<String> = T::augment_args(Command::new("ids"))
            .get_arguments()
            .map(|arg| arg.get_id().to_string())
            .filter(|id| matches.value_source(id) == Some(ValueSource::EnvVariable))
            .collect();
        let mut from_env = Vec::new();
        for id in ids {
            let empty = matches
                .get_raw(&id)
                .is_none_or(|mut values| values.all(|v| v.is_empty()));
            if empty {
                matches.try_clear_id(&id).ok();
            } else {
                from_env.push(id);
            }
        }
        Ok(Self {
            args: T::from_arg_matches_mut(matches)?,
            from_env,
        })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl<T: Args> Args for FromEnv<T> {
    fn augment_args(cmd: Command) -> Command {
        T::augment_args(cmd)
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        T::augment_args_for_update(cmd)
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::FromEnv;

    /// A flag backed by a variable every test run has: `PATH`.
    #[derive(Debug, clap::Args)]
    struct Flags {
        #[arg(long, env = "PATH")]
        path: Option<String>,
    }

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        flags: FromEnv<Flags>,
    }

    // An empty variable counting as unset is tested end to end (`tests/it/resolve/cli.rs`), where
    // the child's environment can be set without touching this process's.
    #[test]
    fn the_flag_beats_the_environment_and_the_source_is_kept() {
        let parse = |args: &[&str]| {
            let cli = Cli::try_parse_from([&["x"], args].concat()).unwrap();
            (cli.flags.path.clone(), cli.flags.from_env("path"))
        };
        let path = std::env::var("PATH").unwrap();
        assert_eq!(parse(&[]), (Some(path), true));
        assert_eq!(parse(&["--path", "2"]), (Some("2".into()), false));
        assert_eq!(parse(&["--path", ""]), (Some(String::new()), false));
    }
}
