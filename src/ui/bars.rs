//! The progress renderers behind [`super::Ui`]: bars and spinners on a terminal, plain lines
//! elsewhere, JSON records with `--log-format json`, and the writer that prints log lines above
//! the bars.
//!
//! Every bar of a run is drawn by one [`MultiProgress`]; a log line (or the final error) is
//! written while it is suspended — the bars are cleared, the line printed, the bars redrawn
//! below it — so no line is written over a bar and no frozen bar is left in the scrollback. A
//! bar whose total is not known yet is a spinner with what is done so far, never `0 B/0 B`.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use indicatif::{HumanBytes, MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::progress::{Progress, Source};

/// The one set of bars on stderr, made when the first bar is.
static BARS: OnceLock<MultiProgress> = OnceLock::new();

fn bars() -> &'static MultiProgress {
    BARS.get_or_init(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()))
}

/// Writes `bytes` to stderr above the bars (suspending them), or plainly when there are none.
pub(super) fn above(bytes: &[u8]) {
    let write = || {
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(bytes);
        let _ = err.flush();
    };
    match BARS.get() {
        Some(bars) => bars.suspend(write),
        None => write(),
    }
}

/// tracing's writer for text logs: each event is collected, then printed above the bars.
pub(super) struct AboveBars;

/// One log event's bytes, printed when tracing is done writing it.
pub(super) struct Line(Vec<u8>);

impl Write for Line {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        if !self.0.is_empty() {
            above(&std::mem::take(&mut self.0));
        }
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for AboveBars {
    type Writer = Line;
    fn make_writer(&'a self) -> Line {
        Line(Vec::new())
    }
}

const TICK: Duration = Duration::from_millis(120);

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template).expect("valid template")
}

/// A terminal bar: a spinner with the bytes done until [`Progress::start`] gives the total.
pub(super) struct Bar(ProgressBar);

impl Bar {
    pub(super) fn new(what: &str) -> Self {
        let bar = bars().add(ProgressBar::new_spinner());
        bar.set_style(style(
            "{spinner} {msg} {binary_bytes} {binary_bytes_per_sec}",
        ));
        bar.set_message(what.to_owned());
        bar.enable_steady_tick(TICK);
        Self(bar)
    }
}

impl Progress for Bar {
    fn start(&self, total: u64) {
        self.0.disable_steady_tick();
        self.0.set_length(total);
        self.0.set_style(style(
            "{msg} {wide_bar} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} {eta}",
        ));
    }
    fn advance(&self, bytes: u64) {
        self.0.inc(bytes);
    }
    fn finish(&self) {
        self.0.finish_and_clear();
        bars().remove(&self.0);
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        if !self.0.is_finished() {
            self.finish();
        }
    }
}

/// Items of unknown number and size on a terminal (files fetched one by one): a spinner with
/// how many are in place and the bytes downloaded.
pub(super) struct Count {
    bar: Bar,
    what: String,
    items: AtomicU64,
}

impl Count {
    pub(super) fn new(what: &str) -> Self {
        let bar = Bar::new(what);
        bar.0.set_style(style(
            "{spinner} {msg}, {binary_bytes} {binary_bytes_per_sec}",
        ));
        bar.0.set_message(format!("{what}: 0 done"));
        Self {
            bar,
            what: what.to_owned(),
            items: AtomicU64::new(0),
        }
    }
}

impl Progress for Count {
    fn start(&self, _: u64) {}
    fn advance(&self, bytes: u64) {
        self.bar.advance(bytes);
    }
    fn finish(&self) {
        self.bar.finish();
    }
    fn item(&self, _: &str, _: u64, _: Source) {
        let n = self.items.fetch_add(1, Ordering::Relaxed) + 1;
        self.bar.0.set_message(format!("{}: {n} done", self.what));
    }
}

/// Progress as a plain line every few seconds, for logs: `what: 3.00 MiB of 12.00 MiB (25%)`,
/// or, before a total is known, `what: 2 done, 3.00 MiB so far`.
pub(super) struct Lines {
    what: String,
    state: Mutex<LineState>,
}

struct LineState {
    total: Option<u64>,
    done: u64,
    items: u64,
    last: Instant,
}

