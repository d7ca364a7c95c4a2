//! A remedy with numbers for a memory failure: how much memory the failing phase lacked
//! (the deficit), and from the server's memory model (`[memory_model]`, the one
//! `analysis::breakdown` and `analysis::capacity` evaluate) the value of the pool rule's
//! fraction that would cover it with a margin, what it frees and the KV tokens it costs,
//! and the setting that skips the failing phase's category. Only what the runs' figures
//! support is proposed: no deficit, no value.

use crate::analysis::breakdown::{device_of, evaluate, model_of, rank_breakdown, Amount, Reader};
use crate::analysis::capacity::{capacity, pool_check};
use crate::base::event::Rank;
use crate::grammar::memory_model::{Category, MemoryModel, PoolRule};
use crate::model::config::pyrepr::PyValue;
use crate::model::config::Spelling;
use crate::model::{FailureKind, Phase, Run};

/// A proposed value must cover the deficit's upper bound by this much more.
pub(crate) const MARGIN: f64 = 0.2;

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

/// What a failed phase needed against what was left, by the run's own figures.
#[derive(Clone, Debug, PartialEq)]
pub struct Deficit {
    pub(crate) phase: Phase,
    /// What the phase needed and what was left (bytes).
    pub need: i64,
    /// What was left for it (bytes).
    pub have: i64,
    /// `need - have` (bytes).
    pub deficit: i64,
    /// How far the printed figures may be from the true ones (bytes).
    pub resolution: i64,
    /// One print step of `need` and of `have` (0: exact or not printed).
    pub(crate) need_step: i64,
    pub(crate) have_step: i64,
    /// Which figures the two sides were read from.
    pub basis: DeficitBasis,
}

impl Deficit {
    /// What a remedy must cover: the deficit at the far end of the figures' resolution.
    pub(crate) fn upper(&self) -> i64 {
        self.deficit + self.resolution
    }
    /// With the margin.
    pub(crate) fn target(&self) -> i64 {
        (self.upper() as f64 * (1.0 + MARGIN)).ceil() as i64
    }
}

/// Whether the run's own pool is the one its sizing rule (`total × fraction − used`)
/// gives, as `capacity::PoolCheck` checks it.
#[derive(Clone, Debug, PartialEq)]
pub enum RuleCheck {
    /// The pool (bytes) is what the rule predicts, within resolution and 5 %.
    Follows {
        /// The pool the rule gives (bytes).
        predicted: i64,
        /// The pool the log shows (bytes).
        logged: i64,
    },
    /// It is not: the step's effect is the rule's, not this run's.
    Differs {
        /// The pool the rule gives (bytes).
        predicted: i64,
        /// The pool the log shows (bytes).
        logged: i64,
    },
    /// The log does not print every figure of the rule.
    Unchecked,
}

/// What a remedy changes.
#[derive(Clone, Debug, PartialEq)]
pub enum RemedyKind {
    /// Lower a pool fraction by `steps × step`: `total × that` more free after the pool.
    PoolFraction {
        /// The rule's `total` where it is smallest over the ranks, with what it was
        /// read from (a `device` term: the breakdown's device memory).
        total: Amount,
        /// The rank that `total` was read on.
        total_rank: Rank,
        /// The grammar's step of the fraction.
        step: f64,
        /// The fraction the run used.
        from: f64,
        /// `from` is the grammar's `fraction_default`: the configuration did not print it.
        from_default: bool,
        /// The fraction proposed.
        to: f64,
        /// Whether the run's pool is the one the rule gives.
        check: RuleCheck,
        /// KV tokens per rank the pool gives up, and the pool's size in tokens.
        tokens_lost: Option<i64>,
        /// The pool's size in tokens.
        pool_tokens: Option<i64>,
    },
    /// Skip the failing phase (and the memory the baseline's took, when known).
    SkipPhase {
        /// The setting's value now, as the configuration prints it.
        from: String,
        /// The setting's value that skips the phase.
        value: String,
        /// The phase skipped.
        phase: Phase,
        /// Bytes the baseline's category took, when it has one.
        baseline_took: Option<i64>,
        /// What skipping costs besides memory, as the grammar words it.
        cost: Option<String>,
    },
    /// Go back to the baseline's value of a changed setting: the baseline reached ready.
    /// `tied`: a grammar's `[[suspect]]` ties the setting to this failure; reverts that
    /// none ties still come (the baseline's value is measured to work: a change no
    /// suspect names can be the cause, as `enable_custom_allreduce` is for SGLang's
    /// OOMs), after the tied ones.
    Revert {
        /// The candidate's value.
        from: String,
        /// The baseline's value.
        to: String,
        /// A `[[suspect]]` names this setting for the failure.
        tied: bool,
    },
}

