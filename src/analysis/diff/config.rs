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
    /// Neither run's configuration could be compared: the baseline's reason, then the
    /// candidate's (each `Missing` or `Unreadable`), so that a note names every run.
    Both {
        /// Why the baseline's configuration was not read.
        baseline: Box<ConfigNote>,
        /// Why the candidate's configuration was not read.
        candidate: Box<ConfigNote>,
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
        Some(Err(e)) => {
            // Stopped at JSON's `\"`: the configuration is inside a JSON string, which its
            // rule reads with `escaped = "json"` (as `grammars check` says of a sample).
            let at_escaped_quote = (run.events.iter())
                .find(|x| x.kind == crate::base::event::kind::SERVER_ARGS)
                .is_some_and(|x| e.at_escaped_quote(&x.message));
            let mut error = e.to_string();
            if at_escaped_quote {
                error.push_str(
                    "; the configuration is inside a JSON string (its quotes print as `\\\"`): \
                     its grammar's `[[config]]` reads it with `escaped = \"json\"`",
                );
            }
            Err(ConfigNote::Unreadable {
                run: run.name.clone(),
                error,
            })
        }
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
        (Err(eb), Err(ec)) => (
            None,
            Some(ConfigNote::Both {
                baseline: Box::new(eb),
                candidate: Box::new(ec),
            }),
        ),
        (Err(e), _) | (_, Err(e)) => (None, Some(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::ConfigNote;

    #[test]
    fn a_note_names_both_runs_whose_configuration_did_not_read() {
        let n = ConfigNote::Both {
            baseline: Box::new(ConfigNote::Unreadable {
                run: "a/".into(),
                error: "at byte 3: x".into(),
            }),
            candidate: Box::new(ConfigNote::Unreadable {
                run: "b/".into(),
                error: "at byte 3: x".into(),
            }),
        };
        let text = crate::render::text::diff::config_note(&n);
        assert!(
            text.contains("a/: configuration line not readable"),
            "{text}"
        );
        assert!(
            text.contains("b/: configuration line not readable"),
            "{text}"
        );
    }
}
