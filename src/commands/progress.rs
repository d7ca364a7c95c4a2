//! The progress bar for large inputs: on stderr only, only when stderr is a terminal,
//! never while a command writes JSON or an export (scripts read those).

use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::cli::Command;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use rankscope::session::Inputs;

static MACHINE_OUTPUT: AtomicBool = AtomicBool::new(false);
const MIN_BYTES: u64 = 100_000_000;
const MIN_FILES: usize = 32;

/// Commands whose stdout a program reads get no progress bar.
pub fn set_machine_output(c: &Command) {
    let machine = match c {
        Command::Summary { json, ndjson, .. } => *json || *ndjson,
        Command::Diff { json, .. } => *json,
        Command::Events { json, ndjson, .. } => *json || *ndjson,
        Command::Export { .. } => true,
        _ => false,
    };
    MACHINE_OUTPUT.store(machine, Ordering::Relaxed);
}

pub struct Bar {
    bar: ProgressBar,
    /// Bytes read so far per source: the callback reports running totals.
    seen: Mutex<HashMap<usize, u64>>,
}

impl Bar {
    pub fn report(&self, source: usize, total: u64) {
        let Ok(mut seen) = self.seen.lock() else {
            return;
        };
        let last = seen.entry(source).or_insert(0);
        self.bar.inc(total.saturating_sub(*last));
        *last = total;
    }
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

pub fn bar_for(inputs: &Inputs) -> Option<Bar> {
    if MACHINE_OUTPUT.load(Ordering::Relaxed) || !std::io::stderr().is_terminal() {
        return None;
    }
    let bytes = inputs.known_log_bytes();
    if bytes < MIN_BYTES && inputs.logs().count() < MIN_FILES {
        return None;
    }
    static MULTI: OnceLock<MultiProgress> = OnceLock::new();
    let multi = MULTI.get_or_init(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()));
    let bar = multi.add(ProgressBar::new(bytes));
    let style = ProgressStyle::with_template(
        "{prefix} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} {eta}",
    )
    .map(|s| s.progress_chars("=> "))
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    bar.set_prefix(super::shown(&inputs.paths));
    Some(Bar {
        bar,
        seen: Mutex::new(HashMap::new()),
    })
}
