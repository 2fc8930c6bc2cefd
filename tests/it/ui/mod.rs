//! What a user sees on the terminal (src/ui, src/cli, src/doctor, STYLE.md): errors with hints,
//! progress on stderr, `--log-format json`, and `doctor`'s checks. A new test of how a message,
//! a progress line or a log record reads goes here.

mod build_tags;
mod doctor;
mod log_json;
mod messages;
mod progress;
