//! Where each rank's device memory went: the server grammar's `[memory_model]` categories
//! evaluated on the rank's printed figures, each with the lines it read and the
//! subtraction it made, and the check that the categories add up to the device memory
//! within the figures' resolution. With a baseline, the categories that moved.

use crate::analysis::attribute::Attribution;
use crate::base::event::{FieldValue, Origin, Rank};
use crate::base::units::ByteDelta;
use crate::grammar::memory_model::{Category, DeviceBasis, Formula, MemoryModel, Term};
use crate::model::{RankRun, Run};

/// One term of a formula, as read on a rank.
#[derive(Clone, Debug, PartialEq)]
pub struct TermValue {
    pub(crate) sign: i8,
    pub(crate) term: Term,
    pub(crate) bytes: i64,
    /// Half the figure's print step: the true value is within ± this.
    pub(crate) resolution: i64,
    /// One print step of the figure (the JSON's `resolution_bytes`): twice `resolution`
    /// but for a step of an odd number of bytes, which halving rounds down.
    pub(crate) step: i64,
    /// The line it was read from (none for `device` and `rest`).
    pub origin: Option<Origin>,
}

/// A figure computed from a formula: its value, how far it may be from the truth, and
/// what it was computed from.
#[derive(Clone, Debug, PartialEq)]
pub struct Amount {
    /// The computed value, in bytes.
    pub bytes: i64,
    pub(crate) resolution: i64,
    /// The terms' print steps added: the width of the interval the true value lies in
    /// (`resolution` is its half, rounded down per term).
    pub(crate) step: i64,
    /// Which of the grammar's formulas applied (0 = the first): two runs' amounts compare
    /// only when they were read the same way.
    pub(crate) formula: usize,
    /// The formula's terms with the values they were read as.
    pub terms: Vec<TermValue>,
}

/// Where the device memory figure came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DeviceSource {
    /// The grammar's device formula on the log's figures.
    Log(DeviceBasis),
    /// nvidia-smi's `memory.total` (the smallest of the run's GPUs).
    NvidiaSmi,
    /// The OOM message's `total capacity`.
    OomCapacity,
}

/// A rank's device memory: the whole the categories are measured against.
#[derive(Clone, Debug, PartialEq)]
pub struct Device {
    /// Its size, and what it was read from.
    pub amount: Amount,
    pub(crate) source: DeviceSource,
}

/// A category's memory on one rank, or why there is none.
#[derive(Clone, Debug, PartialEq)]
pub enum RowValue {
    /// Read from the log's figures by one of the category's formulas.
    Measured(Amount),
    /// The log does not separate it: its memory is counted in this category.
    Merged(Category),
    /// None of the category's formulas could be read on this rank (it stopped before
    /// the lines, or the server build prints other ones).
    NotReached,
}

/// One category of a rank's breakdown.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub(crate) category: Category,
    /// Its memory, or why there is none.
    pub value: RowValue,
    /// Categories merged into this one.
    pub includes: Vec<Category>,
}

/// Whether the measured categories add up to the device memory.
#[derive(Clone, Debug, PartialEq)]
pub struct Closure {
    /// The measured categories added.
    pub sum: i64,
    pub(crate) device: i64,
    /// The sum of every term's resolution on both sides.
    pub tolerance: i64,
    /// The measured categories' print steps added, and the device's.
    pub(crate) sum_step: i64,
    pub(crate) device_step: i64,
}

impl Closure {
    /// The sum is the device memory within the tolerance.
    pub fn holds(&self) -> bool {
        (self.sum - self.device).abs() <= self.tolerance
    }
}

/// Where one rank's memory went, by the server grammar's memory model.
#[derive(Clone, Debug, PartialEq)]
pub struct RankBreakdown {
    /// The device memory, when the log, nvidia-smi or an OOM message gives it.
    pub device: Option<Device>,
    pub(crate) rows: Vec<Row>,
    /// When the device is known: the categories measured against it.
    pub closure: Option<Closure>,
}

