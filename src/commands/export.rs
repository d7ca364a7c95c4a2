//! `rankscope export`: a run as a Perfetto/Chrome trace or Prometheus metrics.

use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use rankscope::export::{perfetto::Perfetto, prometheus::Prometheus, Exporter};
use rankscope::report::RunReport;

use super::LogContext;

pub fn run(
    cx: &LogContext,
    paths: &[PathBuf],
    perfetto: Option<&PathBuf>,
    prometheus: bool,
) -> Result<u8> {
    let r = cx.load(paths)?.run;
    // The `format` group makes the two flags exclusive and one of them required.
    let (exporter, dest): (&dyn Exporter, _) = if prometheus {
        (&Prometheus, None)
    } else {
        (&Perfetto, perfetto)
    };
    let report = RunReport::of(&r);
    // Written through a buffer as it is made, not built whole first: the trace of a
    // 100,000-rank run is 63 MB.
    match dest {
        Some(p) if p.as_os_str() != "-" => {
            let writing = || format!("writing {}", rankscope::base::text::shown_path(p));
            let f = std::fs::File::create(p).with_context(writing)?;
            let mut w = io::BufWriter::with_capacity(1 << 16, f);
            exporter.write(&r, &report, &mut w).with_context(writing)?;
            w.flush().with_context(writing)?;
        }
        _ => {
            let mut w = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
            exporter.write(&r, &report, &mut w)?;
            w.flush()?;
        }
    }
    Ok(0)
}
