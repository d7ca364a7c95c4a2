//! `grammars check`: a configuration key a grammar names (its memory model's settings, its
//! suspects') that its own `server_args` sample does not print, while it prints one nearly
//! the same, is a misspelling. It passes every other check, and then `diff` quietly loses
//! what it drives: the computed remedy (a fraction setting it cannot read) or the likely
//! trigger (a change it cannot match).

use super::{Grammar, GrammarSet};

/// One message per named key the grammar's complete `server_args` sample does not print;
/// none when the grammar has no such sample (its configuration is not known to check).
pub(super) fn unprinted_settings(set: &GrammarSet, g: &Grammar) -> Vec<String> {
    let Some((sample, keys)) = printed_keys(set, g) else {
        return Vec::new();
    };
    let mut named: Vec<(String, &str)> = Vec::new();
    if let Some(m) = &g.spec.memory_model {
        let fields = [
            ("`[memory_model]` `page_size`", m.page_size.as_deref()),
            ("`[memory_model]` `kv_dtype`", m.kv_dtype.as_deref()),
            ("`[memory_model]` `tp_size`", m.tp_size.as_deref()),
            (
                "`[memory_model.pool]` `fraction`",
                m.pool.as_ref().map(|p| p.fraction.as_str()),
            ),
        ];
        for (what, key) in fields {
            if let Some(k) = key {
                named.push((what.to_string(), k));
            }
        }
        for c in &m.category {
            if let Some(skip) = &c.skip {
                let what = format!(
                    "`[[memory_model.category]]` `{}`'s `skip.setting`",
                    c.category
                );
                named.push((what, skip.setting.as_str()));
            }
        }
        // A limit may be an event's field (`kind.field`) rather than a setting.
        for l in m.limits.iter().filter(|l| !l.contains('.')) {
            named.push(("`[memory_model]` `limits`".into(), l.as_str()));
        }
    }
    for (i, s) in g.spec.suspect.iter().enumerate() {
        for k in s.settings.iter().filter(|k| !is_environment(k)) {
            named.push((format!("`[[suspect]]` {}'s `settings`", i + 1), k.as_str()));
        }
    }
    named
        .into_iter()
        .filter(|(_, k)| !keys.iter().any(|p| p == k))
        .filter_map(|(what, k)| {
            // Servers print only some settings (vLLM its non-default ones): an unprinted
            // key is a typo only when a printed one is nearly it.
            let near = keys.iter().find(|p| nearly(p, k))?;
            Some(format!(
                "{}: {what} names `{k}`, which the `server_args` sample (sample {sample}) does \
                 not print; it prints `{near}`: write `{near}` if that is the setting — {}",
                g.origin,
                if what.contains("suspect") {
                    "a change of a setting the configuration does not print is never a likely \
                     trigger"
                } else {
                    "the memory model reads the setting's value from the configuration, and \
                     without it computes no remedy"
                }
            ))
        })
        .collect()
}

/// Two keys one of which is a misspelling of the other: one holds most of the other (a
/// word left out or added, `cache_max_entry` for `cache_max_entry_count`, not `model` in
/// `max_model_len`), or a long key differs by two letters, a shorter one by one after the
/// same first letter (not `pp_size` for `tp_size`: settings of a kind differ so).
fn nearly(printed: &str, named: &str) -> bool {
    let (short, long) = if printed.len() <= named.len() {
        (printed, named)
    } else {
        (named, printed)
    };
    let holds = long.contains(short) && short.len() * 10 >= long.len() * 6;
    let d = edits(printed, named);
    let same_start = printed.as_bytes().first() == named.as_bytes().first();
    short.len() >= 6 && (holds || (d <= 2 && short.len() >= 10) || (d == 1 && same_start))
}

/// The Levenshtein distance, on bytes (keys are ASCII), stopping early past 2.
fn edits(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len().abs_diff(b.len()) > 2 {
        return 3;
    }
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, &x) in a.iter().enumerate() {
        let mut row = vec![i + 1; b.len() + 1];
        for (j, &y) in b.iter().enumerate() {
            let cost = usize::from(x != y);
            row[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(row[j] + 1);
        }
        prev = row;
    }
    prev[b.len()]
}

/// Environment variables (`NCCL_IB_HCA`, `NCCL_IB_*`) are named beside settings: the run's
/// environment lines give them, not the configuration.
fn is_environment(key: &str) -> bool {
    let name = key.strip_suffix('*').unwrap_or(key);
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// The keys the grammar's first `server_args` sample prints, and its number, when its
/// configuration is all on its line.
fn printed_keys(set: &GrammarSet, g: &Grammar) -> Option<(usize, Vec<String>)> {
    let know = set.knowledge();
    g.spec.sample.iter().enumerate().find_map(|(i, s)| {
        if s.kind.as_deref() != Some(crate::base::event::kind::SERVER_ARGS) {
            return None;
        }
        let m = set.match_text(&s.line)?;
        if m.kind != crate::base::event::kind::SERVER_ARGS {
            return None;
        }
        let parsed = crate::model::config::Config::from_message(&m.message, g.id(), know).ok()?;
        if parsed.truncated || parsed.config.entries.is_empty() {
            return None;
        }
        let keys = parsed.config.entries.into_iter().map(|(k, _)| k).collect();
        Some((i + 1, keys))
    })
}