impl RankBreakdown {
    /// Category `c`'s row, if the model has it.
    pub fn row(&self, c: Category) -> Option<&Row> {
        self.rows.iter().find(|r| r.category == c)
    }
    /// Category `c`'s bytes, when they were measured.
    pub fn bytes(&self, c: Category) -> Option<i64> {
        match &self.row(c)?.value {
            RowValue::Measured(a) => Some(a.bytes),
            _ => None,
        }
    }
    /// The values that make two ranks' breakdowns the same for display.
    fn key(&self) -> Vec<Option<i64>> {
        let mut k: Vec<Option<i64>> = vec![self.device.as_ref().map(|d| d.amount.bytes)];
        k.extend(self.rows.iter().map(|r| match &r.value {
            RowValue::Measured(a) => Some(a.bytes),
            _ => None,
        }));
        k
    }
}

/// Ranks whose breakdowns have the same figures, shown once (read on the first rank).
#[derive(Clone, Debug, PartialEq)]
pub struct BreakdownGroup {
    /// The group's ranks.
    pub ranks: Vec<Rank>,
    /// Their breakdown (the first rank's).
    pub breakdown: RankBreakdown,
}

/// Where a run's memory went: its ranks' breakdowns, equal ones grouped.
#[derive(Clone, Debug, PartialEq)]
pub struct RunBreakdown {
    /// The grammar whose memory model was used.
    pub(crate) grammar: String,
    /// Groups of ranks with the same figures.
    pub groups: Vec<BreakdownGroup>,
}

/// A run with its engine processes found once: a term a rank does not print is looked
/// up in them (vLLM's engine core prints the pool for every worker), and a run of
/// thousands of ranks must not search its ranks for them once per term.
pub(crate) struct Reader<'r> {
    pub(crate) run: &'r Run,
    engines: Vec<&'r RankRun>,
}

