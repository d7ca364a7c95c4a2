//! Capacity in words: the KV pool in tokens, bytes per token (log and model), requests
//! of each length that fit at once, the server's own concurrency line and sizing rule;
//! with a baseline, what the changes cost.

use crate::analysis::capacity::{Capacity, CapacityCost};
use crate::base::units::{group_thousands, human_bytes};
use crate::model::Run;
use crate::render::text::breakdown::derivation;
use crate::render::{put, Style};

fn length(tokens: i64) -> String {
    if tokens % 1024 == 0 {
        format!("{}k", tokens / 1024)
    } else {
        group_thousands(tokens)
    }
}

fn pool_line(run: &Run, c: &Capacity) -> String {
    let mut s = format!(
        "KV pool: {} tokens per rank",
        group_thousands(c.pool_tokens)
    );
    if let Some(p) = c.pool_pages {
        s.push_str(&format!(
            " = {} pages × {} tokens",
            group_thousands(p),
            c.page_size
        ));
    } else if c.page_size > 1 {
        s.push_str(&format!(" in pages of {} tokens", c.page_size));
    }
    if c.page_size_default && (c.pool_pages.is_some() || c.page_size > 1) {
        s.push_str(" (the server's default page size: the log does not print it)");
    }
    if let Some(o) = &c.pool_origin {
        s.push_str(&format!(" ({})", run.cite(o)));
    }
    s.push_str(&format!(", read on {}", c.rank));
    if c.ranks_differ {
        s.push_str(", the smallest of the ranks' pools");
    }
    s
}

fn per_token_lines(run: &Run, c: &Capacity) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(l) = &c.log_per_token {
        out.push(format!(
            "bytes per token (log): {} ± {:.0} = KV pool {} / {} tokens",
            group_thousands(l.bytes.round() as i64),
            l.tolerance,
            derivation(run, &l.memory),
            group_thousands(c.pool_tokens)
        ));
    }
    if let Some(m) = &c.model_per_token {
        let dtype = m
            .kv_dtype
            .as_deref()
            .map(|d| format!(" (kv_cache_dtype {d})"))
            .unwrap_or_default();
        let mut s = if m.mla {
            format!(
                "bytes per token (model): {} = latent {} × {} layers × {} bytes{dtype} (MLA: the same on every rank), TP {}",
                group_thousands(m.per_token),
                m.head_dim,
                m.layers,
                m.elem_bytes,
                m.tp
            )
        } else {
            format!(
                "bytes per token (model): {} = {} KV heads per rank × head dim {} × {} layers × 2 (K and V) × {} bytes{dtype}, TP {}",
                group_thousands(m.per_token),
                m.heads_per_rank,
                m.head_dim,
                m.layers,
                m.elem_bytes,
                m.tp
            )
        };
        if m.replication > 1 {
            s.push_str(&format!(
                "; each KV head is held by {} ranks (fewer KV heads than ranks)",
                m.replication
            ));
        }
        match c.model_matches_log() {
            Some(true) => s.push_str("; matches the log's"),
            Some(false) => s.push_str("; does NOT match the log's"),
            None => {}
        }
        out.push(s);
    }
    out
}

/// The capacity section of `summary --memory`.
pub(crate) fn capacity_text(run: &Run, c: &Capacity, style: Style) -> String {
    let mut o = String::new();
    o.push_str(&style.bold("capacity"));
    o.push('\n');
    put(&mut o, style.width, 2, &pool_line(run, c));
    for l in per_token_lines(run, c) {
        put(&mut o, style.width, 2, &l);
    }
    match &c.limit {
        Some((setting, v)) => put(
            &mut o,
            style.width,
            2,
            &format!(
                "server's cap on running requests: {setting} = {}",
                group_thousands(*v)
            ),
        ),
        None => put(
            &mut o,
            style.width,
            2,
            "server's cap on running requests: not in the log, not applied",
        ),
    }
    for r in &c.lengths {
        let cap = if r.limited {
            " (capped by the server's limit)"
        } else {
            ""
        };
        put(
            &mut o,
            style.width,
            2,
            &format!(
                "requests of {} tokens at once: {} ({:.2}x){cap}",
                length(r.tokens),
                group_thousands(r.requests),
                r.concurrency
            ),
        );
    }
    if let Some(s) = &c.server_said {
        let agree = if (s.concurrency - s.ours).abs() < 0.006 {
            style.good("agrees")
        } else {
            style.warn("differs")
        };
        put(
            &mut o,
            style.width,
            2,
            &format!(
                "the server's own line: {:.2}x for {} tokens ({}:{}); ours {:.2}x: {agree}",
                s.concurrency,
                group_thousands(s.tokens),
                run.source_name(&s.origin),
                s.origin.line,
                s.ours
            ),
        );
    }
    if let Some(p) = &c.pool_check {
        let word = if p.follows() {
            "follows"
        } else {
            "does not follow"
        };
        put(
            &mut o,
            style.width,
            2,
            &format!(
                "sizing rule: total × {} ({}{}) − used = {} × {} − {} = {}; the pool is {}: the run {word} the rule",
                p.setting,
                p.fraction,
                if p.fraction_default { ", the default" } else { "" },
                human_bytes(p.total.bytes),
                p.fraction,
                human_bytes(p.used.bytes),
                human_bytes(p.predicted),
                human_bytes(p.logged)
            ),
        );
    }
    o
}

/// What the candidate's changes cost in capacity.
pub(crate) fn capacity_cost_text(cost: &CapacityCost, style: Style) -> String {
    let what = if cost.changes.is_empty() {
        "the candidate".to_string()
    } else {
        cost.changes.join(", ")
    };
    let per: Vec<String> = cost
        .per_length
        .iter()
        .map(|(t, d)| format!("{d:+.2} requests at {}", length(*t)))
        .collect();
    let mut o = String::new();
    put(
        &mut o,
        style.width,
        2,
        &format!(
            "capacity: {what}: {:+} tokens/rank = {}",
            cost.tokens_delta,
            per.join(", ")
        ),
    );
    o
}

/// `summary --memory`: the breakdown, then the capacity, or why they are missing.
pub fn memory_section(run: &Run, m: &crate::report::MemoryReport, style: Style) -> String {
    let mut o = String::new();
    match &m.breakdown {
        Some(b) => {
            o.push_str(&crate::render::text::breakdown::breakdown_text(
                run, b, style,
            ));
            o.push_str(&crate::render::text::held::held_text(b, &m.held, style));
            o.push_str(&crate::render::text::smi::smi_text(run, &m.smi, style));
        }
        None => put(
            &mut o,
            style.width,
            0,
            "memory breakdown: the run's server grammar has no memory model",
        ),
    }
    match &m.capacity {
        Some(c) => o.push_str(&capacity_text(run, c, style)),
        None => put(
            &mut o,
            style.width,
            0,
            "capacity: the log shows no KV pool size",
        ),
    }
    o
}

/// `diff --memory`: the candidate's breakdown and capacity, what moved and what the
/// changes cost.
pub fn memory_diff_section(
    baseline: &Run,
    candidate: &Run,
    m: &crate::report::MemoryDiff,
    style: Style,
) -> String {
    let mut o = String::from("\n");
    let _ = baseline;
    o.push_str(&memory_section(candidate, &m.candidate, style));
    if let Some(d) = &m.moved {
        o.push_str(&crate::render::text::breakdown::breakdown_diff_text(
            d, style,
        ));
    }
    if let Some(c) = &m.cost {
        o.push_str(&capacity_cost_text(c, style));
    }
    o
}
