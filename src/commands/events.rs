//! `rankscope events`: every start-up event, filtered by `--kind` and `--rank`.

use std::path::PathBuf;

use anyhow::Result;
use rankscope::grammar::GrammarSet;
use rankscope::model::{EventFilter, Run};
use rankscope::render::{self, json};

use super::{out, out_json, out_ndjson, summary::run_id, LogContext};

pub fn run(
    cx: &LogContext,
    paths: &[PathBuf],
    as_json: bool,
    ndjson: bool,
    filter: &EventFilter,
) -> Result<u8> {
    if ndjson {
        cx.load_each_attempt(paths, |loaded| {
            let r = &loaded.run;
            check_filter(&cx.grammars, r, filter)?;
            let id = run_id(loaded);
            out_ndjson(
                json::event_messages(r, filter).map(|m| json::MessageDoc::new(m, id.clone())),
            )
        })?;
        return Ok(0);
    }
    let loaded = cx.load(paths)?;
    let r = &loaded.run;
    check_filter(&cx.grammars, r, filter)?;
    if as_json {
        out_json(&json::events_doc(r, filter, run_id(&loaded)))?;
    } else {
        out(&render::events_text(r, filter, cx.style))?;
    }
    // Not freed piece by piece, as in `summary`.
    std::mem::forget(loaded);
    Ok(0)
}

/// `--kind` and `--rank` values that can match nothing are mistakes: say so, with the
/// values that would match.
fn check_filter(gs: &GrammarSet, r: &Run, filter: &EventFilter) -> Result<()> {
    let mut known: Vec<&str> = gs
        .grammars
        .iter()
        .flat_map(|g| g.spec.event.iter().map(|e| e.kind.as_str()))
        .collect();
    known.sort_unstable();
    known.dedup();
    for k in &filter.kinds {
        if !known.contains(&k.as_str()) {
            anyhow::bail!(
                "--kind {k}: no grammar gives events of this kind; kinds: {}",
                known.join(", ")
            );
        }
    }
    if let Some(want) = &filter.rank {
        if !r.ranks.iter().any(|x| filter.keeps_rank(Some(&x.rank))) {
            let names: Vec<String> = r.ranks.iter().map(|x| x.rank.to_string()).collect();
            anyhow::bail!(
                "--rank {want}: no such rank in {}; ranks: {}",
                r.name,
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            );
        }
    }
    Ok(())
}