impl<'r> Reader<'r> {
    pub(crate) fn new(run: &'r Run) -> Reader<'r> {
        Reader {
            run,
            engines: run.ranks.iter().filter(|r| r.is_process()).collect(),
        }
    }
}

/// The figure a term names on a rank: its own, else an engine process's.
fn read_term(rd: &Reader, rank: &RankRun, term: &Term) -> Option<(i64, i64, Option<Origin>)> {
    let run = rd.run;
    // The print step; `evaluate` halves it for the bound.
    let value = |v: &FieldValue| -> Option<(i64, i64)> {
        match v {
            FieldValue::Bytes { bytes, resolution } => {
                Some((*bytes, i64::try_from(*resolution).unwrap_or(i64::MAX)))
            }
            FieldValue::Int(i) => Some((*i, 0)),
            _ => None,
        }
    };
    let engines = || rd.engines.iter().copied();
    match term {
        Term::Figure(phase, fig) => std::iter::once(rank)
            .chain(engines())
            .find_map(|r| r.figure(*phase, fig.name()))
            .and_then(|f| {
                let (b, res) = value(&f.value)?;
                Some((b, res, Some(f.origin.clone())))
            }),
        Term::Field(kind, field) => std::iter::once(rank)
            .chain(engines())
            .flat_map(|r| r.events.iter())
            .filter_map(|&i| run.events.get(i))
            .filter(|e| e.kind == *kind)
            .find_map(|e| {
                let (b, res) = value(e.fields.get(field)?)?;
                Some((b, res, Some(e.origin.clone())))
            }),
        Term::Device | Term::Rest => None,
    }
}

/// The first formula whose every term can be read. `device` and `rest` are given.
pub(crate) fn evaluate(
    rd: &Reader,
    rank: &RankRun,
    formulas: &[Formula],
    device: Option<&Amount>,
    rest: Option<&Amount>,
) -> Option<Amount> {
    formulas.iter().enumerate().find_map(|(i, f)| {
        let mut terms = Vec::with_capacity(f.terms.len());
        for (sign, term) in &f.terms {
            let (bytes, resolution, step, origin) = match term {
                Term::Device => device.map(|d| (d.bytes, d.resolution, d.step, None))?,
                Term::Rest => rest.map(|d| (d.bytes, d.resolution, d.step, None))?,
                _ => {
                    let (bytes, step, origin) = read_term(rd, rank, term)?;
                    (bytes, step / 2, step, origin)
                }
            };
            terms.push(TermValue {
                sign: *sign,
                term: term.clone(),
                bytes,
                resolution,
                step,
                origin,
            });
        }
        Some(Amount {
            bytes: terms.iter().map(|t| t.sign as i64 * t.bytes).sum(),
            resolution: terms.iter().map(|t| t.resolution).sum(),
            step: terms.iter().map(|t| t.step).sum(),
            formula: i,
            terms,
        })
    })
}

/// The device memory of a rank: the log's, else nvidia-smi's, else the OOM message's.
pub(crate) fn device_of(rd: &Reader, rank: &RankRun, model: &MemoryModel) -> Option<Device> {
    let run = rd.run;
    if let Some(a) = evaluate(rd, rank, &model.device, None, None) {
        return Some(Device {
            amount: a,
            source: DeviceSource::Log(model.device_basis),
        });
    }
    let plain = |bytes: i64, source| Device {
        amount: Amount {
            bytes,
            resolution: 0,
            step: 0,
            formula: 0,
            terms: Vec::new(),
        },
        source,
    };
    if let Some(t) = run.gpus.iter().filter_map(|g| g.total_bytes).min() {
        return Some(plain(t.as_signed().get(), DeviceSource::NvidiaSmi));
    }
    let oom = rank.failure.as_ref()?.fields.get("capacity_bytes")?;
    let FieldValue::Bytes { bytes, resolution } = oom else {
        return None;
    };
    let mut d = plain(*bytes, DeviceSource::OomCapacity);
    d.amount.resolution = (*resolution / 2) as i64;
    d.amount.step = i64::try_from(*resolution).unwrap_or(i64::MAX);
    Some(d)
}

/// One rank's breakdown under a memory model.
pub(crate) fn rank_breakdown(rd: &Reader, rank: &RankRun, model: &MemoryModel) -> RankBreakdown {
    let device = device_of(rd, rank, model);
    let dev = device.as_ref().map(|d| &d.amount);
    let mut rows: Vec<Row> = Category::ALL
        .iter()
        .filter_map(|c| model.categories.iter().find(|r| r.category == *c))
        .map(|rule| {
            let rest_rule = rule
                .formulas
                .iter()
                .any(|f| f.terms.iter().any(|t| t.1 == Term::Rest));
            let value = match (rest_rule, evaluate(rd, rank, &rule.formulas, dev, None)) {
                (false, Some(a)) => RowValue::Measured(a),
                (true, _) => RowValue::NotReached,
                (false, None) => match rule.merged_into {
                    Some(m) => RowValue::Merged(m),
                    None => RowValue::NotReached,
                },
            };
            Row {
                category: rule.category,
                value,
                includes: Vec::new(),
            }
        })
        .collect();
    // `rest`: the device less every category measured so far.
    let measured: i64 = rows
        .iter()
        .map(|r| match &r.value {
            RowValue::Measured(a) => a.bytes,
            _ => 0,
        })
        .sum();
    let (measured_res, measured_step) = rows.iter().fold((0, 0), |acc, r| match &r.value {
        RowValue::Measured(a) => (acc.0 + a.resolution, acc.1 + a.step),
        _ => acc,
    });
    if let Some(d) = dev {
        let rest = Amount {
            bytes: d.bytes - measured,
            resolution: d.resolution + measured_res,
            step: d.step + measured_step,
            formula: 0,
            terms: Vec::new(),
        };
        for (i, rule) in model.categories.iter().enumerate() {
            let is_rest = rule
                .formulas
                .iter()
                .any(|f| f.terms.iter().any(|t| t.1 == Term::Rest));
            if !is_rest {
                continue;
            }
            if let (Some(a), Some(row)) = (
                evaluate(rd, rank, &rule.formulas, dev, Some(&rest)),
                rows.iter_mut()
                    .find(|r| r.category == model.categories[i].category),
            ) {
                row.value = RowValue::Measured(a);
            }
        }
    }
    let merged: Vec<(Category, Category)> = rows
        .iter()
        .filter_map(|r| match r.value {
            RowValue::Merged(into) => Some((r.category, into)),
            _ => None,
        })
        .collect();
    for (from, into) in merged {
        if let Some(row) = rows.iter_mut().find(|r| r.category == into) {
            row.includes.push(from);
        }
    }
    // A rank that stopped early has its later categories unread, and its last free
    // figure as free: what it reached still adds up to the device. A category computed
    // as the rest of the device adds up by construction: nothing to check then.
    let by_rest = model.categories.iter().any(|r| {
        r.formulas.iter().any(|f| f.terms.iter().any(|t| t.1 == Term::Rest))
    }) && rows.iter().any(|r| {
        matches!(&r.value, RowValue::Measured(a) if a.terms.iter().any(|t| t.term == Term::Rest))
    });
    let closure = dev.filter(|_| !by_rest).map(|d| {
        let (sum, res, step) = rows.iter().fold((0, 0, 0), |acc, r| match &r.value {
            RowValue::Measured(a) => (acc.0 + a.bytes, acc.1 + a.resolution, acc.2 + a.step),
            _ => acc,
        });
        Closure {
            sum,
            device: d.bytes,
            tolerance: res + d.resolution,
            sum_step: step,
            device_step: d.step,
        }
    });
    RankBreakdown {
        device,
        rows,
        closure,
    }
}

/// The memory model of the run's server, if its grammar has one.
pub(crate) fn model_of(run: &Run) -> Option<&MemoryModel> {
    let models = &run.remedy_rules.memory_models;
    run.servers
        .iter()
        .find_map(|s| models.iter().find(|m| m.grammar == *s))
}

/// Every worker rank's breakdown, ranks with the same figures in one group. Worked out
/// a rank at a time, only each group's first kept: holding every rank's breakdown was
/// 13 MiB more at the peak of `summary` over 8,192 rank files, 110 MiB over 65,536.
pub fn breakdown(run: &Run) -> Option<RunBreakdown> {
    breakdown_with(run, |_, _| {})
}

/// [`breakdown`], each worker rank's measured categories handed to `each_rank` as the
/// rank is read.
fn breakdown_with(
    run: &Run,
    mut each_rank: impl FnMut(&Rank, &MeasuredRows),
) -> Option<RunBreakdown> {
    let (grammar, each) = worker_breakdowns(run)?;
    let each = each.map(|(rank, b)| {
        each_rank(rank, &measured_rows(&b));
        (rank, std::borrow::Cow::Owned(b))
    });
    Some(grouped(grammar, each))
}

/// Each worker rank with its breakdown, in the run's rank order, worked out as they are
/// read, and the grammar whose memory model they follow; `None` when it has none.
fn worker_breakdowns(
    run: &Run,
) -> Option<(&str, impl Iterator<Item = (&Rank, RankBreakdown)> + '_)> {
    let model = model_of(run)?;
    let rd = Reader::new(run);
    let each = (run.worker_ranks()).map(move |r| (&r.rank, rank_breakdown(&rd, r, model)));
    Some((model.grammar.as_str(), each))
}

/// Ranks with the same figures in one group, shown by the first one's breakdown.
fn grouped<'a>(
    grammar: &str,
    each: impl Iterator<Item = (&'a Rank, std::borrow::Cow<'a, RankBreakdown>)>,
) -> RunBreakdown {
    let mut index: foldhash::HashMap<Vec<Option<i64>>, usize> = Default::default();
    let mut groups: Vec<BreakdownGroup> = Vec::new();
    for (rank, b) in each {
        let at = *index.entry(b.key()).or_insert_with(|| {
            groups.push(BreakdownGroup {
                ranks: Vec::new(),
                breakdown: b.into_owned(),
            });
            groups.len() - 1
        });
        if let Some(g) = groups.get_mut(at) {
            g.ranks.push(rank.clone());
        }
    }
    RunBreakdown {
        grammar: grammar.to_string(),
        groups,
    }
}