/// One setting change that would cover a memory failure's deficit, by the run's figures.
#[derive(Clone, Debug, PartialEq)]
pub struct Remedy {
    /// The setting to change.
    pub setting: String,
    /// How to change it.
    pub kind: RemedyKind,
    /// Bytes it frees for the failing phase, when the figures say.
    pub frees: Option<i64>,
    /// The print steps `frees` was computed from (0 when exact or unknown).
    pub(crate) frees_step: i64,
}

/// A failed run's deficit and the settings that would cover it.
#[derive(Clone, Debug, PartialEq)]
pub struct Remedies {
    /// The deficit, when the figures give one.
    pub deficit: Option<Deficit>,
    /// The remedies, in the order proposed.
    pub remedies: Vec<Remedy>,
}

fn median(mut v: Vec<i64>) -> Option<i64> {
    v.sort_unstable();
    v.get(v.len() / 2).copied()
}

/// A figure of a phase on every worker rank, median, and its resolution.
pub(crate) fn figure(run: &Run, phase: Phase, name: &str) -> Option<(i64, i64)> {
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
pub(crate) fn deficit(baseline: Option<&Run>, candidate: &Run) -> Option<Deficit> {
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
                    need_step: rn,
                    have_step: rh,
                    basis: DeficitBasis::BaselinePhase,
                });
            }
        }
    }
    let b = |n: &str| failure.fields.get(n).and_then(|v| v.as_bytes());
    let step = |n: &str| failure.fields.get(n).map_or(0, |v| v.resolution() as i64);
    let requested = b("requested_bytes")?;
    let free = b("free_bytes").unwrap_or(0);
    // Under a per-process cap (`… allowed`), the device's free memory is not what binds.
    let (free, free_step) = match (b("allowed_bytes"), b("process_in_use_bytes")) {
        (Some(allowed), Some(used)) if (allowed - used).max(0) < free => (
            (allowed - used).max(0),
            step("allowed_bytes") + step("process_in_use_bytes"),
        ),
        _ => (free, step("free_bytes")),
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
        need_step: step("requested_bytes"),
        have_step: free_step,
        basis: DeficitBasis::OomRequest,
    })
}

/// The pool rule's `total` on every worker rank where it can be read: the smallest (the
/// servers size every rank by the smallest), and the rank it was read on.
fn smallest_total<'r>(
    rd: &Reader<'r>,
    model: &MemoryModel,
    rule: &PoolRule,
) -> Option<(Amount, &'r crate::model::RankRun)> {
    rd.run
        .worker_ranks()
        .filter_map(|r| {
            let device = device_of(rd, r, model).map(|d| d.amount);
            Some((evaluate(rd, r, &rule.total, device.as_ref(), None)?, r))
        })
        .min_by_key(|(a, _)| a.bytes)
}

