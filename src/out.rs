//! stdout, the data channel: every line of data a command prints goes through here.
//!
//! `println!` panics when stdout is a closed pipe (`cks-iso diff a b | head -1`), and each command
//! handling that on its own is how only some of them did. Here it is handled once: a closed
//! stdout means the reader has all it wanted, so the run ends quietly with exit 0, after removing
//! every pending temporary path as an interrupt does (no partial ISO, no stale temp files). Any
//! other write error (a full disk behind `> file`) ends the run with exit 1 and says so.

use std::fmt;
use std::io::{self, Write};

use crate::atomic;

/// Prints one line of data to stdout, like `println!`, through `out::line`.
#[macro_export]
macro_rules! outln {
    () => {
        $crate::out::line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::out::line(format_args!($($arg)*))
    };
}

/// Writes `args` and a newline to stdout, control characters escaped as on stderr
/// ([`crate::ui::printable`]): a line of data may carry what a server or an ISO said (a version
/// name from CloudStack's listing), and a terminal escape in it must not reach the terminal.
pub fn line(args: fmt::Arguments<'_>) {
    let text = args.to_string();
    let mut out = io::stdout().lock();
    let written = out
        .write_all(crate::ui::printable(&text).as_bytes())
        .and_then(|()| out.write_all(b"\n"));
    finish(written.and_then(|()| out.flush()));
}

/// Writes `bytes` as they are (a man page, a completion script, a JSON document) to stdout.
pub fn bytes(bytes: &[u8]) {
    let mut out = io::stdout().lock();
    let written = out.write_all(bytes);
    finish(written.and_then(|()| out.flush()));
}

fn finish(result: io::Result<()>) {
    match result {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => atomic::exit_removing_pending(0),
        Err(e) => {
            // The one report a failed write to stdout gets; stderr is the only channel left.
            eprintln!("error: cannot write to stdout: {e}");
            atomic::exit_removing_pending(1)
        }
    }
}