/// A category's amount on one rank as [`breakdown_diff`] compares it: no terms, no lines.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Measured {
    bytes: i64,
    resolution: i64,
    step: i64,
    /// Which formula read it: two runs' amounts compare only when read the same way.
    formula: usize,
}

/// Each category of [`Category::ALL`], in its order, where the rank's model measured it.
type MeasuredRows = [Option<Measured>; Category::ALL.len()];

fn measured_rows(b: &RankBreakdown) -> MeasuredRows {
    Category::ALL.map(|c| match b.row(c).map(|r| &r.value) {
        Some(RowValue::Measured(a)) => Some(Measured {
            bytes: a.bytes,
            resolution: a.resolution,
            step: a.step,
            formula: a.formula,
        }),
        _ => None,
    })
}

/// The baseline's worker ranks' measured categories, in the run's rank order
/// (`Run::ranks`), for the candidate's ranks to be compared with as they are read. A
/// rank's whole breakdown (its terms, each with the line it was read from) is kept only
/// as its group's first, and the candidate's measures not at all: holding every rank's
/// breakdown, for both runs, was ~250 MiB at the end of a `diff` of 65,536 rank files,
/// both runs' measures ~37 MiB.
struct RankMeasures(Vec<(Rank, MeasuredRows)>);

impl RankMeasures {
    /// The measures of worker rank `rank`, if the run has it.
    fn of(&self, rank: &Rank) -> Option<&MeasuredRows> {
        let at = self.0.binary_search_by(|(r, _)| r.cmp(rank)).ok()?;
        self.0.get(at).map(|(_, m)| m)
    }
}

