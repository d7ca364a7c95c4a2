//! Settings' values as every section prints them: the config section, the cause's
//! suspects and the watch board word a value the same way.

use crate::base::text::sanitize;
use crate::model::config::pyrepr::PyValue;
use crate::model::config::Spelling;
use crate::render::cut;

/// A configuration value as the config section prints it: the server's syntax
/// (`spelling`: Python's `False`, Rust's `false`), cleaned, cut to `room` columns.
pub(crate) fn config_value(v: &PyValue, spelling: Spelling, room: usize) -> String {
    cut(&sanitize(&v.spelled(spelling)), room)
}

/// A changed setting's two values as the config section prints them. A dict or a call
/// too long for `room` on either side shows only the entries that changed, `…` standing
/// for the others (`{'free_gpu_memory_fraction': 0.85, …} -> {…: 0.95, …}` would hide
/// what changed once cut): `KvCacheConfig(free_gpu_memory_fraction=0.85, …)`.
pub(crate) fn config_change(
    old: &PyValue,
    was: Spelling,
    new: &PyValue,
    now: Spelling,
    room: usize,
) -> (String, String) {
    let fits = |v: &PyValue, s| v.spelled(s).chars().count() <= room;
    match changed_parts(old, new) {
        // The changed entries are what the row is for: they may take twice the room.
        Some((old_part, new_part)) if !fits(old, was) || !fits(new, now) => (
            cut(&sanitize(&elided(&old_part, was)), 2 * room),
            cut(&sanitize(&elided(&new_part, now)), 2 * room),
        ),
        _ => (config_value(old, was, room), config_value(new, now, room)),
    }
}

/// The entries of two dicts (or two calls of one callee, with the same positional
/// arguments) that differ, each side kept as a value of its own shape; `None` for other
/// values, or when every entry differs (nothing to leave out).
fn changed_parts(old: &PyValue, new: &PyValue) -> Option<(PyValue, PyValue)> {
    fn differing<K: PartialEq + Clone>(
        a: &[(K, PyValue)],
        b: &[(K, PyValue)],
    ) -> Option<Vec<(K, PyValue)>> {
        let out: Vec<(K, PyValue)> = (a.iter())
            .filter(|(k, v)| !b.iter().any(|(k2, v2)| k == k2 && v == v2))
            .cloned()
            .collect();
        (out.len() < a.len()).then_some(out)
    }
    // Entries are compared pairwise: past a thousand (no server prints so many settings in
    // one dict) the values are cut as any other.
    const MAX_ENTRIES: usize = 1000;
    let entries = |v: &PyValue| match v {
        PyValue::Dict(d) => d.len(),
        PyValue::Call { kwargs, .. } => kwargs.len(),
        _ => 0,
    };
    if entries(old).max(entries(new)) > MAX_ENTRIES {
        return None;
    }
    match (old, new) {
        (PyValue::Dict(a), PyValue::Dict(b)) => Some((
            PyValue::Dict(differing(a, b)?),
            PyValue::Dict(differing(b, a)?),
        )),
        (
            PyValue::Call {
                name,
                args,
                kwargs: a,
            },
            PyValue::Call {
                name: name2,
                args: args2,
                kwargs: b,
            },
        ) if name == name2 && args == args2 => {
            let part = |kwargs| PyValue::Call {
                name: name.clone(),
                args: args.clone(),
                kwargs,
            };
            Some((part(differing(a, b)?), part(differing(b, a)?)))
        }
        _ => None,
    }
}

/// A part of a dict or call spelled with `…` before its closing bracket for the entries
/// left out.
fn elided(part: &PyValue, spelling: Spelling) -> String {
    let mut text = part.spelled(spelling);
    let Some(close) = text.pop() else {
        return text;
    };
    let pad = if text.ends_with(' ') {
        text.pop();
        " "
    } else {
        ""
    };
    let empty = text.ends_with(['{', '(']);
    format!("{text}{}…{pad}{close}", if empty { "" } else { ", " })
}

/// An environment variable's value as a run showed it: the value, `(unset)` when the
/// run passed the point where it would have been printed, else `(not logged)`.
pub(crate) fn env_value(v: Option<&str>, logged: bool) -> String {
    match v {
        Some(v) => sanitize(v),
        None if logged => "(unset)".into(),
        None => "(not logged)".into(),
    }
}
