//! The memory breakdown and capacity in JSON: `summary --json`'s `memory` and
//! `diff --json`'s `memory`, one shape in both.

use schemars::JsonSchema;
use serde::Serialize;

use crate::analysis::breakdown::{
    Amount, BreakdownDiff, DeviceSource, RankBreakdown, RowValue, RunBreakdown,
};
use crate::analysis::capacity::{Capacity, CapacityCost};
use crate::grammar::memory_model::{Category, DeviceBasis, Term};
use crate::model::Run;
use crate::render::text::breakdown::derivation;
use crate::report::{MemoryDiff, MemoryReport};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CategoryName {
    /// NCCL, custom all-reduce buffers, the CUDA context: memory taken around
    /// distributed init, mostly outside PyTorch's allocator.
    Communication,
    Weights,
    KvPool,
    CudaGraphs,
    Activations,
    Other,
    Free,
}

impl From<Category> for CategoryName {
    fn from(c: Category) -> Self {
        match c {
            Category::Communication => CategoryName::Communication,
            Category::Weights => CategoryName::Weights,
            Category::KvPool => CategoryName::KvPool,
            Category::CudaGraphs => CategoryName::CudaGraphs,
            Category::Activations => CategoryName::Activations,
            Category::Other => CategoryName::Other,
            Category::Free => CategoryName::Free,
        }
    }
}

/// One term of a derivation: a figure or event field read from a line.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct TermDoc {
    /// +1 or −1.
    pub sign: i8,
    /// `phase.figure`, `event_kind.field`, `device` or `rest`.
    pub name: String,
    pub bytes: i64,
    pub source: Option<String>,
    pub line: Option<u64>,
}

/// A computed amount: its value, the bound on its error (half a print step per figure
/// read, added), and what it was computed from.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct AmountDoc {
    pub bytes: i64,
    pub plus_minus_bytes: i64,
    /// The derivation as the text prints it.
    pub derivation: String,
    pub terms: Vec<TermDoc>,
}

fn amount(run: &Run, a: &Amount) -> AmountDoc {
    AmountDoc {
        bytes: a.bytes,
        plus_minus_bytes: a.resolution,
        derivation: derivation(run, a),
        terms: a
            .terms
            .iter()
            .map(|t| TermDoc {
                sign: t.sign,
                name: match &t.term {
                    Term::Figure(p, f) => format!("{}.{}", p.name(), f.name()),
                    Term::Field(k, f) => format!("{k}.{f}"),
                    Term::Device => "device".into(),
                    Term::Rest => "rest".into(),
                },
                bytes: t.bytes,
                source: t.origin.as_ref().map(|o| run.source_name(o).to_string()),
                line: t.origin.as_ref().map(|o| o.line),
            })
            .collect(),
    }
}

#[derive(Clone, Copy, Debug, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeviceSourceName {
    /// The free memory the server measured before it took any.
    LogFreeAtStart,
    LogTotal,
    NvidiaSmi,
    OomCapacity,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct DeviceDoc {
    pub source: DeviceSourceName,
    pub amount: AmountDoc,
}