/// Both runs' breakdowns (as [`breakdown`] gives each) and, when both have one, their
/// categories compared rank by rank; each rank read once.
pub(crate) fn breakdowns_compared(
    baseline: &Run,
    candidate: &Run,
    attribution: Option<&Attribution>,
) -> (
    Option<RunBreakdown>,
    Option<RunBreakdown>,
    Option<BreakdownDiff>,
) {
    let mut measures = Vec::new();
    let b = breakdown_with(baseline, |rank, m| measures.push((rank.clone(), *m)));
    let measures = RankMeasures(measures);
    let mut tallies: [Tally; Category::ALL.len()] = Default::default();
    // Each candidate worker rank beside the baseline's of that name (a worker's too:
    // whether a rank is a process is its name's).
    let c = breakdown_with(candidate, |rank, c| {
        if let Some(b) = measures.of(rank) {
            for ((t, b), c) in tallies.iter_mut().zip(b).zip(c) {
                t.add(b.as_ref(), c.as_ref());
            }
        }
    });
    let moved = (b.is_some() && c.is_some()).then(|| breakdown_diff(tallies, attribution));
    (b, c, moved)
}

/// One category over the ranks compared so far.
#[derive(Default)]
struct Tally {
    /// Candidate − baseline, on each rank both runs read the same way.
    deltas: Vec<i64>,
    /// Both sides' resolutions added, the largest over those ranks.
    resolution: i64,
    /// Both sides' print steps added, the largest over those ranks.
    step: i64,
    /// Ranks where it moved beyond their resolution.
    moved_on: usize,
    /// A rank where only one run read it, or the two read it by different formulas.
    differ: bool,
}

