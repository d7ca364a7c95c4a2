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
    let mut buf = Vec::new();
    // The `format` group makes the two flags exclusive and one of them required.
    let (exporter, dest): (&dyn Exporter, _) = if prometheus {
        (&Prometheus, None)
    } else {
        (&Perfetto, perfetto)
    };
    exporter.write(&r, &RunReport::of(&r), &mut buf)?;
    match dest {
        Some(p) if p.as_os_str() != "-" => {
            std::fs::write(p, &buf).with_context(|| format!("writing {}", p.display()))?
        }
        _ => {
            let mut stdout = io::stdout().lock();
            stdout.write_all(&buf)?;
            stdout.flush()?;
        }
    }
    Ok(0)
}
