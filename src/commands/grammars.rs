//! `rankscope grammars`: list the loaded grammars, or check samples.

use std::path::{Path, PathBuf};

use anyhow::Result;
use rankscope::grammar::{self, Grammar, GrammarSet};

use super::out;
use rankscope::base::text::sanitize;

pub fn list(gs: &GrammarSet) -> Result<u8> {
    let mut s = String::new();
    for g in &gs.grammars {
        s.push_str(&format!(
            "{:<10} {:<22} {:>3} events {:>3} samples  {}\n",
            // A user grammar's id, name and file name are its author's text.
            sanitize(&g.spec.id),
            sanitize(&g.spec.name),
            g.spec.event.len(),
            g.spec.sample.len(),
            sanitize(&g.origin)
        ));
    }
    if let Some(dir) = grammar::user_grammar_dir() {
        s.push_str(&format!(
            "user grammars: {} ({})\n",
            rankscope::base::text::shown_path(&dir),
            if dir.is_dir() { "found" } else { "absent" }
        ));
    }
    out(&s)?;
    Ok(0)
}

/// The text of the loaded grammar `id`: a built-in one as shipped, a user's as its file
/// now reads; control characters of a user's file are not printed.
pub fn show(gs: &GrammarSet, id: &str) -> Result<u8> {
    let Some(g) = gs.grammars.iter().find(|g| g.spec.id == id) else {
        let ids: Vec<String> = gs.grammars.iter().map(|g| sanitize(&g.spec.id)).collect();
        anyhow::bail!(
            "no loaded grammar has the id `{}`; the loaded ones: {}",
            sanitize(id),
            ids.join(", ")
        );
    };
    let text = match grammar::builtin_text(&g.origin) {
        Some(t) => t.to_string(),
        None => std::fs::read_to_string(&g.origin)
            .map_err(|e| anyhow::anyhow!("{}: {e}", sanitize(&g.origin)))?,
    };
    let mut s = String::with_capacity(text.len());
    for line in text.lines() {
        s.push_str(&sanitize(line));
        s.push('\n');
    }
    out(&s)?;
    Ok(0)
}

/// Every loaded grammar's samples, or only those of `file`. A file under check joins (or
/// replaces, by id, as `grammar::load_all` does for every grammar file) the loaded
/// grammars, so its samples are matched the way a run would read them.
pub fn check(gs: GrammarSet, extra: &[PathBuf], file: Option<&Path>) -> Result<u8> {
    let (set, only) = match file {
        Some(f) => {
            let id = Grammar::from_path(f)?.spec.id;
            let files: Vec<PathBuf> = extra.iter().cloned().chain([f.to_path_buf()]).collect();
            (GrammarSet::new(grammar::load_all(&files)?)?, Some(id))
        }
        None => (gs, None),
    };
    let mut failures = Vec::new();
    let mut checked = 0;
    let mut configs = Vec::new();
    for (i, g) in set.grammars.iter().enumerate() {
        if only.as_ref().is_some_and(|id| id != &g.spec.id) {
            continue;
        }
        checked += grammar::sample_count(g);
        // The model reads configurations; the grammar layer below it is handed the reader.
        let report = grammar::check_samples(&set, i, &rankscope::model::config::read_sample);
        failures.extend(report.failures);
        configs.extend(report.configs);
    }
    let mut s = String::new();
    for f in &failures {
        for line in f.lines() {
            s.push_str(&rankscope::base::text::sanitize(line));
            s.push('\n');
        }
    }
    s.push_str(&format!(
        "{} samples checked, {} failed{}\n",
        checked,
        failures.len(),
        configs_read(&configs, only.is_some())
    ));
    out(&s)?;
    Ok(if failures.is_empty() { 0 } else { 1 })
}

/// The configurations the samples gave, for the tally: `; configuration read: sample 3, 7
/// settings` for one grammar's file, a count when every loaded grammar was checked.
fn configs_read(configs: &[grammar::ConfigSample], one_grammar: bool) -> String {
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    if configs.is_empty() {
        return String::new();
    }
    let what = if configs.len() == 1 {
        "configuration"
    } else {
        "configurations"
    };
    if !one_grammar {
        return format!("; {} {what} read", configs.len());
    }
    let each: Vec<String> = (configs.iter())
        .map(|c| {
            format!(
                "sample {}, {}{}",
                c.sample,
                plural(c.settings, "setting", "settings"),
                if c.continued {
                    " on its line, the rest on the lines after"
                } else {
                    ""
                }
            )
        })
        .collect();
    format!("; {what} read: {}", each.join("; "))
}
