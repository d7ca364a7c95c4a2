//! What a grammar says about the causes and remedies of failures: which settings can
//! explain a failure of a kind (`[[suspect]]`), and which settings size memory and how
//! (`[[memory_lever]]`). `analysis::cause` ranks a diff's changes by the first, and
//! `analysis::remedy` computes values from the runs' figures with the second.

use super::spec::{MemoryLeverSpec, SuspectSpec};
use super::GrammarError;
use crate::base::event::{FailureKind, Phase};

/// Settings that can explain failures of some kinds (and phases).
#[derive(Clone, Debug, PartialEq)]
pub struct SuspectRule {
    pub kinds: Vec<FailureKind>,
    /// Empty: any phase.
    pub phases: Vec<Phase>,
    pub settings: Vec<String>,
    /// Lower-cased.
    pub words: Vec<String>,
}

impl SuspectRule {
    pub fn applies(&self, kind: FailureKind, phase: Phase) -> bool {
        self.kinds.contains(&kind) && (self.phases.is_empty() || self.phases.contains(&phase))
    }
    /// Names `setting` (exactly, or by a `PREFIX*` pattern; case-insensitive, since
    /// configuration keys and environment variables are spelt both ways).
    pub fn names(&self, setting: &str) -> bool {
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

/// How a setting sizes memory.
#[derive(Clone, Debug, PartialEq)]
pub enum LeverRule {
    /// The KV pool leaves `total × (1 − value)` free.
    PoolFraction { total: LeverTotal, step: f64 },
    /// Setting the value skips a phase and the memory it takes.
    SkipPhase { value: String, phase: Phase },
}

/// What `total` is in a pool-fraction rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeverTotal {
    /// The free memory before weights load (SGLang's `total_gpu_memory`).
    AvailBeforeWeights,
    /// The device's total memory (vLLM's `total_gpu_memory`).
    Device,
}

#[derive(Clone, Debug, PartialEq)]
pub struct MemoryLever {
    pub setting: String,
    pub rule: LeverRule,
    pub cost: Option<String>,
    /// The grammar that declared it.
    pub grammar: String,
}

/// Every grammar's suspects and levers, in load order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RemedyRules {
    pub suspects: Vec<SuspectRule>,
    pub levers: Vec<MemoryLever>,
    /// Each server grammar's memory model (`[memory_model]`).
    pub memory_models: Vec<super::memory_model::MemoryModel>,
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
        _ => return None,
    })
}

pub fn compile(
    origin: &str,
    grammar: &str,
    suspects: &[SuspectSpec],
    levers: &[MemoryLeverSpec],
) -> Result<RemedyRules, GrammarError> {
    let mut out = RemedyRules::default();
    for (i, s) in suspects.iter().enumerate() {
        let what = format!("suspect {}", i + 1);
        let kinds = (s.kinds.iter())
            .map(|k| {
                kind_of(k).ok_or_else(|| {
                    bad(origin, format!("{what}: `{k}` is not a failure kind (oom, not_enough_memory, nccl, exception, timeout, signal)"))
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
            words: s.words.iter().map(|w| w.to_lowercase()).collect(),
        });
    }
    for l in levers {
        let what = format!("memory_lever `{}`", l.setting);
        let rule = match l.rule.as_str() {
            "pool_fraction" => {
                let total = match l.total.as_deref() {
                    Some("avail_before_weights") => LeverTotal::AvailBeforeWeights,
                    Some("device") => LeverTotal::Device,
                    other => {
                        return Err(bad(
                            origin,
                            format!(
                                "{what}: total {other:?} is not avail_before_weights or device"
                            ),
                        ))
                    }
                };
                let step = l.step.unwrap_or(0.01);
                if !(step > 0.0 && step < 1.0) {
                    return Err(bad(origin, format!("{what}: step {step} is not in (0, 1)")));
                }
                LeverRule::PoolFraction { total, step }
            }
            "skip_phase" => {
                let (Some(value), Some(phase)) = (&l.value, &l.phase) else {
                    return Err(bad(
                        origin,
                        format!("{what}: skip_phase needs value and phase"),
                    ));
                };
                let phase = Phase::from_name(phase)
                    .ok_or_else(|| bad(origin, format!("{what}: `{phase}` is not a phase")))?;
                LeverRule::SkipPhase {
                    value: value.clone(),
                    phase,
                }
            }
            other => {
                return Err(bad(
                    origin,
                    format!("{what}: rule `{other}` is not pool_fraction or skip_phase"),
                ))
            }
        };
        out.levers.push(MemoryLever {
            setting: l.setting.clone(),
            rule,
            cost: l.cost.clone(),
            grammar: grammar.to_string(),
        });
    }
    Ok(out)
}
