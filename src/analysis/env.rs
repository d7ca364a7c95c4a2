//! The environment toggles a run's logs print (`NCCL_*`, `SGLANG_*`, `VLLM_*` …) and how
//! two runs' differ.

use std::collections::BTreeMap;

use crate::model::Run;

/// One environment variable whose value differs between the runs.
#[derive(Clone, Debug, PartialEq)]
pub struct EnvChange {
    /// The variable's name, as the log printed it.
    pub name: String,
    /// `None`: the run did not print it.
    pub baseline: Option<String>,
    /// `None`: the run did not print it.
    pub candidate: Option<String>,
    /// Whether the run's absence of a value means unset: it printed its settings (some
    /// environment line) and reached ready, so it passed the point where the other run
    /// printed this one. Otherwise a missing value is "not logged", never "unset".
    pub(crate) baseline_logged: bool,
    /// As `baseline_logged`, for the candidate.
    pub candidate_logged: bool,
}

/// The environment toggles a run's logs reveal, first value seen per name.
pub(crate) fn env_of(run: &Run) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for e in run.events.iter().filter(|e| e.kind == "env") {
        if let (Some(n), Some(v)) = (
            e.field("name").and_then(|v| v.as_text()),
            e.field("value").and_then(|v| v.as_text()),
        ) {
            out.entry(n.to_string()).or_insert_with(|| v.to_string());
        }
    }
    out
}

pub(super) fn env_changes(b: &Run, c: &Run) -> Vec<EnvChange> {
    let (eb, ec) = (env_of(b), env_of(c));
    let (b_logged, c_logged) = (b.ready && !eb.is_empty(), c.ready && !ec.is_empty());
    let mut names: Vec<&String> = eb.keys().chain(ec.keys()).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .filter(|n| eb.get(*n) != ec.get(*n))
        .map(|n| EnvChange {
            name: n.clone(),
            baseline: eb.get(n).cloned(),
            candidate: ec.get(n).cloned(),
            baseline_logged: eb.contains_key(n) || b_logged,
            candidate_logged: ec.contains_key(n) || c_logged,
        })
        .collect()
}
