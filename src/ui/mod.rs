//! Everything the user sees on stderr: log lines and progress.
//!
//! stdout carries data only (paths, summaries, JSON); logs and progress go to stderr. On a
//! terminal progress is a bar; elsewhere (CI logs, pipes) it becomes a plain line every few
//! seconds, so logs stay readable. `-q` silences both except errors; `--no-progress` keeps the
//! log lines and drops the bars.
//!
//! With `--log-format json` every line on stderr is one JSON object, for CI systems: log records
//! as tracing-subscriber's JSON formatter writes them, progress as records of the target
//! `cks_iso::progress` (never bars), and the final error report as one `ERROR` record with its
//! causes and hint. The schema is documented in `docs/reference/logging.md` ("JSON logs").

use std::fmt;
use std::io::IsTerminal;

use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

use crate::env;
use crate::progress::Progress;

mod bars;

use bars::{AboveBars, Bar, Count, Json, Lines};

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

/// What stderr looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// Lines for people: `warning: …`, progress bars on a terminal.
    #[default]
    Text,
    /// One JSON object a line: log records and progress events, no bars, no colour.
    Json,
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
    /// Whether stderr carries JSON lines (`--log-format json`).
    pub json: bool,
}

impl Ui {
    /// Resolves the global flags against the environment.
    pub fn new(
        quiet: bool,
        verbose: u8,
        color: Color,
        no_progress: bool,
        format: LogFormat,
    ) -> Self {
        let terminal = std::io::stderr().is_terminal();
        let json = format == LogFormat::Json;
        let color = match color {
            _ if json => false,
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
            json,
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
        if self.json {
            let _ = tracing_subscriber::fmt()
                .json()
                .with_current_span(true)
                .with_span_list(false)
                .with_env_filter(filter)
                .with_writer(std::io::stderr)
                .with_ansi(false)
                .try_init();
            return;
        }
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(AboveBars)
            .with_ansi(self.color)
            .event_format(Plain { color: self.color })
            .try_init();
    }

    /// Progress in bytes for one task, labelled `what`.
    pub fn bytes(&self, what: &str) -> Box<dyn Progress> {
        self.bytes_group(&[what])
            .pop()
            .expect("one progress per task")
    }

    /// Progress in bytes for tasks that run at the same time, one per label: on a terminal, bars
    /// drawn together one under the other (spinners until their totals are known); otherwise
    /// each reports on its own.
    pub fn bytes_group(&self, whats: &[&str]) -> Vec<Box<dyn Progress>> {
        whats
            .iter()
            .map(|what| -> Box<dyn Progress> {
                match (self.progress, self.json, self.terminal) {
                    (false, _, _) => Box::new(()),
                    (true, true, _) => Box::new(Json::new(what)),
                    (true, false, false) => Box::new(Lines::new(what)),
                    (true, false, true) => Box::new(Bar::new(what)),
                }
            })
            .collect()
    }

    /// Progress of work whose size is not known up front (files fetched one by one): a spinner
    /// with the count and bytes on a terminal, a plain line every few seconds elsewhere, events
    /// in JSON mode.
    pub fn items(&self, what: &str) -> Box<dyn Progress> {
        match (self.progress, self.json, self.terminal) {
            (false, _, _) => Box::new(()),
            (true, true, _) => Box::new(Json::new(what)),
            (true, false, false) => Box::new(Lines::new(what)),
            (true, false, true) => Box::new(Count::new(what)),
        }
    }

    /// Prints `text` as the error report: the message, its causes once each, and a hint.
    pub fn error(&self, text: &str, causes: &[String], hint: Option<&str>) {
        if self.json {
            eprintln!("{}", error_record(text, causes, hint));
            return;
        }
        let paint = |code: &str, s: &str| match self.color {
            true => format!("\x1b[{code}m{s}\x1b[0m"),
            false => s.to_owned(),
        };
        let mut report = format!("{} {text}\n", paint("1;31", "error:"));
        for cause in causes {
            report.push_str(&format!("  {} {cause}\n", paint("2", "caused by:")));
        }
        if let Some(hint) = hint {
            report.push_str(&format!("{} {hint}\n", paint("1;36", "hint:")));
        }
        bars::above(report.as_bytes());
    }
}

/// The error report as one record shaped like the tracing ones: `message`, and `causes` (an
/// array) and `hint` in `fields`.
fn error_record(text: &str, causes: &[String], hint: Option<&str>) -> String {
    let mut fields = serde_json::Map::new();
    fields.insert("message".into(), text.into());
    fields.insert("causes".into(), causes.into());
    if let Some(hint) = hint {
        fields.insert("hint".into(), hint.into());
    }
    serde_json::json!({
        "timestamp": timestamp(std::time::SystemTime::now()),
        "level": "ERROR",
        "fields": fields,
        "target": "cks_iso",
    })
    .to_string()
}

/// Prints a command-line error (before the [`Ui`] exists): as clap renders it, or as one JSON
/// error record when the arguments ask for `--log-format json`. Help and version go to stdout.
pub fn print_parse_error(err: &clap::Error, args: &[std::ffi::OsString]) {
    let wants_json = args
        .windows(2)
        .any(|w| w[0] == "--log-format" && w[1] == "json")
        || args.iter().any(|a| a == "--log-format=json");
    if !wants_json || !err.use_stderr() {
        let _ = err.print();
        return;
    }
    let rendered = err.render().to_string();
    let mut lines = rendered.lines().filter(|l| !l.trim().is_empty());
    let top = lines.next().unwrap_or_default();
    let top = top.strip_prefix("error: ").unwrap_or(top);
    let rest: Vec<String> = lines.map(|l| l.trim().to_owned()).collect();
    eprintln!("{}", error_record(top, &rest, None));
}

/// `2026-01-31T12:34:56.123456Z`, as tracing-subscriber's JSON records write their time.
fn timestamp(at: std::time::SystemTime) -> String {
    let since = at.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs() as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Days since 1970-01-01 to a proleptic Gregorian date, counting from 0000-03-01 so that
    // leap days fall at the end of each 400/100/4-year cycle.
    let shifted = days + 719_468;
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = era * 400 + year_of_era + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:06}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        since.subsec_micros()
    )
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
        if let Some(release) = build_of(ctx) {
            write!(writer, "[{release}] ")?;
        }
        ctx.format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}

