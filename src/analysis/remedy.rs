//! A remedy with numbers for a memory failure: how much memory the failing phase lacked
//! (the deficit), and for each setting that sizes memory (the grammars'
//! `[[memory_lever]]`) the value that would cover it with a margin, what it frees and what
//! it costs. Only what the runs' figures support is proposed: no deficit, no value.

use crate::grammar::remedy::{LeverRule, LeverTotal, MemoryLever};
use crate::model::config::pyrepr::PyValue;
use crate::model::{FailureKind, Phase, Run};

/// A proposed value must cover the deficit's upper bound by this much more.
pub const MARGIN: f64 = 0.2;

/// How the deficit was measured.
#[derive(Clone, Debug, PartialEq)]
pub enum DeficitBasis {
    /// The baseline's figure of the same phase (what it took there) against what the
    /// candidate had left before it.
    BaselinePhase,
    /// The failed request against the free memory the OOM message gives: a lower bound
    /// (the phase may have asked for more after it).
    OomRequest,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Deficit {
    pub phase: Phase,
    /// What the phase needed and what was left (bytes).
    pub need: i64,
    pub have: i64,
    pub deficit: i64,
    /// How far the printed figures may be from the true ones (bytes).
    pub resolution: i64,
    pub basis: DeficitBasis,
}

impl Deficit {
    /// What a remedy must cover: the deficit at the far end of the figures' resolution.
    pub fn upper(&self) -> i64 {
        self.deficit + self.resolution
    }
    /// With the margin.
    pub fn target(&self) -> i64 {
        (self.upper() as f64 * (1.0 + MARGIN)).ceil() as i64
    }
}

/// Whether the run's own figures follow a pool-fraction rule.
#[derive(Clone, Debug, PartialEq)]
pub enum RuleCheck {
    /// The free memory after the pool is what the rule predicts, within resolution.
    Follows { predicted: i64, logged: i64 },
    /// It is not: the step's effect is the rule's, not this run's.
    Differs { predicted: i64, logged: i64 },
    /// The log prints no free memory after the pool.
    Unchecked,
}

#[derive(Clone, Debug, PartialEq)]
pub enum RemedyKind {
    /// Lower a pool fraction by `steps × step`: `total × that` more free after the pool.
    PoolFraction {
        total: i64,
        total_from: LeverTotal,
        from: f64,
        to: f64,
        check: RuleCheck,
        /// KV tokens per rank the pool gives up, and the pool's size in tokens.
        tokens_lost: Option<i64>,
        pool_tokens: Option<i64>,
    },
    /// Skip the failing phase (and the memory the baseline's took, when known).
    SkipPhase {
        value: String,
        phase: Phase,
        baseline_took: Option<i64>,
        cost: Option<String>,
    },
    /// Go back to the baseline's value of a changed setting: the baseline reached ready.
    Revert { from: String, to: String },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Remedy {
    pub setting: String,
    pub kind: RemedyKind,
    /// Bytes it frees for the failing phase, when the figures say.
    pub frees: Option<i64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Remedies {
    pub deficit: Option<Deficit>,
    pub remedies: Vec<Remedy>,
}

fn median(mut v: Vec<i64>) -> Option<i64> {
    v.sort_unstable();
    v.get(v.len() / 2).copied()
}

/// A figure of a phase on every worker rank, median, and its resolution.
pub fn figure(run: &Run, phase: Phase, name: &str) -> Option<(i64, i64)> {
    let vals: Vec<(i64, i64)> = run
        .worker_ranks()
        .filter_map(|r| {
            let f = r.figure(phase, name)?;
            Some((f.value.as_bytes()?, f.value.resolution() as i64))
        })
        .collect();
    let res = vals.iter().map(|v| v.1).max()?;
    Some((median(vals.iter().map(|v| v.0).collect())?, res))
}

/// The smallest of the ranks' figure.
fn min_figure(run: &Run, phase: Phase, name: &str) -> Option<(i64, i64)> {
    run.worker_ranks()
        .filter_map(|r| {
            let f = r.figure(phase, name)?;
            Some((f.value.as_bytes()?, f.value.resolution() as i64))
        })
        .min()
}

fn config_value(run: &Run, key: &str) -> Option<PyValue> {
    match &run.config {
        Some(Ok(p)) => p.config.get(key).cloned(),
        _ => None,
    }
}

fn as_f64(v: &PyValue) -> Option<f64> {
    match v {
        PyValue::Float(f) => Some(*f),
        PyValue::Int(i) => Some(*i as f64),
        _ => None,
    }
}

/// What the failing phase lacked on the root rank.
pub fn deficit(baseline: Option<&Run>, candidate: &Run) -> Option<Deficit> {
    let (root, failure) = candidate.root_failure()?;
    if !matches!(
        failure.kind,
        FailureKind::Oom | FailureKind::NotEnoughMemory
    ) {
        return None;
    }
    let phase = failure.phase;
    // What the baseline's same phase took, against what the candidate had before it.
    if let Some(b) = baseline {
        let took = figure(b, phase, "mem_usage");
        let left = root
            .figure(phase, "avail_before")
            .or_else(|| {
                root.figure(Phase::KvCache, "avail_after")
                    .filter(|_| phase == Phase::CudaGraph)
            })
            .and_then(|f| Some((f.value.as_bytes()?, f.value.resolution() as i64)));
        if let (Some((need, rn)), Some((have, rh))) = (took, left) {
            if need > have {
                return Some(Deficit {
                    phase,
                    need,
                    have,
                    deficit: need - have,
                    resolution: rn + rh,
                    basis: DeficitBasis::BaselinePhase,
                });
            }
        }
    }
    let b = |n: &str| failure.fields.get(n).and_then(|v| v.as_bytes());
    let requested = b("requested_bytes")?;
    let free = b("free_bytes").unwrap_or(0);
    // Under a per-process cap (`… allowed`), the device's free memory is not what binds.
    let free = match (b("allowed_bytes"), b("process_in_use_bytes")) {
        (Some(allowed), Some(used)) => free.min((allowed - used).max(0)),
        _ => free,
    };
    Some(Deficit {
        phase,
        need: requested,
        have: free,
        // With as much free as asked, the request still failed (no block large enough):
        // the request itself is what was missing.
        deficit: if requested > free {
            requested - free
        } else {
            requested
        },
        resolution: 0,
        basis: DeficitBasis::OomRequest,
    })
}

fn total_of(run: &Run, lever: LeverTotal) -> Option<i64> {
    match lever {
        LeverTotal::AvailBeforeWeights => {
            min_figure(run, Phase::WeightLoad, "avail_before").map(|v| v.0)
        }
        LeverTotal::Device => {
            let from_oom = run
                .root_failure()
                .and_then(|(_, f)| f.fields.get("capacity_bytes").and_then(|v| v.as_bytes()));
            from_oom.or_else(|| {
                run.gpus
                    .iter()
                    .filter_map(|g| g.total_bytes)
                    .min()
                    .map(|t| t as i64)
            })
        }
    }
}

fn pool_fraction(
    candidate: &Run,
    lever: &MemoryLever,
    total_from: LeverTotal,
    step: f64,
    d: &Deficit,
) -> Option<Remedy> {
    // Lowering the fraction helps what runs after the pool is sized: capture, serving,
    // and the pool's own allocation.
    if !matches!(d.phase, Phase::CudaGraph | Phase::Ready | Phase::KvCache) {
        return None;
    }
    let from = as_f64(&config_value(candidate, &lever.setting)?)?;
    let total = total_of(candidate, total_from)?;
    let per_step = (total as f64 * step).floor() as i64;
    if per_step <= 0 {
        return None;
    }
    let steps = (d.target() as f64 / per_step as f64).ceil().max(1.0);
    let to = ((from - steps * step) * 1e6).round() / 1e6;
    if to <= 0.0 {
        return None;
    }
    let frees = (steps * per_step as f64) as i64;
    let per_token = candidate
        .worker_ranks()
        .find_map(crate::model::RankRun::kv_bytes_per_token);
    let check = match figure(candidate, Phase::KvCache, "avail_after") {
        Some((logged, res)) if total_from == LeverTotal::AvailBeforeWeights => {
            let predicted = (total as f64 * (1.0 - from)).round() as i64;
            // Within two print steps and 5 %: the server sized its pool by this rule.
            if (predicted - logged).abs() <= 2 * res + predicted / 20 {
                RuleCheck::Follows { predicted, logged }
            } else {
                RuleCheck::Differs { predicted, logged }
            }
        }
        _ => RuleCheck::Unchecked,
    };
    Some(Remedy {
        setting: lever.setting.clone(),
        kind: RemedyKind::PoolFraction {
            total,
            total_from,
            from,
            to,
            check,
            tokens_lost: per_token.map(|(bpt, _)| (frees as f64 / bpt).round() as i64),
            pool_tokens: per_token.map(|(_, t)| t),
        },
        frees: Some(frees),
    })
}

/// The settings that would cover deficit `d`, from the candidate's grammars'
/// `[[memory_lever]]` tables: for a failure, and for `watch`'s early warning (a deficit
/// foreseen from the baseline's figures before the phase runs).
pub fn levers(baseline: Option<&Run>, candidate: &Run, d: &Deficit) -> Vec<Remedy> {
    let mut out = Vec::new();
    for lever in &candidate.remedy_rules.levers {
        match &lever.rule {
            LeverRule::PoolFraction { total, step } => {
                out.extend(pool_fraction(candidate, lever, *total, *step, d));
            }
            LeverRule::SkipPhase { value, phase } if *phase == d.phase => {
                // Only where the server's configuration has the setting (the lever is
                // its grammar's) and it is not set so already.
                let Some(current) = config_value(candidate, &lever.setting) else {
                    continue;
                };
                if current.to_python_repr() == *value {
                    continue;
                }
                let baseline_took = baseline
                    .and_then(|b| figure(b, *phase, "mem_usage"))
                    .map(|v| v.0);
                out.push(Remedy {
                    setting: lever.setting.clone(),
                    kind: RemedyKind::SkipPhase {
                        value: value.clone(),
                        phase: *phase,
                        baseline_took,
                        cost: lever.cost.clone(),
                    },
                    frees: baseline_took,
                });
            }
            LeverRule::SkipPhase { .. } => {}
        }
    }
    out
}

/// The remedies for a candidate's memory failure, from its figures (and the baseline's).
pub fn remedies(
    baseline: Option<&Run>,
    candidate: &Run,
    config: Option<&crate::model::config::ConfigDiff>,
) -> Remedies {
    let deficit = deficit(baseline, candidate);
    let mut out = match &deficit {
        Some(d) => levers(baseline, candidate, d),
        None => Vec::new(),
    };
    // The baseline reached ready with its values: going back is the measured remedy.
    if let (Some(b), Some(cd)) = (baseline, config) {
        if b.ready
            && candidate.root_failure().is_some_and(|(_, f)| {
                matches!(f.kind, FailureKind::Oom | FailureKind::NotEnoughMemory)
            })
        {
            for ch in &cd.changed {
                if out.iter().any(|r: &Remedy| r.setting == ch.key) {
                    continue;
                }
                // Addresses and ports change between any two runs; they size nothing.
                if ch.key.contains("addr") || ch.key.contains("port") {
                    continue;
                }
                out.push(Remedy {
                    setting: ch.key.clone(),
                    kind: RemedyKind::Revert {
                        from: ch.new.to_python_repr(),
                        to: ch.old.to_python_repr(),
                    },
                    frees: None,
                });
            }
        }
    }
    Remedies {
        deficit,
        remedies: out,
    }
}
