//! One module per subcommand: each reads its arguments, loads what it needs, asks the
//! library for the analysis and the rendering, and writes stdout. They live in the binary
//! because they are where errors get their user-facing context (`anyhow`), which the
//! library does not use. Only the commands that read a log load grammars: `mem`,
//! `schema`, `completions` and `man` work whatever is in the user grammar directory.

pub mod completions;
pub mod diff;
pub mod events;
pub mod export;
pub mod grammars;
pub mod man;
pub mod mem;
pub mod progress;
pub mod report;
pub mod schema;
pub mod summary;
pub mod tui;
pub mod watch;

use std::io::{self, Write};
use std::path::PathBuf;

use crate::cli::LogArgs;
use anyhow::Result;
use rankscope::grammar::{self, GrammarSet};
use rankscope::render::Style;
use rankscope::session::{Inputs, LoadOptions, Session};

/// What every command that reads a log needs: the run's grammars, the load options and
/// the text style.
pub struct LogContext {
    pub grammars: GrammarSet,
    pub opts: LoadOptions,
    pub style: Style,
    /// `--attempt all`: `load_each_attempt` reads every start-up; `load` refuses.
    pub all_attempts: bool,
}

impl LogContext {
    pub fn new(log: &LogArgs, style: Style) -> Result<LogContext> {
        Ok(LogContext {
            grammars: GrammarSet::for_reading_logs(grammar::load_all(&log.grammars)?)?,
            opts: LoadOptions {
                attempt: match log.attempt {
                    Some(crate::cli::Attempt::Number(n)) => Some(n as usize),
                    _ => None,
                },
                clock_align: !log.no_clock_align,
                ..LoadOptions::default()
            },
            style,
            all_attempts: log.attempt == Some(crate::cli::Attempt::All),
        })
    }

    /// The context of a command that shows no run identity: files are not hashed as
    /// they are read ([`LoadOptions::digest`]).
    pub fn without_identity(mut self) -> LogContext {
        self.opts.digest = false;
        self
    }

    /// Every start-up of the run, first to last, each as `--attempt N` gives it, handed
    /// to `each` (`Session::load_every_attempt`: a one-node run is read once). Without
    /// `--attempt all`, the one start-up `--attempt` names.
    pub fn load_each_attempt(
        &self,
        paths: &[PathBuf],
        mut each: impl FnMut(&Session) -> Result<()>,
    ) -> Result<()> {
        if !self.all_attempts {
            return each(&self.load(paths)?);
        }
        // Each start-up is dropped before the next is built: memory stays the log's
        // events and one start-up's model, however many the log holds.
        self.behind_bar(paths, |inputs, report, logs_read| {
            Session::load_every_attempt(&self.grammars, inputs, &self.opts, report, |s| {
                logs_read();
                each(s)
            })
        })
    }

    /// One run, with its files (for snapshots and the run's identity), behind the
    /// progress bar when the input is large. The files are listed once, for the bar's
    /// total and the reading.
    pub fn load(&self, paths: &[PathBuf]) -> Result<Session> {
        self.load_with(paths, &self.opts)
    }

    fn load_with(&self, paths: &[PathBuf], opts: &LoadOptions) -> Result<Session> {
        if self.all_attempts {
            anyhow::bail!(
                "--attempt all writes every start-up only with `events --ndjson` and \
                 `summary --ndjson`; give a start-up's number (--attempt 1, 2, …)"
            );
        }
        self.behind_bar(paths, |inputs, report, _| {
            Ok(Session::load(&self.grammars, inputs, opts, report)?)
        })
    }

    /// [`LogContext::load`], the run's equal messages and fields shared with the other
    /// runs read with `texts` (`diff`'s two runs print mostly the same lines).
    pub fn load_sharing(
        &self,
        paths: &[PathBuf],
        texts: &std::sync::Arc<rankscope::session::SharedTexts>,
    ) -> Result<Session> {
        let opts = LoadOptions {
            texts: Some(texts.clone()),
            ..self.opts.clone()
        };
        self.load_with(paths, &opts)
    }

    /// Reads `paths` behind the progress bar when the input is large: `read` is given the
    /// inputs (listed once, for the bar's total and the reading), the bar's report, and
    /// a call that clears the bar once the logs are read (before output is written); it
    /// is cleared when `read` returns in any case.
    fn behind_bar<T>(
        &self,
        paths: &[PathBuf],
        read: impl FnOnce(&Inputs, &(dyn Fn(usize, u64) + Sync), &dyn Fn()) -> Result<T>,
    ) -> Result<T> {
        let inputs = Inputs::discover(paths)?;
        let bar = progress::bar_for(&inputs);
        let report = |source: usize, n: u64| {
            if let Some(b) = &bar {
                b.report(source, n);
            }
        };
        let cleared = std::cell::Cell::new(false);
        let clear = || {
            if let (false, Some(b)) = (cleared.replace(true), &bar) {
                b.finish();
            }
        };
        let out = read(&inputs, &report, &clear);
        clear();
        out
    }
}

/// The model shape `--model-config` names, read and checked.
pub fn model_shape(
    args: &crate::cli::MemoryArgs,
) -> Result<Option<rankscope::analysis::capacity::ModelShape>> {
    use anyhow::Context;
    let Some(path) = &args.model_config else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("--model-config {}", path.display()))?;
    let shape = rankscope::analysis::capacity::ModelShape::from_json(&text)
        .with_context(|| format!("--model-config {}", path.display()))?;
    Ok(Some(shape))
}

/// Paths as the user gave them, for messages.
pub fn shown(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| rankscope::base::text::shown_path(p))
        .collect::<Vec<_>>()
        .join(" + ")
}

pub fn out(text: &str) -> Result<()> {
    let mut stdout = io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()?;
    Ok(())
}

/// One pretty-printed document, written as it is serialised: a 100,000-rank summary is
/// ~100 MB of JSON, which a string built first held twice over at its last doubling.
pub fn out_json<T: serde::Serialize>(doc: &T) -> Result<()> {
    let mut stdout = io::BufWriter::new(io::stdout().lock());
    // Through io::Error, so that a closed pipe is seen as one and ends quietly.
    serde_json::to_writer_pretty(&mut stdout, doc).map_err(io::Error::from)?;
    stdout.write_all(b"\n")?;
    stdout.flush()?;
    Ok(())
}

/// NDJSON: one compact document a line.
pub fn out_ndjson<T: serde::Serialize>(records: impl IntoIterator<Item = T>) -> Result<()> {
    let mut stdout = io::BufWriter::new(io::stdout().lock());
    for record in records {
        // Through io::Error, so that a closed pipe is seen as one and ends quietly.
        serde_json::to_writer(&mut stdout, &record).map_err(io::Error::from)?;
        stdout.write_all(b"\n")?;
    }
    stdout.flush()?;
    Ok(())
}
