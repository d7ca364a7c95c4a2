//! The two runs' configurations, key by key, and why they could not be compared when
//! they could not.

use crate::model::config::{self, Config, ConfigDiff};
use crate::model::Run;

/// Why the configurations could not be compared in full.
#[derive(Clone, Debug, PartialEq)]
pub enum ConfigNote {
    /// A run has no configuration line.
    Missing {
        /// The run's name (the path given).
        run: String,
    },
    /// A run's configuration line could not be read.
    Unreadable {
        /// The run's name (the path given).
        run: String,
        /// Why the line could not be read.
        error: String,
    },
    /// A run's line is cut short: keys after the cut are not compared.
    CutShort {
        /// The baseline's line is cut.
        baseline: bool,
        /// The candidate's line is cut.
        candidate: bool,
    },
}

/// A run's configuration (read by the model with its grammar's config rule), and whether
/// its line was cut short.
fn run_config(run: &Run) -> Result<(Config, bool), ConfigNote> {
    match &run.config {
        None => Err(ConfigNote::Missing {
            run: run.name.clone(),
        }),
        Some(Ok(p)) => Ok((p.config.clone(), p.truncated)),
        Some(Err(e)) => Err(ConfigNote::Unreadable {
            run: run.name.clone(),
            error: e.to_string(),
        }),
    }
}

pub(super) fn compare_config(b: &Run, c: &Run) -> (Option<ConfigDiff>, Option<ConfigNote>) {
    match (run_config(b), run_config(c)) {
        (Ok((a, cut_a)), Ok((b_cfg, cut_b))) => {
            let mut d = config::diff(&a, &b_cfg);
            // Keys missing from a cut line are unknown, not removed or added.
            let mut note = None;
            if cut_a || cut_b {
                if cut_a {
                    d.added.clear();
                }
                if cut_b {
                    d.removed.clear();
                }
                note = Some(ConfigNote::CutShort {
                    baseline: cut_a,
                    candidate: cut_b,
                });
            }
            (Some(d), note)
        }
        (Err(e), _) | (_, Err(e)) => (None, Some(e)),
    }
}