#[derive(Clone, Copy, Debug, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CategoryStatus {
    Measured,
    /// The log does not separate it: counted in `merged_into`.
    Merged,
    /// The lines it is read from are missing on this rank.
    NotReached,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct CategoryDoc {
    pub category: CategoryName,
    pub status: CategoryStatus,
    pub merged_into: Option<CategoryName>,
    /// Categories the log does not separate, counted in this one.
    pub includes: Vec<CategoryName>,
    pub amount: Option<AmountDoc>,
    /// Of the device memory.
    pub percent: Option<f64>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ClosureDoc {
    pub sum_bytes: i64,
    pub device_bytes: i64,
    pub tolerance_bytes: i64,
    /// The categories add up to the device within the tolerance.
    pub holds: bool,
}

/// Ranks with the same figures, read on the first.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct BreakdownGroupDoc {
    pub ranks: Vec<String>,
    pub device: Option<DeviceDoc>,
    pub categories: Vec<CategoryDoc>,
    pub closure: Option<ClosureDoc>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct BreakdownDoc {
    /// The grammar whose `[memory_model]` was used.
    pub grammar: String,
    pub groups: Vec<BreakdownGroupDoc>,
}

fn group(run: &Run, ranks: Vec<String>, b: &RankBreakdown) -> BreakdownGroupDoc {
    let dev = b.device.as_ref().map(|d| d.amount.bytes).filter(|&d| d > 0);
    BreakdownGroupDoc {
        ranks,
        device: b.device.as_ref().map(|d| DeviceDoc {
            source: match d.source {
                DeviceSource::Log(DeviceBasis::FreeAtStart) => DeviceSourceName::LogFreeAtStart,
                DeviceSource::Log(DeviceBasis::Total) => DeviceSourceName::LogTotal,
                DeviceSource::NvidiaSmi => DeviceSourceName::NvidiaSmi,
                DeviceSource::OomCapacity => DeviceSourceName::OomCapacity,
            },
            amount: amount(run, &d.amount),
        }),
        categories: b
            .rows
            .iter()
            .map(|r| {
                let (status, merged_into, a) = match &r.value {
                    RowValue::Measured(a) => (CategoryStatus::Measured, None, Some(a)),
                    RowValue::Merged(m) => (CategoryStatus::Merged, Some((*m).into()), None),
                    RowValue::NotReached => (CategoryStatus::NotReached, None, None),
                };
                CategoryDoc {
                    category: r.category.into(),
                    status,
                    merged_into,
                    includes: r.includes.iter().map(|c| (*c).into()).collect(),
                    percent: a.and_then(|a| Some(a.bytes as f64 * 100.0 / dev? as f64)),
                    amount: a.map(|a| amount(run, a)),
                }
            })
            .collect(),
        closure: b.closure.as_ref().map(|c| ClosureDoc {
            sum_bytes: c.sum,
            device_bytes: c.device,
            tolerance_bytes: c.tolerance,
            holds: c.holds(),
        }),
    }
}

fn breakdown_doc(run: &Run, b: &RunBreakdown) -> BreakdownDoc {
    BreakdownDoc {
        grammar: b.grammar.clone(),
        groups: b
            .groups
            .iter()
            .map(|g| {
                group(
                    run,
                    g.ranks.iter().map(|r| r.to_string()).collect(),
                    &g.breakdown,
                )
            })
            .collect(),
    }
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct LogPerTokenDoc {
    pub bytes: f64,
    pub tolerance_bytes: f64,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ModelPerTokenDoc {
    pub bytes: i64,
    pub tp: i64,
    pub kv_heads_per_rank: i64,
    /// Ranks holding each KV head (1 unless the model has fewer KV heads than ranks).
    pub replication: i64,
    pub element_bytes: i64,
    /// The server's `kv_cache_dtype` when it set the element size.
    pub kv_dtype: Option<String>,
    /// Agrees with the log's bytes per token within its tolerance (null: the log gives none).
    pub matches_log: Option<bool>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct LimitDoc {
    pub setting: String,
    pub value: i64,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct RequestsAtDoc {
    pub tokens: i64,
    pub pages_per_request: i64,
    /// Pages in the pool ÷ pages per request.
    pub concurrency: f64,
    /// Whole requests, capped by the server's limit.
    pub requests: i64,
    pub limited: bool,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ServerConcurrencyDoc {
    pub tokens: i64,
    pub concurrency: f64,
    /// Ours, for the same length.
    pub ours: f64,
    pub source: String,
    pub line: u64,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct PoolRuleDoc {
    pub setting: String,
    pub fraction: f64,
    pub fraction_default: bool,
    pub total_bytes: i64,
    pub used_bytes: i64,
    /// total × fraction − used.
    pub predicted_bytes: i64,
    /// The KV pool category.
    pub logged_bytes: i64,
    pub plus_minus_bytes: i64,
    pub follows: bool,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct CapacityDoc {
    /// The rank read: the one with the smallest pool.
    pub rank: String,
    pub ranks_differ: bool,
    pub pool_tokens: i64,
    /// When the log printed pages (blocks) rather than tokens.
    pub pool_pages: Option<i64>,
    pub page_size: i64,
    /// The page size is the server's default: no logged setting gives it.
    pub page_size_default: bool,
    pub pool_source: Option<String>,
    pub pool_line: Option<u64>,
    pub bytes_per_token_log: Option<LogPerTokenDoc>,
    pub bytes_per_token_model: Option<ModelPerTokenDoc>,
    pub limit: Option<LimitDoc>,
    pub lengths: Vec<RequestsAtDoc>,
    /// The server's own "maximum concurrency" line, where it prints one.
    pub server_said: Option<ServerConcurrencyDoc>,
    pub pool_rule: Option<PoolRuleDoc>,
}

fn capacity_doc(run: &Run, c: &Capacity) -> CapacityDoc {
    CapacityDoc {
        rank: c.rank.to_string(),
        ranks_differ: c.ranks_differ,
        pool_tokens: c.pool_tokens,
        pool_pages: c.pool_pages,
        page_size: c.page_size,
        page_size_default: c.page_size_default,
        pool_source: c
            .pool_origin
            .as_ref()
            .map(|o| run.source_name(o).to_string()),
        pool_line: c.pool_origin.as_ref().map(|o| o.line),
        bytes_per_token_log: c.log_per_token.as_ref().map(|l| LogPerTokenDoc {
            bytes: l.bytes,
            tolerance_bytes: l.tolerance,
        }),
        bytes_per_token_model: c.model_per_token.as_ref().map(|m| ModelPerTokenDoc {
            bytes: m.per_token,
            tp: m.tp,
            kv_heads_per_rank: m.heads_per_rank,
            replication: m.replication,
            element_bytes: m.elem_bytes,
            kv_dtype: m.kv_dtype.clone(),
            matches_log: c.model_matches_log(),
        }),
        limit: c.limit.as_ref().map(|(s, v)| LimitDoc {
            setting: s.clone(),
            value: *v,
        }),
        lengths: c
            .lengths
            .iter()
            .map(|r| RequestsAtDoc {
                tokens: r.tokens,
                pages_per_request: r.pages_per_request,
                concurrency: r.concurrency,
                requests: r.requests,
                limited: r.limited,
            })
            .collect(),
        server_said: c.server_said.as_ref().map(|s| ServerConcurrencyDoc {
            tokens: s.tokens,
            concurrency: s.concurrency,
            ours: s.ours,
            source: run.source_name(&s.origin).to_string(),
            line: s.origin.line,
        }),
        pool_rule: c.pool_check.as_ref().map(|p| PoolRuleDoc {
            setting: p.setting.clone(),
            fraction: p.fraction,
            fraction_default: p.fraction_default,
            total_bytes: p.total.bytes,
            used_bytes: p.used.bytes,
            predicted_bytes: p.predicted,
            logged_bytes: p.logged,
            plus_minus_bytes: p.resolution,
            follows: p.follows(),
        }),
    }
}

/// A run's memory: null parts when its grammar has no memory model or its log no pool.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct MemoryReportDoc {
    pub breakdown: Option<BreakdownDoc>,
    pub capacity: Option<CapacityDoc>,
}

pub fn memory_report_doc(run: &Run, m: &MemoryReport) -> MemoryReportDoc {
    MemoryReportDoc {
        breakdown: m.breakdown.as_ref().map(|b| breakdown_doc(run, b)),
        capacity: m.capacity.as_ref().map(|c| capacity_doc(run, c)),
    }
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct CategoryMoveDoc {
    pub category: CategoryName,
    /// Median over the ranks compared of candidate − baseline.
    pub delta_bytes: i64,
    pub plus_minus_bytes: i64,
    pub ranks_moved: usize,
    pub ranks_compared: usize,
}

/// The snapshots' split of the moved category's phase.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct SnapshotSplitDoc {
    pub category: CategoryName,
    /// What PyTorch's allocator reserved in the phase (candidate − baseline).
    pub allocator_bytes: i64,
    /// The log's delta less the allocator's: memory PyTorch did not see.
    pub residual_bytes: Option<i64>,
    /// One print step of the log's figure: a residual within it is indistinguishable
    /// from none.
    pub log_resolution_bytes: Option<u64>,
    pub sites: Vec<String>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct LengthCostDoc {
    pub tokens: i64,
    pub requests_delta: f64,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct CapacityCostDoc {
    /// The changed settings the cost is theirs together (`key old → new`).
    pub changes: Vec<String>,
    pub tokens_delta: i64,
    pub per_length: Vec<LengthCostDoc>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct MemoryDiffDoc {
    pub baseline: MemoryReportDoc,
    pub candidate: MemoryReportDoc,
    /// Categories that changed beyond their resolution.
    pub moved: Vec<CategoryMoveDoc>,
    /// Categories read from different lines in the two runs (not compared).
    pub not_compared: Vec<CategoryName>,
    pub snapshot_split: Option<SnapshotSplitDoc>,
    pub capacity_cost: Option<CapacityCostDoc>,
}

fn moved_docs(
    d: Option<&BreakdownDiff>,
) -> (
    Vec<CategoryMoveDoc>,
    Vec<CategoryName>,
    Option<SnapshotSplitDoc>,
) {
    let Some(d) = d else {
        return (Vec::new(), Vec::new(), None);
    };
    (
        d.moved
            .iter()
            .map(|m| CategoryMoveDoc {
                category: m.category.into(),
                delta_bytes: m.delta,
                plus_minus_bytes: m.resolution,
                ranks_moved: m.ranks_moved,
                ranks_compared: m.ranks_compared,
            })
            .collect(),
        d.not_compared.iter().map(|c| (*c).into()).collect(),
        d.snapshot.as_ref().map(|s| SnapshotSplitDoc {
            category: s.category.into(),
            allocator_bytes: s.allocator,
            residual_bytes: s.residual,
            log_resolution_bytes: s.log_resolution,
            sites: s.sites.clone(),
        }),
    )
}

fn cost_doc(c: &CapacityCost) -> CapacityCostDoc {
    CapacityCostDoc {
        changes: c.changes.clone(),
        tokens_delta: c.tokens_delta,
        per_length: c
            .per_length
            .iter()
            .map(|(t, d)| LengthCostDoc {
                tokens: *t,
                requests_delta: *d,
            })
            .collect(),
    }
}

pub fn memory_diff_doc(baseline: &Run, candidate: &Run, m: &MemoryDiff) -> MemoryDiffDoc {
    let (moved, not_compared, snapshot_split) = moved_docs(m.moved.as_ref());
    MemoryDiffDoc {
        baseline: memory_report_doc(baseline, &m.baseline),
        candidate: memory_report_doc(candidate, &m.candidate),
        moved,
        not_compared,
        snapshot_split,
        capacity_cost: m.cost.as_ref().map(cost_doc),
    }
}
