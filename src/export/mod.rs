//! Exports for the tools people already have: a Chrome/Perfetto trace to look at a run
//! on a timeline, Prometheus text to put start-up figures on a dashboard. Each format is
//! its own module behind one trait, as hyperfine does with its exporters.

pub mod identity;
pub mod perfetto;
pub mod prometheus;

use std::io::{self, Write};

use crate::model::Run;
use crate::report::RunReport;

/// One export format: writes a run and its report to `out` in the format's own syntax.
pub trait Exporter {
    /// Writes the whole export; an error is the writer's only.
    fn write(&self, run: &Run, report: &RunReport, out: &mut dyn Write) -> io::Result<()>;
}