fn pool_fraction(candidate: &Run, model: &MemoryModel, d: &Deficit) -> Option<Remedy> {
    // Lowering the fraction helps what runs after the pool is sized: capture, serving,
    // and the pool's own allocation.
    if !matches!(d.phase, Phase::CudaGraph | Phase::Ready | Phase::KvCache) {
        return None;
    }
    let rule = model.pool.as_ref()?;
    // A fraction the configuration does not print is the server's default (the
    // grammar's `fraction_default`), as the capacity section's pool check reads it.
    let printed = config_value(candidate, &rule.fraction).and_then(|v| as_f64(&v));
    let (from, from_default) = match printed {
        Some(f) => (f, false),
        None => (rule.fraction_default?, true),
    };
    let rd = Reader::new(candidate);
    let (total, rank) = smallest_total(&rd, model, rule)?;
    let per_step = (total.bytes as f64 * rule.step).floor() as i64;
    if per_step <= 0 {
        return None;
    }
    let steps = (d.target() as f64 / per_step as f64).ceil().max(1.0);
    let to = ((from - steps * rule.step) * 1e6).round() / 1e6;
    if to <= 0.0 {
        return None;
    }
    let frees = (steps * per_step as f64) as i64;
    // `steps` steps of the total: its print step scaled as its bytes are.
    let frees_step = (total.step as f64 * steps * rule.step).ceil() as i64;
    let check = match pool_check(&rd, rank, model) {
        Some(c) if c.follows() => RuleCheck::Follows {
            predicted: c.predicted,
            logged: c.logged,
        },
        Some(c) => RuleCheck::Differs {
            predicted: c.predicted,
            logged: c.logged,
        },
        None => RuleCheck::Unchecked,
    };
    // What a token of the pool takes, as the capacity section reads it.
    let per_token = capacity(candidate, &[], None)
        .and_then(|c| Some((c.log_per_token?.bytes, c.pool_tokens)))
        .filter(|(bytes, _)| *bytes > 0.0);
    Some(Remedy {
        setting: rule.fraction.clone(),
        kind: RemedyKind::PoolFraction {
            total,
            total_rank: rank.rank.clone(),
            step: rule.step,
            from,
            from_default,
            to,
            check,
            tokens_lost: per_token.map(|(bpt, _)| (frees as f64 / bpt).round() as i64),
            pool_tokens: per_token.map(|(_, t)| t),
        },
        frees: Some(frees),
        frees_step,
    })
}

/// What the baseline's category took: the median over its worker ranks that measured it.
/// The median over the baseline's ranks, and the largest print step of the amounts.
fn baseline_category(baseline: &Run, category: Category) -> Option<(i64, i64)> {
    let model = model_of(baseline)?;
    let rd = Reader::new(baseline);
    let (took, steps): (Vec<i64>, Vec<i64>) = baseline
        .worker_ranks()
        .filter_map(
            |r| match &rank_breakdown(&rd, r, model).row(category)?.value {
                crate::analysis::breakdown::RowValue::Measured(a) => Some((a.bytes, a.step)),
                _ => None,
            },
        )
        .unzip();
    Some((median(took)?, steps.into_iter().max().unwrap_or(0)))
}

/// The settings that would cover deficit `d`, from the candidate's server's memory model:
/// for a failure, and for `watch`'s early warning (a deficit foreseen from the baseline's
/// figures before the phase runs).
pub(crate) fn levers(baseline: Option<&Run>, candidate: &Run, d: &Deficit) -> Vec<Remedy> {
    let Some(model) = model_of(candidate) else {
        return Vec::new();
    };
    let mut out: Vec<Remedy> = pool_fraction(candidate, model, d).into_iter().collect();
    for rule in &model.categories {
        let Some(skip) = &rule.skip else { continue };
        if rule.category.phase() != Some(d.phase) {
            continue;
        }
        // Only where the server's configuration has the setting (the model is its
        // grammar's) and it is not set so already.
        let Some(current) = config_value(candidate, &skip.setting) else {
            continue;
        };
        // The grammar writes the value as its server prints it (`True`, or Rust's `true`).
        let spelling = match &candidate.config {
            Some(Ok(p)) => Spelling::of(p.config.source.syntax),
            _ => Spelling::Python,
        };
        if current.spelled(spelling) == skip.value {
            continue;
        }
        let took = baseline.and_then(|b| baseline_category(b, rule.category));
        let baseline_took = took.map(|t| t.0);
        out.push(Remedy {
            setting: skip.setting.clone(),
            kind: RemedyKind::SkipPhase {
                from: current.spelled(spelling),
                value: skip.value.clone(),
                phase: d.phase,
                baseline_took,
                cost: skip.cost.clone(),
            },
            frees: baseline_took,
            frees_step: took.map_or(0, |t| t.1),
        });
    }
    out
}