/// The release of the build an event happened in (the `build` span several builds at once run
/// in, [`crate::pipeline::matrix::Matrix::run`]): the lines of several builds interleave, and
/// each says whose it is.
fn build_of<S, N>(ctx: &FmtContext<'_, S, N>) -> Option<String>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    let scope = ctx.event_scope()?;
    scope
        .from_root()
        .find(|s| s.name() == "build")
        .and_then(|span| {
            let extensions = span.extensions();
            let fields = extensions.get::<tracing_subscriber::fmt::FormattedFields<N>>()?;
            fields.fields.strip_prefix("kubernetes=").map(str::to_owned)
        })
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::timestamp;

    #[test]
    fn timestamps_are_rfc3339_utc_with_microseconds() {
        let at = |secs: u64, micros: u64| {
            timestamp(UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_micros(micros))
        };
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(at(951_782_400, 7), "2000-02-29T00:00:00.000007Z");
        assert_eq!(at(1_709_251_199, 0), "2024-02-29T23:59:59.000000Z");
        assert_eq!(at(4_102_444_800, 123_456), "2100-01-01T00:00:00.123456Z");
    }

    #[test]
    fn the_error_record_is_one_json_object() {
        let line = super::error_record("top", &["a".into(), "b\nc".into()], Some("do x"));
        assert!(!line.contains('\n'));
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["level"], "ERROR");
        assert_eq!(v["fields"]["message"], "top");
        assert_eq!(v["fields"]["causes"][1], "b\nc");
        assert_eq!(v["fields"]["hint"], "do x");
    }
}

/// `1 file`, `2 files`: a count with the noun that fits it (STYLE.md, "Counts").
pub fn count(n: u64, one: &str, many: &str) -> String {
    match n {
        1 => format!("1 {one}"),
        n => format!("{n} {many}"),
    }
}

/// `text` safe to print on a terminal: control characters other than newline and tab (an
/// escape sequence in an ISO entry's name or a manifest line, a carriage return hiding what
/// precedes it) are written as `\u{1b}`. Everything else is unchanged.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match unsafe_char(c) {
            true => out.push_str(&c.escape_unicode().to_string()),
            false => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod printable_tests {
    #[test]
    fn control_characters_are_escaped_and_the_rest_is_kept() {
        assert_eq!(super::printable("a\tb\nc"), "a\tb\nc");
        assert_eq!(
            super::printable("x\u{1b}]0;pwned\u{7}\r\u{9b}y"),
            "x\\u{1b}]0;pwned\\u{7}\\u{d}\\u{9b}y"
        );
    }
}

/// The pipeline's progress goes where every other progress of a command goes.
impl crate::reporter::Reporter for Ui {
    fn items(&self, what: &str) -> Box<dyn Progress> {
        Ui::items(self, what)
    }

    fn bytes_group(&self, whats: &[&str]) -> Vec<Box<dyn Progress>> {
        Ui::bytes_group(self, whats)
    }

    fn bytes(&self, what: &str) -> Box<dyn Progress> {
        Ui::bytes(self, what)
    }
}
