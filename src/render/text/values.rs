//! Settings' values as every section prints them: the config section, the cause's
//! suspects and the watch board word a value the same way.

use crate::base::text::sanitize;
use crate::render::cut;

/// A configuration value as the config section prints it: the server's syntax
/// (`spelling`: Python's `False`, Rust's `false`), cleaned, cut to `room` columns.
pub(crate) fn config_value(
    v: &crate::model::config::pyrepr::PyValue,
    spelling: crate::model::config::Spelling,
    room: usize,
) -> String {
    cut(&sanitize(&v.spelled(spelling)), room)
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
