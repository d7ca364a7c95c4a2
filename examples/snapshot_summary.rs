//! Reads one snapshot and prints its summary; used by `benches/snapshot_vs_python.sh`.
//! `snapshot_summary FILE [BASELINE]`: with two files, prints the diff BASELINE -> FILE.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::ExitCode;

use rankscope::render::text::mem as mem_text;
use rankscope::snapshot::{inspect, read_path};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(file) = args.first() else {
        eprintln!("usage: snapshot_summary FILE [BASELINE]");
        return ExitCode::from(2);
    };
    let rule = inspect::SiteRule::default();
    let read = |p: &str| match read_path(Path::new(p)) {
        Ok(s) => Some(s),
        Err(e) => {
            eprintln!("error: {e}");
            None
        }
    };
    let Some(snap) = read(file) else {
        return ExitCode::FAILURE;
    };
    let sum = inspect::summarize(&snap, &rule);
    match args.get(1) {
        None => print!(
            "{}",
            mem_text::summary_text(&sum, 12, rankscope::render::DEFAULT_WIDTH)
        ),
        Some(base) => {
            let Some(b) = read(base) else {
                return ExitCode::FAILURE;
            };
            let bs = inspect::summarize(&b, &rule);
            print!(
                "{}",
                mem_text::diff_text(
                    &inspect::diff(&bs, &sum),
                    12,
                    rankscope::render::DEFAULT_WIDTH
                )
            );
        }
    }
    ExitCode::SUCCESS
}
