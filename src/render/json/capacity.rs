//! The memory breakdown and capacity in JSON: `summary --json`'s `memory` and
//! `diff --json`'s `memory`, one shape in both.

use schemars::JsonSchema;
use serde::Serialize;

use crate::analysis::breakdown::{
    Amount, BreakdownDiff, DeviceSource, RankBreakdown, RowValue, RunBreakdown,
};
use crate::analysis::capacity::{Capacity, CapacityCost};
use crate::analysis::held::{Placed, RankHeld};
use crate::analysis::smi::{GpuRanks, SmiComparison};
use crate::grammar::memory_model::{Category, DeviceBasis, Term};
use crate::model::Run;
use crate::render::json::MemoryDoc;
use crate::render::text::breakdown::derivation;
use crate::report::{MemoryDiff, MemoryReport};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum CategoryName {
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
pub(crate) struct TermDoc {
    /// +1 or −1.
    pub(crate) sign: i8,
    /// `phase.figure`, `event_kind.field`, `device` or `rest`.
    pub(crate) name: String,
    /// The term's value and its print step.
    pub(crate) amount_bytes: MemoryDoc,
    pub(crate) source: Option<String>,
    pub(crate) line: Option<u64>,
}

/// How an amount was computed: the text's words and the terms added.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct DerivationDoc {
    /// The derivation as the text prints it.
    pub(crate) text: String,
    pub(crate) terms: Vec<TermDoc>,
}

/// A computed amount in the one memory shape: its resolution is the sum of its terms'
/// print steps (the true value is within ± half of it).
fn amount_bytes(a: &Amount) -> MemoryDoc {
    MemoryDoc::with_step(a.bytes, a.step)
}

fn derivation_doc(run: &Run, a: &Amount) -> DerivationDoc {
    DerivationDoc {
        text: derivation(run, a),
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
                amount_bytes: MemoryDoc::with_step(t.bytes, t.step),
                source: t.origin.as_ref().map(|o| run.source_name(o).to_string()),
                line: t.origin.as_ref().map(|o| o.line),
            })
            .collect(),
    }
}

#[derive(Clone, Copy, Debug, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum DeviceSourceName {
    /// The free memory the server measured before it took any.
    LogFreeAtStart,
    LogTotal,
    NvidiaSmi,
    OomCapacity,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct DeviceDoc {
    pub(crate) source: DeviceSourceName,
    pub(crate) amount_bytes: MemoryDoc,
    pub(crate) derivation: DerivationDoc,
}

