//! Everything the user sees on stderr: log lines and progress.
//!
//! stdout carries data only (paths, summaries, JSON); logs and progress go to stderr. On a
//! terminal progress is a bar; elsewhere (CI logs, pipes) it becomes a plain line every few
//! seconds, so logs stay readable. `-q` silences both except errors; `--no-progress` keeps the
//! log lines and drops the bars.

use std::fmt;
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{HumanBytes, ProgressBar, ProgressDrawTarget, ProgressStyle};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

use crate::env;
use crate::progress::Progress;

/// When to colour stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Color {
    /// When stderr is a terminal and `NO_COLOR` is not set.
    #[default]
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// How chatty to be, decided once from the global flags.
#[derive(Debug, Clone, Copy)]
pub struct Ui {
    /// Only errors.
    pub quiet: bool,
    /// Extra log levels: 0 info, 1 debug, 2+ trace.
    pub verbose: u8,
    /// Whether stderr gets colour.
    pub color: bool,
    /// Whether progress is shown at all.
    pub progress: bool,
    /// Whether progress may be drawn as a bar (stderr is a terminal).
    pub terminal: bool,
}

impl Ui {
    /// Resolves the global flags against the environment.
    pub fn new(quiet: bool, verbose: u8, color: Color, no_progress: bool) -> Self {
        let terminal = std::io::stderr().is_terminal();
        let color = match color {
            Color::Always => true,
            Color::Never => false,
            Color::Auto => terminal && env::NO_COLOR.get().is_none(),
        };
        Self {
            quiet,
            verbose,
            color,
            progress: !quiet && !no_progress,
            terminal,
        }
    }

    /// Installs the log subscriber. `CKS_ISO_LOG` overrides the level the flags chose.
    pub fn init_logging(&self) {
        let level = match (self.quiet, self.verbose) {
            (true, _) => "error",
            (false, 0) => "info",
            (false, 1) => "debug",
            (false, _) => "trace",
        };
        let filter = env::CKS_ISO_LOG
            .get()
            .and_then(|f| tracing_subscriber::EnvFilter::try_new(f).ok())
            .unwrap_or_else(|| tracing_subscriber::EnvFilter::new(format!("cks_iso={level}")));
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .with_ansi(self.color)
            .event_format(Plain { color: self.color })
            .try_init();
    }

    /// Progress in bytes for one task, labelled `what`.
    pub fn bytes(&self, what: &str) -> Box<dyn Progress> {
        if !self.progress {
            return Box::new(());
        }
        if self.terminal {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template(
                    "{msg} {wide_bar} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} {eta}",
                )
                .expect("valid template"),
            );
            bar.set_message(what.to_owned());
            return Box::new(Bar(bar));
        }
        Box::new(Lines::new(what))
    }

    /// Prints `text` as the error report: the message, its causes once each, and a hint.
    pub fn error(&self, text: &str, causes: &[String], hint: Option<&str>) {
        let paint = |code: &str, s: &str| match self.color {
            true => format!("\x1b[{code}m{s}\x1b[0m"),
            false => s.to_owned(),
        };
        eprintln!("{} {text}", paint("1;31", "error:"));
        for cause in causes {
            eprintln!("  {} {cause}", paint("2", "caused by:"));
        }
        if let Some(hint) = hint {
            eprintln!("{} {hint}", paint("1;36", "hint:"));
        }
    }
}

/// A terminal progress bar.
struct Bar(ProgressBar);

impl Progress for Bar {
    fn start(&self, total: u64) {
        self.0.set_length(total);
    }
    fn advance(&self, bytes: u64) {
        self.0.inc(bytes);
    }
    fn finish(&self) {
        self.0.finish_and_clear();
    }
}

/// Progress as a plain line every few seconds, for logs.
struct Lines {
    what: String,
    state: Mutex<LineState>,
}

struct LineState {
    total: u64,
    done: u64,
    last: Instant,
}

const LINE_EVERY: Duration = Duration::from_secs(5);

impl Lines {
    fn new(what: &str) -> Self {
        Self {
            what: what.to_owned(),
            state: Mutex::new(LineState {
                total: 0,
                done: 0,
                last: Instant::now(),
            }),
        }
    }
}

impl Progress for Lines {
    fn start(&self, total: u64) {
        if let Ok(mut s) = self.state.lock() {
            s.total = total;
        }
    }
    fn advance(&self, bytes: u64) {
        let Ok(mut s) = self.state.lock() else { return };
        s.done += bytes;
        if s.last.elapsed() >= LINE_EVERY {
            s.last = Instant::now();
            let pct = (s.done * 100).checked_div(s.total).unwrap_or(0);
            eprintln!(
                "{}: {} of {} ({pct}%)",
                self.what,
                HumanBytes(s.done),
                HumanBytes(s.total)
            );
        }
    }
}

/// Log lines as `warning: …`, `error: …`, or just the message for info.
struct Plain {
    color: bool,
}

impl<S, N> FormatEvent<S, N> for Plain
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let (label, code) = match *event.metadata().level() {
            Level::ERROR => ("error: ", "1;31"),
            Level::WARN => ("warning: ", "1;33"),
            Level::INFO => ("", ""),
            Level::DEBUG => ("debug: ", "2"),
            Level::TRACE => ("trace: ", "2"),
        };
        if !label.is_empty() {
            match self.color {
                true => write!(writer, "\x1b[{code}m{label}\x1b[0m")?,
                false => write!(writer, "{label}")?,
            }
        }
        ctx.format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}
