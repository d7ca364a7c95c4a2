//! Grammar keys that parse but that the model would never read in the place they are
//! written: refused with the reason, so that a grammar says only what takes effect.
//! (Unknown keys are refused by the TOML shape itself, `spec`'s `deny_unknown_fields`.)

use super::compile::{err, has_capture};
use super::*;

/// The prefix captures the scanner reads (`grammar::set`'s prefix reading).
pub(in crate::grammar) const PREFIX_CAPTURES: &[&str] = &[
    "date", "md", "time", "stamp", "tags", "tp", "gpu", "grank", "pid", "proc", "host",
];
/// The captures a `[[suffix]]` is read for (`rank_of_captures`).
pub(super) const SUFFIX_CAPTURES: &[&str] = &["tags", "tp", "gpu", "grank"];
/// The captures a `[[process]]` name is read for (`Knowledge::process`).
pub(super) const PROCESS_CAPTURES: &[&str] = &["tags", "global_rank", "dp"];
/// The one capture an `[[outcome]]` wording is read for.
pub(super) const OUTCOME_CAPTURES: &[&str] = &["peer"];

/// The failure kinds a line's `set.failure` gives (an `oom` is its own event kind).
pub(crate) const SET_FAILURES: &[&str] = &[
    "not_enough_memory",
    "nccl",
    "timeout",
    "signal",
    "exception",
];

/// The failure kind a line's `failure` capture reads as: a kind's name, or a signal's
/// name (`SIGKILL`, `SIGTERM`: a process killed by a signal, as Python's multiprocessing
/// prints `exitcode=-9 (SIGKILL)`) as `signal`.
pub(crate) fn captured_failure(word: &str) -> Option<&'static str> {
    let signal_name = word
        .strip_prefix("SIG")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_uppercase()));
    if signal_name {
        return Some("signal");
    }
    SET_FAILURES.iter().find(|k| **k == word).copied()
}

/// A regex's named captures that nothing reads where the regex is used.
pub(in crate::grammar) fn only_read_captures<'a>(
    origin: &str,
    at: &str,
    mut capture_names: impl Iterator<Item = &'a str>,
    read: &[&str],
) -> Result<(), GrammarError> {
    match capture_names.find(|c| !read.contains(c)) {
        Some(c) => Err(err(
            origin,
            format!(
                "{at}: capture `{c}` is read by nothing here (the captures read are {}); make it a plain group `(?:…)`",
                read.join(", ")
            ),
        )),
        None => Ok(()),
    }
}

/// An event's `set` constants, checked against what reads them: `failure` and `phase`
/// only on a failure (`oom`, `error`) or a line that gives an outcome; `failure` only a
/// kind a line can set; `waits_for` only `peer`; no constant named like a capture.
pub(super) fn event_set(
    origin: &str,
    at: &str,
    ev: &EventSpec,
    regex: &[&str],
) -> Result<(), GrammarError> {
    let is_failure = kind::is_failure(&ev.kind);
    let stops = is_failure || ev.set.contains_key("outcome");
    for (key, value) in &ev.set {
        if has_capture(regex, key) {
            return Err(err(origin, format!(
                "{at}: set.{key} and the capture `{key}` give the same field, and the capture's value replaces the constant whenever it matches; name one of them differently"
            )));
        }
        match key.as_str() {
            "failure" | "phase" if !stops => {
                return Err(err(origin, format!(
                    "{at}: set.{key} is read only from failures (kind `oom` or `error`) and lines that give an outcome (`set.outcome`); on a `{}` event it would be ignored",
                    ev.kind
                )))
            }
            "failure" if ev.kind == kind::OOM => {
                return Err(err(origin, format!(
                    "{at}: set.failure on an `oom` event would be ignored: an `oom` event is always an out-of-memory failure"
                )))
            }
            "failure" if !SET_FAILURES.contains(&value.as_str()) => {
                let hint = if value == "oom" {
                    "; an out-of-memory line is an event of kind `oom`"
                } else {
                    ""
                };
                return Err(err(origin, format!(
                    "{at}: set.failure `{value}` is not a failure kind a line sets ({}){hint}",
                    SET_FAILURES.join(", ")
                )));
            }
            "waits_for" if value != "peer" => {
                return Err(err(origin, format!(
                    "{at}: set.waits_for `{value}`: the one value is `peer` (the rank waits for another rank)"
                )))
            }
            _ => {}
        }
    }
    Ok(())
}

/// A failure line with a phase places the failure in it; it cannot end the phase (the
/// phase would read as completed and the failure be placed in the next one).
pub(super) fn failure_edge(origin: &str, at: &str, ev: &EventSpec) -> Result<(), GrammarError> {
    let is_failure = kind::is_failure(&ev.kind);
    if is_failure && (ev.edge.as_deref() == Some("ends") || ev.then.is_some()) {
        return Err(err(origin, format!(
            "{at}: a failure does not end its phase: on an `{}` event `edge` is `begins` or `inside` (the default), and `then` is not read",
            ev.kind
        )));
    }
    Ok(())
}
