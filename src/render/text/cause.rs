//! The cause of a non-memory failure in words (`diff`'s `cause` rows, the TUI's Diff
//! view, JSON's `failure_cause.text`): the root's line quoted, the detail other lines
//! gave, and the changes between the runs that may have triggered it.

use crate::analysis::cause::{FailureCause, Setting, Suspect, SuspectWhy};
use crate::analysis::diff::RunDiff;
use crate::base::text::sanitize;

use super::outcome::failure_verb;

/// A setting's change as the config section prints it: `env NCCL_SOCKET_IFNAME (unset)
/// -> nonexistent0`, `dist_init_addr '127.0.0.1:29621' -> '127.0.0.1:29626'`.
pub(crate) fn setting_change(d: &RunDiff, s: &Setting) -> String {
    let value = |v: &crate::model::config::pyrepr::PyValue, spelling| {
        super::values::config_value(v, spelling, 40)
    };
    match s {
        Setting::Config(k) => {
            let cd = d.config.as_ref();
            let (was, now) = cd.map(|cd| cd.spelling).unwrap_or_default();
            if let Some(c) = cd.and_then(|cd| cd.changed.iter().find(|c| &c.key == k)) {
                let (old, new) = super::values::config_change(&c.old, was, &c.new, now, 40);
                format!("{k} {old} -> {new}")
            } else if let Some((_, v)) = cd.and_then(|cd| cd.added.iter().find(|(x, _)| x == k)) {
                format!("{k} (added) {}", value(v, now))
            } else if let Some((_, v)) = cd.and_then(|cd| cd.removed.iter().find(|(x, _)| x == k)) {
                format!("{k} (removed, was {})", value(v, was))
            } else {
                k.clone()
            }
        }
        Setting::Env(n) => match d.env.iter().find(|e| &e.name == n) {
            Some(e) => format!(
                "env {n} {} -> {}",
                super::values::env_value(e.baseline.as_deref(), e.baseline_logged),
                super::values::env_value(e.candidate.as_deref(), e.candidate_logged)
            ),
            None => format!("env {n}"),
        },
    }
}

fn suspect_text(d: &RunDiff, s: &Suspect) -> String {
    let change = setting_change(d, &s.setting);
    match &s.why {
        SuspectWhy::Named {
            found,
            said,
            source,
            line,
            ..
        } => format!(
            "{change} (the failure holds \"{}\": \"{}\", {}:{line})",
            sanitize(found),
            sanitize(said),
            sanitize(source)
        ),
        SuspectWhy::Listed | SuspectWhy::Other => change,
    }
}

/// The `cause` rows of a failure that is not about memory.
pub(crate) fn lines(d: &RunDiff, fc: &FailureCause) -> Vec<String> {
    let mut out = Vec::new();
    let verb = if fc.stalled {
        "stalled"
    } else {
        failure_verb(fc.kind)
    };
    let head = format!("{} {verb} in {}", fc.rank, fc.phase);
    // A rank reported dead: the line is the reporter's, the rank's own log silent.
    let by = (fc.reported_by.as_ref())
        .map(|w| format!("reported by {} at ", sanitize(w)))
        .unwrap_or_default();
    match &fc.quote {
        Some(q) => out.push(format!(
            "{head} ({by}{}:{}): {}",
            sanitize(&q.source),
            q.line,
            sanitize(q.text.trim())
        )),
        None => out.push(head),
    }
    for q in &fc.detail {
        out.push(format!(
            "also said ({}:{}): {}",
            sanitize(&q.source),
            q.line,
            sanitize(q.text.trim())
        ));
    }
    let suspects = suspect_lines(d, fc);
    let none = suspects.is_empty();
    out.extend(suspects);
    if none {
        out.push(if fc.suspects.is_empty() {
            "no setting the logs show changed between the runs".to_string()
        } else {
            "no change between the runs is one the grammars tie to this failure (see config)"
                .to_string()
        });
    }
    out
}

/// The changes a grammar's `[[suspect]]` ties to the failure, likeliest first (`likely
/// trigger: mem_frac 0.8 -> 0.97 (the failure holds "reserve": "cannot reserve",
/// mistbox.log:31)`: the word or new value that tied it, then the line);
/// none when no suspect ties a change to it. A memory failure's `cause` rows show these
/// under its first divergence, as a non-memory failure's show them under its line.
pub fn suspect_lines(d: &RunDiff, fc: &FailureCause) -> Vec<String> {
    let mut out = Vec::new();
    let named: Vec<&Suspect> = (fc.suspects.iter())
        .filter(|s| matches!(s.why, SuspectWhy::Named { .. }))
        .collect();
    let listed: Vec<&Suspect> = (fc.suspects.iter())
        .filter(|s| s.why == SuspectWhy::Listed)
        .collect();
    for (i, s) in named.iter().enumerate() {
        let label = if i == 0 { "likely trigger: " } else { "also: " };
        out.push(format!("{label}{}", suspect_text(d, s)));
    }
    if !listed.is_empty() {
        let label = if named.is_empty() {
            format!(
                "changes that can cause {} failures",
                fc.kind.name().replace('_', " ")
            )
        } else {
            "less likely".to_string()
        };
        out.push(format!(
            "{label}: {}",
            listed
                .iter()
                .map(|s| suspect_text(d, s))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    out
}