/// How often [`Lines`] prints.
pub(super) const LINE_EVERY: Duration = Duration::from_secs(5);

impl Lines {
    pub(super) fn new(what: &str) -> Self {
        Self {
            what: what.to_owned(),
            state: Mutex::new(LineState {
                total: None,
                done: 0,
                items: 0,
                last: Instant::now(),
            }),
        }
    }

    fn line(&self, s: &LineState) -> String {
        match s.total {
            Some(total) => {
                let pct = (s.done * 100).checked_div(total).unwrap_or(0);
                format!(
                    "{}: {} of {} ({pct}%)",
                    self.what,
                    HumanBytes(s.done),
                    HumanBytes(total)
                )
            }
            None => format!(
                "{}: {} done, {} so far",
                self.what,
                s.items,
                HumanBytes(s.done)
            ),
        }
    }

    fn maybe_print(&self, s: &mut LineState) {
        if s.last.elapsed() >= LINE_EVERY {
            s.last = Instant::now();
            above(format!("{}\n", self.line(s)).as_bytes());
        }
    }
}

impl Progress for Lines {
    fn start(&self, total: u64) {
        if let Ok(mut s) = self.state.lock() {
            s.total = Some(total);
        }
    }
    fn advance(&self, bytes: u64) {
        let Ok(mut s) = self.state.lock() else { return };
        s.done += bytes;
        self.maybe_print(&mut s);
    }
    fn item(&self, _: &str, _: u64, _: Source) {
        let Ok(mut s) = self.state.lock() else { return };
        s.items += 1;
        self.maybe_print(&mut s);
    }
}

/// Progress as JSON records of the target `cks_iso::progress`: `start`, `advance` (at most once a
/// second), `item` (one blob or file in place, from the cache or the network) and `finish`.
pub(super) struct Json {
    phase: String,
    state: Mutex<JsonState>,
}

struct JsonState {
    total: Option<u64>,
    done: u64,
    last: Instant,
}

const JSON_EVERY: Duration = Duration::from_secs(1);

impl Json {
    pub(super) fn new(phase: &str) -> Self {
        Self {
            phase: phase.to_owned(),
            state: Mutex::new(JsonState {
                total: None,
                done: 0,
                last: Instant::now(),
            }),
        }
    }

    fn emit(&self, event: &str, s: &JsonState) {
        let phase = self.phase.as_str();
        let done = s.done;
        match s.total {
            Some(total) => tracing::info!(
                target: "cks_iso::progress",
                event,
                phase,
                bytes_done = done,
                bytes_total = total,
                "{phase}: {} of {}",
                HumanBytes(done),
                HumanBytes(total)
            ),
            None => tracing::info!(
                target: "cks_iso::progress",
                event,
                phase,
                bytes_done = done,
                "{phase}: {}",
                HumanBytes(done)
            ),
        }
    }
}

impl Progress for Json {
    fn start(&self, total: u64) {
        let Ok(mut s) = self.state.lock() else { return };
        s.total = Some(total);
        s.last = Instant::now();
        self.emit("start", &s);
    }
    fn advance(&self, bytes: u64) {
        let Ok(mut s) = self.state.lock() else { return };
        s.done += bytes;
        if s.last.elapsed() >= JSON_EVERY {
            s.last = Instant::now();
            self.emit("advance", &s);
        }
    }
    fn finish(&self) {
        let Ok(s) = self.state.lock() else { return };
        self.emit("finish", &s);
    }
    fn item(&self, item: &str, bytes: u64, source: Source) {
        let phase = self.phase.as_str();
        let source = source.as_str();
        tracing::info!(
            target: "cks_iso::progress",
            event = "item",
            phase,
            item,
            bytes,
            source,
            "{item}: {} from the {source}",
            HumanBytes(bytes)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_line_says_the_share_once_the_total_is_known_and_the_count_before() {
        let lines = Lines::new("downloading files");
        let mut s = LineState {
            total: None,
            done: 3 << 20,
            items: 2,
            last: Instant::now(),
        };
        assert_eq!(lines.line(&s), "downloading files: 2 done, 3.00 MiB so far");
        s.total = Some(12 << 20);
        assert_eq!(
            lines.line(&s),
            "downloading files: 3.00 MiB of 12.00 MiB (25%)"
        );
    }
}
