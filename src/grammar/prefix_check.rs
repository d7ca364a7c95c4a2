//! What `grammars check` says of a sample's line as its prefixes read it, before its
//! event: a `starts_with` the line does not begin with, a `pid` capture that is no number.

use super::Grammar;

/// A sample read by one of the grammar's prefixes that begins with none of that prefix's
/// `starts_with` literals: the scan would not take the prefix's lines for records (one
/// that gives no event would count as not understood, and would not end a traceback), so
/// the literal, not the sample, is wrong.
pub(super) fn starts_with_problem(g: &Grammar, line: &str) -> Option<String> {
    for (p, spec) in g.prefixes.iter().zip(&g.spec.prefix) {
        let lits: Vec<&str> = (spec.starts_with.iter())
            .map(String::as_str)
            .filter(|l| !l.is_empty())
            .collect();
        let Some(m) = p.regex.get().and_then(|r| r.find(line)) else {
            continue;
        };
        let record = &line[m.start()..];
        if lits.is_empty()
            || lits
                .iter()
                .any(|l| record.starts_with(l) || line.starts_with(l))
        {
            continue;
        }
        let head: String = record.chars().take(16).collect();
        return Some(format!(
            "prefix `{}` reads the line, which begins `{}`, with none of its `starts_with` \
             ({}): a line of this prefix that gives no event would count as not understood; \
             list what its records begin with (the shortest text every one of them begins \
             with, `[` for `[1,5]` and `[2,5]`)",
            spec.id,
            crate::base::text::sanitize(&head),
            lits.iter()
                .map(|l| format!("`{l}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    None
}

/// A prefix whose `pid` capture matched text that is no process number: the line would
/// name no process, and a run of such lines would merge every process into one.
pub(super) fn pid_problem(g: &Grammar, line: &str) -> Option<String> {
    g.prefixes.iter().zip(&g.spec.prefix).find_map(|(p, spec)| {
        let pid = p.regex.get()?.captures(line)?.name("pid")?.as_str();
        if pid.parse::<u32>().is_ok() {
            return None;
        }
        Some(format!(
            "prefix `{}`: its `pid` capture matched `{}`, which is no process number: capture \
             the digits alone (`(?P<pid>\\d+)`), and a host beside them as `host`",
            spec.id,
            crate::base::text::truncate(&crate::base::text::sanitize(pid), 40)
        ))
    })
}