impl Tally {
    fn add(&mut self, b: Option<&Measured>, c: Option<&Measured>) {
        match (b, c) {
            (Some(b), Some(c)) if b.formula == c.formula => {
                let r = b.resolution + c.resolution;
                self.resolution = self.resolution.max(r);
                self.step = self.step.max(b.step + c.step);
                self.deltas.push(c.bytes - b.bytes);
                self.moved_on += usize::from((c.bytes - b.bytes).abs() > r);
            }
            (None, None) => {}
            _ => self.differ = true,
        }
    }
}

/// A category that changed between two runs beyond its resolution.
#[derive(Clone, Debug, PartialEq)]
pub struct CategoryMove {
    /// The category.
    pub category: Category,
    /// Median over the ranks compared of candidate − baseline.
    pub delta: ByteDelta,
    /// Both sides' resolutions added (the largest over the ranks).
    pub(crate) resolution: i64,
    /// Both sides' print steps added (the largest over the ranks).
    pub(crate) step: i64,
    /// Ranks where it moved beyond resolution, of those compared.
    pub ranks_moved: usize,
    /// Ranks whose category both runs read the same way.
    pub ranks_compared: usize,
}

/// The snapshots' split of a moved category's phase: what PyTorch's allocator reserved
/// in it and the residual it did not see (NCCL, IPC mappings, `cudaMalloc`).
#[derive(Clone, Debug, PartialEq)]
pub struct SnapshotSplit {
    /// The moved category.
    pub category: Category,
    /// Bytes the allocator reserved at sites first seen in the category's phase.
    pub allocator: ByteDelta,
    /// The log's figure less `allocator`: what the allocator did not see; `None` without
    /// the figure.
    pub residual: Option<ByteDelta>,
    /// One print step of the log's figure: a residual within it is indistinguishable
    /// from none.
    pub(crate) log_resolution: Option<u64>,
    /// The largest sites, as shown.
    pub sites: Vec<String>,
}

/// Two runs' breakdowns compared category by category.
#[derive(Clone, Debug, PartialEq)]
pub struct BreakdownDiff {
    /// The categories that moved beyond their resolution.
    pub moved: Vec<CategoryMove>,
    /// Categories read by different lines in the two runs (a rank stopped earlier), so
    /// not compared.
    pub not_compared: Vec<Category>,
    /// The snapshots' split of the first moved category, when both runs have snapshots.
    pub snapshot: Option<SnapshotSplit>,
}

fn median(mut v: Vec<i64>) -> i64 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

/// Per category, the ranks of both runs compared where both read it the same way.
fn breakdown_diff(
    tallies: [Tally; Category::ALL.len()],
    attribution: Option<&Attribution>,
) -> BreakdownDiff {
    let mut moved = Vec::new();
    let mut not_compared = Vec::new();
    for (cat, t) in Category::ALL.into_iter().zip(tallies) {
        if t.differ && t.deltas.is_empty() {
            not_compared.push(cat);
        }
        let n = t.deltas.len();
        let delta = median(t.deltas);
        if n > 0 && delta.abs() > t.resolution {
            moved.push(CategoryMove {
                category: cat,
                delta: ByteDelta(delta),
                resolution: t.resolution,
                step: t.step,
                ranks_moved: t.moved_on,
                ranks_compared: n,
            });
        } else if t.differ {
            not_compared.push(cat);
        }
    }
    not_compared.dedup();
    let snapshot = attribution.and_then(|a| {
        let category = Category::of_phase(a.phase)?;
        moved
            .iter()
            .any(|m| m.category == category)
            .then(|| SnapshotSplit {
                category,
                allocator: a.allocator_delta_reserved,
                residual: a.residual,
                log_resolution: a.log_resolution,
                sites: (a.sites.iter())
                    .filter(|s| s.phase == Some(a.phase))
                    .map(|s| s.label.clone())
                    .collect(),
            })
    });
    BreakdownDiff {
        moved,
        not_compared,
        snapshot,
    }
}
