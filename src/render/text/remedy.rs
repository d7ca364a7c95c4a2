//! A memory failure's remedies in words (`diff`'s `remedy` rows, the TUI's Diff view,
//! JSON's `remedies.text`): the deficit, then each setting's value with what it frees,
//! covers and costs, and how sure that is.

use crate::analysis::breakdown::Amount;
use crate::analysis::remedy::{DeficitBasis, Remedies, RemedyKind, RuleCheck, MARGIN};
use crate::base::event::{BuiltinFigure, Phase};
use crate::base::text::sanitize;
use crate::base::units::{group_thousands, human_bytes};
use crate::grammar::memory_model::Term;

fn num(v: f64) -> String {
    // As a person types it: 0.9, 0.89, 0.95.
    let s = format!("{v:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// What the pool rule's `total` is, in words where the memory model's term has some.
fn total_what(total: &Amount) -> String {
    match total.terms.as_slice() {
        [t] if t.term == Term::Device => "the device".into(),
        [t] if t.term == Term::Figure(Phase::WeightLoad, BuiltinFigure::AvailBefore) => {
            "the free memory before weights".into()
        }
        terms => {
            let names: Vec<String> = terms
                .iter()
                .map(|t| {
                    let name = match &t.term {
                        Term::Figure(p, f) => format!("{}.{}", p.name(), f.name()),
                        Term::Field(k, f) => format!("{k}.{f}"),
                        Term::Device => "device".into(),
                        Term::Rest => "rest".into(),
                    };
                    format!("{}{name}", if t.sign < 0 { "- " } else { "" })
                })
                .collect();
            sanitize(&names.join(" + ").replace("+ - ", "- "))
        }
    }
}

/// A revert to the baseline's value; one that no grammar's `[[suspect]]` ties to the
/// failure says so, as it is offered only because the baseline worked with it.
fn revert_text(setting: &str, from: &str, to: &str, tied: bool) -> String {
    format!(
        "{setting} {} -> {} (the baseline's value; the baseline reached ready with it{})",
        sanitize(from),
        sanitize(to),
        if tied {
            ""
        } else {
            "; no suspect ties it to this failure"
        }
    )
}

pub(crate) fn lines(r: &Remedies) -> Vec<String> {
    let mut out = Vec::new();
    let Some(d) = &r.deficit else {
        return r
            .remedies
            .iter()
            .filter_map(|x| match &x.kind {
                RemedyKind::Revert { from, to, tied } => {
                    Some(revert_text(&x.setting, from, to, *tied))
                }
                _ => None,
            })
            .collect();
    };
    out.push(match d.basis {
        DeficitBasis::BaselinePhase => format!(
            "deficit: {} took {} in the baseline, {} was left here: {} short (up to {} at the log's resolution)",
            d.phase,
            human_bytes(d.need),
            human_bytes(d.have),
            human_bytes(d.deficit),
            human_bytes(d.upper())
        ),
        DeficitBasis::OomRequest => format!(
            "deficit: at least {} ({} asked for, {} free where it failed; the phase may have asked for more after)",
            human_bytes(d.deficit),
            human_bytes(d.need),
            human_bytes(d.have)
        ),
    });
    for x in &r.remedies {
        out.push(match &x.kind {
            RemedyKind::PoolFraction {
                total,
                from,
                from_default,
                to,
                check,
                tokens_lost,
                pool_tokens,
                ..
            } => {
                let mut s = format!(
                    "{} {}{} -> {}: leaves {} x {} ({}) = {} more after the KV pool, covering the {} with a {:.0} % margin",
                    x.setting,
                    num(*from),
                    if *from_default {
                        " (the default: not printed)"
                    } else {
                        ""
                    },
                    num(*to),
                    num(from - to),
                    human_bytes(total.bytes),
                    total_what(total),
                    human_bytes(x.frees.unwrap_or(0)),
                    human_bytes(d.upper()),
                    MARGIN * 100.0
                );
                if let (Some(lost), Some(pool)) = (tokens_lost, pool_tokens) {
                    s.push_str(&format!(
                        "; the KV pool loses ~{} tokens/rank ({:.1} % of {})",
                        group_thousands(*lost),
                        *lost as f64 * 100.0 / (*pool).max(1) as f64,
                        group_thousands(*pool)
                    ));
                }
                match check {
                    RuleCheck::Follows { .. } => {
                        s.push_str("; this run's pool follows the server's sizing rule")
                    }
                    RuleCheck::Differs { predicted, logged } => s.push_str(&format!(
                        "; an estimate: the server's sizing rule gives a {} pool where this run's is {}",
                        human_bytes(*predicted),
                        human_bytes(*logged)
                    )),
                    RuleCheck::Unchecked => s.push_str(
                        "; the log does not print every figure of the server's sizing rule to check it on",
                    ),
                }
                s
            }
            RemedyKind::SkipPhase {
                value,
                phase,
                baseline_took,
                cost,
                ..
            } => format!(
                "{}={}: skips {phase}{}{}",
                x.setting,
                sanitize(value),
                baseline_took
                    .map(|b| format!(" (the baseline's took {})", human_bytes(b)))
                    .unwrap_or_default(),
                cost.as_ref()
                    .map(|c| format!("; {}", sanitize(c)))
                    .unwrap_or_default()
            ),
            RemedyKind::Revert { from, to, tied } => revert_text(&x.setting, from, to, *tied),
        });
    }
    out
}
