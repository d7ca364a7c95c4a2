//! Why no event matched a sample's line, for `grammars check`: how far each candidate
//! pattern got, cut at its top-level boundaries.

use super::*;

/// For a line no event matched: how far each candidate pattern got, as lnav does — the
/// longest leading part of the regex (cut at a top-level boundary) that still matches.
pub(crate) fn explain_miss(set: &GrammarSet, line: &str) -> String {
    let mut out = String::new();
    // No prefix matched anywhere in the line: the events' regexes ran on the whole line,
    // and the prefix regex is the likelier mistake.
    let no_prefix = set.find_prefix(line, line.len()).is_none();
    for g in &set.grammars {
        let mut prefixes_said = false;
        // `events` are compiled from `spec.event` in order.
        for (spec, ev) in g.spec.event.iter().zip(&g.events) {
            let Some(at) = spec
                .literals
                .iter()
                .filter_map(|l| line.find(l.as_str()))
                .min()
            else {
                continue;
            };
            if no_prefix && !prefixes_said {
                out.push_str(&prefix_misses(g, line));
                prefixes_said = true;
            }
            // The text the regex ran on, as the scan gives it: after the governing prefix
            // (or after the wrappers of a line no prefix governs).
            let prefix = set.find_prefix(line, at);
            let start = prefix.as_ref().map_or_else(
                || line.len() - crate::base::text::peel_transport(line.as_bytes()).len(),
                |p| p.prefix_end,
            );
            let text = line.get(start..).unwrap_or("");
            let pattern = ev.regex.as_str();
            let best = furthest_cut(pattern, text);
            out.push_str(&format!(
                "  {}:{}: matched `{}`, failed at `{}`, on {} {:?}\n",
                g.spec.id,
                ev.kind,
                &pattern[..best],
                crate::base::text::truncate(&pattern[best..], 41),
                if prefix.is_some() {
                    "the text after the prefix"
                } else {
                    "the line (no prefix)"
                },
                crate::base::text::truncate(text, 61)
            ));
        }
    }
    if out.is_empty() {
        out.push_str("  no event literal occurs in the line\n");
    }
    out
}

/// For a line no prefix matched: that no prefix of grammar `g` matched, and how far the
/// prefix regex that got furthest went on it, by the same cut points as an event's.
fn prefix_misses(g: &Grammar, line: &str) -> String {
    let reach = |p: &CompiledPrefix| furthest_cut(p.regex.as_str(), line);
    // The furthest; of equals, the first written.
    let closest = (g.spec.prefix.iter().zip(&g.prefixes))
        .map(|(spec, p)| (reach(p), spec, p))
        .rev()
        .max_by_key(|(best, _, _)| *best);
    let Some((best, spec, p)) = closest else {
        return String::new();
    };
    let pattern = p.regex.as_str();
    format!(
        "  no prefix of grammar `{}` matched the line; closest, prefix `{}`: matched `{}`, failed at `{}`\n",
        g.spec.id,
        spec.id,
        crate::base::text::truncate(&pattern[..best], 61),
        crate::base::text::truncate(&pattern[best..], 41),
    )
}

/// The end of the longest leading part of `pattern` (cut at a `pattern_cut_points` point)
/// that matches `text`; 0 when none does. A leading part that matches has every shorter
/// one matching too (a top-level `|` aside), so the cut points are bisected: a few
/// compiles of the pattern's prefixes, not one per atom — a regex of thousands of atoms
/// (a `'''` string left open in a grammar file) took `grammars check` seconds per sample.
fn furthest_cut(pattern: &str, text: &str) -> usize {
    let cuts = pattern_cut_points(pattern);
    let matched =
        cuts.partition_point(|&cut| Regex::new(&pattern[..cut]).is_ok_and(|r| r.is_match(text)));
    matched
        .checked_sub(1)
        .and_then(|i| cuts.get(i))
        .copied()
        .unwrap_or(0)
}

/// Byte offsets in a regex where cutting it leaves a valid pattern prefix: after each
/// top-level atom (a char, an escape, a group or class, with its quantifier).
pub(super) fn pattern_cut_points(p: &str) -> Vec<usize> {
    let b = p.as_bytes();
    let mut cuts = Vec::new();
    let mut i = 0;
    let mut depth = 0i32;
    let mut in_class = false;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'[' if !in_class => {
                in_class = true;
                i += 1
            }
            b']' if in_class => {
                in_class = false;
                i += 1
            }
            b'(' if !in_class => {
                depth += 1;
                i += 1
            }
            b')' if !in_class => {
                depth -= 1;
                i += 1
            }
            _ => i += 1,
        }
        while i < b.len() && !in_class && matches!(b[i], b'?' | b'*' | b'+') {
            i += 1;
        }
        if depth == 0 && !in_class && i <= b.len() && p.is_char_boundary(i.min(b.len())) {
            cuts.push(i.min(b.len()));
        }
    }
    cuts
}
