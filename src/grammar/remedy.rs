//! What a grammar says about the causes and remedies of failures: which settings can
//! explain a failure of a kind (`[[suspect]]`), and how the server sizes its memory
//! (`[memory_model]`, compiled by `grammar::memory_model`). `analysis::cause` ranks a
//! diff's changes by the first; `analysis::remedy` computes values from the runs'
//! figures with the second, the model `analysis::breakdown` and `capacity` evaluate.

use super::spec::SuspectSpec;
use super::GrammarError;
use crate::base::event::{FailureKind, Phase};

/// Settings that can explain failures of some kinds (and phases).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SuspectRule {
    pub(crate) kinds: Vec<FailureKind>,
    /// Empty: any phase.
    pub(crate) phases: Vec<Phase>,
    pub(crate) settings: Vec<String>,
    /// As the grammar writes them (they are found case aside, and quoted as written).
    pub(crate) words: Vec<String>,
}

impl SuspectRule {
    pub(crate) fn applies(&self, kind: FailureKind, phase: Phase) -> bool {
        self.kinds.contains(&kind) && (self.phases.is_empty() || self.phases.contains(&phase))
    }
    /// Names `setting` (exactly, or by a `PREFIX*` pattern; case-insensitive, since
    /// configuration keys and environment variables are spelt both ways).
    pub(crate) fn names(&self, setting: &str) -> bool {
        let s = setting.to_ascii_lowercase();
        self.settings.iter().any(|p| {
            let p = p.to_ascii_lowercase();
            match p.strip_suffix('*') {
                Some(prefix) => s.starts_with(prefix),
                None => s == p,
            }
        })
    }
}

/// Every grammar's suspects and memory models, in load order.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct RemedyRules {
    pub(crate) suspects: Vec<SuspectRule>,
    /// Each server grammar's memory model (`[memory_model]`).
    pub(crate) memory_models: Vec<super::memory_model::MemoryModel>,
}

fn bad(origin: &str, message: String) -> GrammarError {
    GrammarError::Knowledge {
        origin: origin.into(),
        message,
    }
}

fn kind_of(name: &str) -> Option<FailureKind> {
    Some(match name {
        "oom" => FailureKind::Oom,
        "not_enough_memory" => FailureKind::NotEnoughMemory,
        "nccl" => FailureKind::Nccl,
        "exception" => FailureKind::Exception,
        "timeout" => FailureKind::Timeout,
        "signal" => FailureKind::Signal,
        "died" => FailureKind::Died,
        _ => return None,
    })
}

pub(crate) fn compile(origin: &str, suspects: &[SuspectSpec]) -> Result<RemedyRules, GrammarError> {
    let mut out = RemedyRules::default();
    for (i, s) in suspects.iter().enumerate() {
        let what = format!("suspect {}", i + 1);
        let kinds = (s.kinds.iter())
            .map(|k| {
                kind_of(k).ok_or_else(|| {
                    bad(origin, format!("{what}: `{k}` is not a failure kind (oom, not_enough_memory, nccl, exception, timeout, signal, died)"))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let phases = (s.phases.iter())
            .map(|p| {
                Phase::from_name(p)
                    .ok_or_else(|| bad(origin, format!("{what}: `{p}` is not a phase")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if kinds.is_empty() || s.settings.is_empty() {
            return Err(bad(
                origin,
                format!("{what}: give at least one kind and one setting"),
            ));
        }
        out.suspects.push(SuspectRule {
            kinds,
            phases,
            settings: s.settings.clone(),
            words: s.words.clone(),
        });
    }
    Ok(out)
}