/// The remedies for a candidate's memory failure, from its figures (and the baseline's).
pub(crate) fn remedies(
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
                if names_an_address(&ch.key) {
                    continue;
                }
                let (was, now) = cd.spelling;
                out.push(Remedy {
                    setting: ch.key.clone(),
                    kind: RemedyKind::Revert {
                        from: ch.new.spelled(now),
                        to: ch.old.spelled(was),
                        tied: false,
                    },
                    frees: None,
                    frees_step: 0,
                });
            }
        }
    }
    Remedies {
        deficit,
        remedies: out,
    }
}

/// Puts the reverts a failure's suspects tie to it first (named by its words, then listed
/// for its kind and phase), each marked tied, in the order of the `cause` rows (more of a
/// suspect's words held first, then the configuration's order); the others follow in the
/// configuration's order. The levers computed from the figures stay ahead of every
/// revert, in their order.
pub fn order_reverts(r: &mut Remedies, fc: &super::cause::FailureCause) {
    use super::cause::SuspectWhy;
    let rank_of = |x: &Remedy| -> (u8, usize) {
        if !matches!(x.kind, RemedyKind::Revert { .. }) {
            return (0, 0);
        }
        let found = (fc.suspects.iter().enumerate()).find(
            |(_, s)| matches!(&s.setting, super::cause::Setting::Config(k) if *k == x.setting),
        );
        match found {
            Some((i, s)) if matches!(s.why, SuspectWhy::Named { .. }) => (1, i),
            Some((i, s)) if s.why == SuspectWhy::Listed => (2, i),
            _ => (3, 0),
        }
    };
    for x in &mut r.remedies {
        let rank = rank_of(x);
        if let RemedyKind::Revert { tied, .. } = &mut x.kind {
            *tied = rank.0 < 3;
        }
    }
    r.remedies.sort_by_key(|x| rank_of(x));
}

/// A setting that says where to reach something (`dist_init_addr`, `metrics_port`, TGI's
/// `hostname`, a `server_url`): such values change between any two runs and size no
/// memory, so reverting one is never a memory remedy. Read by the words of the key
/// (`_`, `-` or `.` between them), so `transport` or `support_x` is not a port.
pub(crate) fn names_an_address(key: &str) -> bool {
    key.split(['_', '-', '.'])
        .map(str::to_ascii_lowercase)
        .any(|w| {
            matches!(
                w.as_str(),
                "addr"
                    | "address"
                    | "ip"
                    | "port"
                    | "host"
                    | "hostname"
                    | "url"
                    | "uri"
                    | "endpoint"
            )
        })
}

#[cfg(test)]
mod tests {
    use super::names_an_address;

    #[test]
    fn addresses_are_read_by_the_words_of_the_key() {
        // SGLang's, vLLM's and TGI's own keys.
        for key in [
            "dist_init_addr",
            "nccl_port",
            "host",
            "hostname",
            "master_addr",
            "port",
        ] {
            assert!(names_an_address(key), "{key}");
        }
        for key in [
            "mem_fraction_static",
            "max_batch_prefill_tokens",
            "nccl_transport",
            "support_fp8",
        ] {
            assert!(!names_an_address(key), "{key}");
        }
    }
}