#[derive(Clone, Copy, Debug, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum CategoryStatus {
    Measured,
    /// The log does not separate it: counted in `merged_into`.
    Merged,
    /// The lines it is read from are missing on this rank.
    NotReached,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct CategoryDoc {
    pub(crate) category: CategoryName,
    pub(crate) status: CategoryStatus,
    pub(crate) merged_into: Option<CategoryName>,
    /// Categories the log does not separate, counted in this one.
    pub(crate) includes: Vec<CategoryName>,
    /// Null unless `measured`.
    pub(crate) amount_bytes: Option<MemoryDoc>,
    /// Of the device memory.
    pub(crate) percent: Option<f64>,
    pub(crate) derivation: Option<DerivationDoc>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct ClosureDoc {
    /// The measured categories added, and the device.
    pub(crate) sum_bytes: MemoryDoc,
    pub(crate) device_bytes: MemoryDoc,
    /// `sum − device`, its resolution the sum of theirs.
    pub(crate) difference_bytes: MemoryDoc,
    /// The categories add up to the device: `difference` is within ± half its
    /// resolution.
    pub(crate) holds: bool,
}

/// Ranks with the same figures, read on the first.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct BreakdownGroupDoc {
    pub(crate) ranks: Vec<String>,
    pub(crate) device: Option<DeviceDoc>,
    pub(crate) categories: Vec<CategoryDoc>,
    pub(crate) closure: Option<ClosureDoc>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct BreakdownDoc {
    /// The grammar whose `[memory_model]` was used.
    pub(crate) grammar: String,
    pub(crate) groups: Vec<BreakdownGroupDoc>,
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
            amount_bytes: amount_bytes(&d.amount),
            derivation: derivation_doc(run, &d.amount),
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
                    amount_bytes: a.map(amount_bytes),
                    derivation: a.map(|a| derivation_doc(run, a)),
                }
            })
            .collect(),
        closure: b.closure.as_ref().map(|c| ClosureDoc {
            sum_bytes: MemoryDoc::with_step(c.sum, c.sum_step),
            device_bytes: MemoryDoc::with_step(c.device, c.device_step),
            difference_bytes: MemoryDoc::with_step(c.sum - c.device, c.sum_step + c.device_step),
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
pub(crate) struct ModelPerTokenDoc {
    /// KV bytes per token per rank, from the model's config (exact).
    pub(crate) per_token_bytes: MemoryDoc,
    pub(crate) tp: i64,
    pub(crate) kv_heads_per_rank: i64,
    /// Ranks holding each KV head (1 unless the model has fewer KV heads than ranks).
    pub(crate) replication: i64,
    /// One element of the KV cache (exact).
    pub(crate) element_bytes: MemoryDoc,
    /// The server's `kv_cache_dtype` when it set the element size.
    pub(crate) kv_dtype: Option<String>,
    /// Agrees with the log's bytes per token within its tolerance (null: the log gives none).
    pub(crate) matches_log: Option<bool>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct LimitDoc {
    pub(crate) setting: String,
    pub(crate) value: i64,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct RequestsAtDoc {
    pub(crate) tokens: i64,
    pub(crate) pages_per_request: i64,
    /// Pages in the pool ÷ pages per request.
    pub(crate) concurrency: f64,
    /// Whole requests, capped by the server's limit.
    pub(crate) requests: i64,
    pub(crate) limited: bool,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct ServerConcurrencyDoc {
    pub(crate) tokens: i64,
    pub(crate) concurrency: f64,
    /// Ours, for the same length.
    pub(crate) ours: f64,
    pub(crate) source: String,
    pub(crate) line: u64,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct PoolRuleDoc {
    pub(crate) setting: String,
    pub(crate) fraction: f64,
    pub(crate) fraction_default: bool,
    pub(crate) total_bytes: MemoryDoc,
    pub(crate) used_bytes: MemoryDoc,
    /// total × fraction − used; its resolution theirs added.
    pub(crate) predicted_bytes: MemoryDoc,
    /// The KV pool category.
    pub(crate) logged_bytes: MemoryDoc,
    /// `predicted` and `logged` differ by at most half their resolutions added and 5 %
    /// of `predicted` (the pool's own metadata, page rounding).
    pub(crate) follows: bool,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct CapacityDoc {
    /// The rank read: the one with the smallest pool.
    pub(crate) rank: String,
    pub(crate) ranks_differ: bool,
    pub(crate) pool_tokens: i64,
    /// When the log printed pages (blocks) rather than tokens.
    pub(crate) pool_pages: Option<i64>,
    pub(crate) page_size: i64,
    /// The page size is the server's default: no logged setting gives it.
    pub(crate) page_size_default: bool,
    pub(crate) pool_source: Option<String>,
    pub(crate) pool_line: Option<u64>,
    /// The KV pool category over the pool's tokens, rounded to whole bytes; its
    /// resolution covers the category's and up to one page the server left unused.
    pub(crate) log_per_token_bytes: Option<MemoryDoc>,
    /// With `--model-config`: the model's bytes per token.
    pub(crate) model_per_token: Option<ModelPerTokenDoc>,
    pub(crate) limit: Option<LimitDoc>,
    pub(crate) lengths: Vec<RequestsAtDoc>,
    /// The server's own "maximum concurrency" line, where it prints one.
    pub(crate) server_said: Option<ServerConcurrencyDoc>,
    pub(crate) pool_rule: Option<PoolRuleDoc>,
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
        // Its tolerance is a ± bound: the width is twice it, and one byte more for the
        // rounding to whole bytes.
        log_per_token_bytes: c.log_per_token.as_ref().map(|l| {
            MemoryDoc::with_step(
                l.bytes.round() as i64,
                (2.0 * l.tolerance).ceil() as i64 + 1,
            )
        }),
        model_per_token: c.model_per_token.as_ref().map(|m| ModelPerTokenDoc {
            per_token_bytes: MemoryDoc::exact(m.per_token),
            tp: m.tp,
            kv_heads_per_rank: m.heads_per_rank,
            replication: m.replication,
            element_bytes: MemoryDoc::exact(m.elem_bytes),
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
            total_bytes: amount_bytes(&p.total),
            used_bytes: amount_bytes(&p.used),
            predicted_bytes: MemoryDoc::with_step(p.predicted, p.total.step + p.used.step),
            logged_bytes: MemoryDoc::with_step(p.logged, p.logged_step),
            follows: p.follows(),
        }),
    }
}

/// A run's memory: null parts when its grammar has no memory model or its log no pool.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct MemoryReportDoc {
    pub(crate) breakdown: Option<BreakdownDoc>,
    pub(crate) capacity: Option<CapacityDoc>,
    /// Per rank with a PyTorch snapshot, what the allocator held of each breakdown
    /// category and the rest it did not see (empty without snapshots).
    pub(crate) allocator_split: Vec<AllocatorSplitDoc>,
    /// Per GPU of the run's nvidia-smi CSVs, what it saw used against what the
    /// breakdown's ranks took (empty without a CSV, or when ranks cannot be put on GPUs).
    pub(crate) nvidia_smi: Vec<SmiComparisonDoc>,
}

pub(crate) fn memory_report_doc(run: &Run, m: &MemoryReport) -> MemoryReportDoc {
    MemoryReportDoc {
        breakdown: m.breakdown.as_ref().map(|b| breakdown_doc(run, b)),
        capacity: m.capacity.as_ref().map(|c| capacity_doc(run, c)),
        allocator_split: m.held.iter().map(allocator_split_doc).collect(),
        nvidia_smi: m.smi.iter().map(|c| smi_doc(run, c)).collect(),
    }
}

/// How a site was put in a category's phase.
#[derive(Clone, Copy, Debug, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[expect(
    clippy::enum_variant_names,
    reason = "the JSON values are by_stack, by_time, by_size"
)]
pub(crate) enum PlacedName {
    /// A frame of its stack names the phase (a grammar's `frame_phase`).
    ByStack,
    /// Its first allocation falls in the phase's window on the log's clock, in no other.
    ByTime,
    /// Its first allocation falls in a second two phases share: put in the first whose
    /// log figure still had room for it.
    BySize,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct HeldSiteDoc {
    /// `function (file.py:line)`.
    pub(crate) site: String,
    /// Reserved at the dump (exact).
    pub(crate) reserved_bytes: MemoryDoc,
    pub(crate) placed: PlacedName,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct CategoryHeldDoc {
    pub(crate) category: CategoryName,
    /// What the allocator reserved at sites first allocating in the category's phase
    /// (exact).
    pub(crate) allocator_bytes: MemoryDoc,
    /// The breakdown's amount less `allocator_bytes`: what the allocator did not hold
    /// (NCCL, the CUDA context, IPC, `cudaMalloc`, or memory freed before the dump);
    /// negative when the phase reused or freed memory before the log's line. Its
    /// resolution is the amount's. Null when the breakdown did not measure the category.
    pub(crate) residual_bytes: Option<MemoryDoc>,
    /// The largest sites, at most three.
    pub(crate) sites: Vec<HeldSiteDoc>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct AllocatorSplitDoc {
    pub(crate) rank: String,
    /// The snapshot's file.
    pub(crate) path: String,
    /// Every category with a phase of its own, in the breakdown's order.
    pub(crate) categories: Vec<CategoryHeldDoc>,
    /// Reserved at sites first seen outside those phases (serving, launch) or not placed
    /// on the log's clock (exact).
    pub(crate) unplaced_bytes: MemoryDoc,
    /// Everything the allocator reserved at the dump (exact).
    pub(crate) reserved_bytes: MemoryDoc,
}

fn allocator_split_doc(h: &RankHeld) -> AllocatorSplitDoc {
    AllocatorSplitDoc {
        rank: h.rank.to_string(),
        path: h.path.clone(),
        categories: h
            .categories
            .iter()
            .map(|c| CategoryHeldDoc {
                category: c.category.into(),
                allocator_bytes: MemoryDoc::exact(c.reserved),
                residual_bytes: c.residual.map(|r| MemoryDoc::with_step(r, c.step)),
                sites: c
                    .sites
                    .iter()
                    .map(|x| HeldSiteDoc {
                        site: x.label.clone(),
                        reserved_bytes: MemoryDoc::exact(x.reserved),
                        placed: match x.placed {
                            Placed::ByStack => PlacedName::ByStack,
                            Placed::ByTime => PlacedName::ByTime,
                            Placed::BySize => PlacedName::BySize,
                        },
                    })
                    .collect(),
            })
            .collect(),
        unplaced_bytes: MemoryDoc::exact(h.unplaced),
        reserved_bytes: MemoryDoc::exact(h.reserved),
    }
}

/// How the ranks were put on a GPU.
#[derive(Clone, Copy, Debug, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum PlacementName {
    /// The CSV has one GPU: every worker rank is on it.
    Shared,
    /// Rank k on GPU k, the servers' default on one node (an assumption).
    ByIndex,
}

/// A rank's own OOM message: its process's total in use against what its figures took.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct ProcessInUseDoc {
    pub(crate) rank: String,
    /// `this process has … in use`, with the message's print step.
    pub(crate) in_use_bytes: MemoryDoc,
    /// The rank's device less its last free figure.
    pub(crate) taken_bytes: MemoryDoc,
    /// `in_use − taken`: what it holds outside its figures and what the failing phase
    /// took after its last one.
    pub(crate) difference_bytes: MemoryDoc,
    pub(crate) source: String,
    pub(crate) line: u64,
}

/// One GPU: nvidia-smi's `memory.used` against the breakdown's ranks on it.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct SmiComparisonDoc {
    /// The CSV.
    pub(crate) source: String,
    pub(crate) gpu: u32,
    pub(crate) ranks: Vec<String>,
    pub(crate) placement: PlacementName,
    /// Seconds since the run's first line of the nvidia-smi sample used: the first a
    /// stamp's second after the last of the ranks printed its free figure.
    pub(crate) at_s: f64,
    /// nvidia-smi's used then (whole MiB).
    pub(crate) used_bytes: MemoryDoc,
    /// The ranks' device less their last free figure, added.
    pub(crate) taken_bytes: MemoryDoc,
    /// `used − taken`.
    pub(crate) difference_bytes: MemoryDoc,
    /// nvidia-smi's used at its last sample before the run's first line (other
    /// processes); null when it has none.
    pub(crate) before_bytes: Option<MemoryDoc>,
    /// `difference − before` (`difference` when `before` is null): what the processes
    /// hold that their own free figures do not count (the CUDA context).
    pub(crate) rest_bytes: MemoryDoc,
    /// Every rank's free figure is the one after its last phase; false: some rank
    /// stopped in a phase that took memory after its last figure.
    pub(crate) finished: bool,
    /// The first rank on this GPU whose OOM message gives its process's total.
    pub(crate) process: Option<ProcessInUseDoc>,
}

fn smi_doc(run: &Run, c: &SmiComparison) -> SmiComparisonDoc {
    let smi_step = crate::render::json::NVIDIA_SMI_STEP as i64;
    let step = c.step + smi_step;
    let before = c.before.unwrap_or(0);
    SmiComparisonDoc {
        source: c.source.clone(),
        gpu: c.gpu,
        ranks: c.ranks.iter().map(|r| r.to_string()).collect(),
        placement: match c.placement {
            GpuRanks::Shared => PlacementName::Shared,
            GpuRanks::ByIndex => PlacementName::ByIndex,
        },
        at_s: c.at_s.get(),
        used_bytes: MemoryDoc::smi(c.smi_used),
        taken_bytes: MemoryDoc::with_step(c.taken, c.step),
        difference_bytes: MemoryDoc::with_step(c.difference(), step),
        before_bytes: c.before.map(MemoryDoc::smi),
        rest_bytes: MemoryDoc::with_step(
            c.difference() - before,
            step + if c.before.is_some() { smi_step } else { 0 },
        ),
        finished: c.finished,
        process: c.process.as_ref().map(|p| ProcessInUseDoc {
            rank: p.rank.to_string(),
            in_use_bytes: MemoryDoc::with_step(p.in_use, p.in_use_step),
            taken_bytes: MemoryDoc::with_step(p.taken, p.taken_step),
            difference_bytes: MemoryDoc::with_step(
                p.in_use - p.taken,
                p.in_use_step + p.taken_step,
            ),
            source: run.source_name(&p.origin).to_string(),
            line: p.origin.line,
        }),
    }
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct CategoryMoveDoc {
    pub(crate) category: CategoryName,
    /// Median over the ranks compared of candidate − baseline; its resolution both
    /// sides' added (the largest over the ranks).
    pub(crate) delta_bytes: MemoryDoc,
    pub(crate) ranks_moved: usize,
    pub(crate) ranks_compared: usize,
}

/// The snapshots' split of the moved category's phase.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct SnapshotSplitDoc {
    pub(crate) category: CategoryName,
    /// What PyTorch's allocator reserved in the phase (candidate − baseline; exact).
    pub(crate) allocator_bytes: MemoryDoc,
    /// The log's delta less the allocator's: memory PyTorch did not see. Its resolution
    /// is the log figure's step in both runs: a residual within ± half of it is
    /// indistinguishable from none.
    pub(crate) residual_bytes: Option<MemoryDoc>,
    pub(crate) sites: Vec<String>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct LengthCostDoc {
    pub(crate) tokens: i64,
    pub(crate) requests_delta: f64,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct CapacityCostDoc {
    /// The changed settings the cost is theirs together (`key old → new`).
    pub(crate) changes: Vec<String>,
    pub(crate) tokens_delta: i64,
    pub(crate) per_length: Vec<LengthCostDoc>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct MemoryDiffDoc {
    pub(crate) baseline: MemoryReportDoc,
    pub(crate) candidate: MemoryReportDoc,
    /// Categories that changed beyond their resolution.
    pub(crate) moved: Vec<CategoryMoveDoc>,
    /// Categories read from different lines in the two runs (not compared).
    pub(crate) not_compared: Vec<CategoryName>,
    pub(crate) snapshot_split: Option<SnapshotSplitDoc>,
    pub(crate) capacity_cost: Option<CapacityCostDoc>,
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
                delta_bytes: MemoryDoc::with_step(m.delta, m.step),
                ranks_moved: m.ranks_moved,
                ranks_compared: m.ranks_compared,
            })
            .collect(),
        d.not_compared.iter().map(|c| (*c).into()).collect(),
        d.snapshot.as_ref().map(|s| SnapshotSplitDoc {
            category: s.category.into(),
            allocator_bytes: MemoryDoc::exact(s.allocator),
            residual_bytes: s
                .residual
                .map(|r| MemoryDoc::with_step(r, 2 * s.log_resolution.unwrap_or(0))),
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

pub(crate) fn memory_diff_doc(baseline: &Run, candidate: &Run, m: &MemoryDiff) -> MemoryDiffDoc {
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
