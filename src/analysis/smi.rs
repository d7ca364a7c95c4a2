//! The breakdown against what nvidia-smi saw: per GPU of the CSV, the memory its ranks
//! took by the breakdown (the device figure less the last free one, summed over the
//! ranks on that GPU) against nvidia-smi's `memory.used` sampled when the last of them
//! printed that free figure. The difference is memory the server's own figures do not
//! count: what was in use before it measured (other processes, seen as nvidia-smi's used
//! before the run's first line) and per process what it holds outside its measurement
//! (the CUDA context), which a PyTorch OOM message shows as `this process has … in use`
//! against the rank's own figures.

use std::collections::{HashMap, HashSet};

use crate::analysis::breakdown::{model_of, rank_breakdown, Reader};
use crate::base::event::{Origin, Rank};
use crate::base::units::Seconds;
use crate::grammar::memory_model::{Category, DeviceBasis, Term};
use crate::model::{RankRun, Run};

/// The servers' stamps are whole seconds: a line stamped `t` was printed before `t + 1`.
const STAMP_S: f64 = 1.0;

/// How the ranks were put on a GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GpuRanks {
    /// The CSV has one GPU: every worker rank is on it (as the samples' shared device).
    Shared,
    /// As many GPUs as ranks or more: rank k on GPU k, the servers' default placement
    /// on one node (SGLang `base_gpu_id + tp_rank`, vLLM's local rank); an assumption,
    /// said so.
    ByIndex,
}

/// A rank's own OOM message: what its process held in all (PyTorch and not) against
/// what the breakdown says it took.
#[derive(Clone, Debug, PartialEq)]
pub struct ProcessInUse {
    pub(crate) rank: Rank,
    pub(crate) in_use: i64,
    /// One print step of the message's figure.
    pub(crate) in_use_step: i64,
    pub(crate) taken: i64,
    /// The print steps `taken` was computed from, added.
    pub(crate) taken_step: i64,
    pub(crate) origin: Origin,
}

/// nvidia-smi's used memory on one GPU against what the ranks on it report taking.
#[derive(Clone, Debug, PartialEq)]
pub struct SmiComparison {
    pub(crate) source: String,
    /// The GPU's index.
    pub gpu: u32,
    /// The ranks placed on it.
    pub ranks: Vec<Rank>,
    pub(crate) placement: GpuRanks,
    /// Seconds since the run's first line of the nvidia-smi point used, and its value.
    pub at_s: Seconds,
    /// nvidia-smi's used memory at `at_s` (bytes).
    pub smi_used: i64,
    /// The ranks' device less their last free figure, summed, and its resolution.
    pub taken: i64,
    pub(crate) resolution: i64,
    /// The print steps `taken` was computed from, added (the JSON's resolution).
    pub(crate) step: i64,
    /// nvidia-smi's used at its first sample before the run's first line: memory in use
    /// before the server started (other processes).
    pub before: Option<i64>,
    /// The first rank on this GPU whose OOM message gives its process's total.
    pub process: Option<ProcessInUse>,
    /// Every rank's free figure is the one after its last phase; false: some rank
    /// stopped in a phase that took memory after its last figure.
    pub finished: bool,
}

impl SmiComparison {
    /// What nvidia-smi sees that the ranks' figures do not (`smi_used - taken`).
    pub fn difference(&self) -> i64 {
        self.smi_used - self.taken
    }
}

/// A rank's taken memory: the device figure less the free one, with the free figure's
/// line. Only where the device is the free memory at start and free is measured.
/// The bytes, their resolution (a ± bound), the free figure's line, whether the rank
/// finished, and the print steps added.
type Taken = (i64, i64, Origin, bool, i64);

fn taken(rd: &Reader, r: &RankRun) -> Option<Taken> {
    let model = model_of(rd.run)?;
    if model.device_basis != DeviceBasis::FreeAtStart {
        return None;
    }
    let b = rank_breakdown(rd, r, model);
    let device = b.device.as_ref()?;
    let free = match &b.row(Category::Free)?.value {
        crate::analysis::breakdown::RowValue::Measured(a) => a,
        _ => return None,
    };
    let origin = free
        .terms
        .iter()
        .find(|t| !matches!(t.term, Term::Device | Term::Rest))?
        .origin
        .clone()?;
    Some((
        device.amount.bytes - free.bytes,
        device.amount.resolution + free.resolution,
        origin,
        // The grammar's first free formula is the one after the last phase; a later one
        // is a rank that stopped earlier, whose unfinished phase took more after it.
        free.formula == 0,
        device.amount.step + free.step,
    ))
}

fn process_in_use(r: &RankRun, taken: i64, taken_step: i64) -> Option<ProcessInUse> {
    let f = r.failure.as_ref()?;
    let field = f.fields.get("process_in_use_bytes")?;
    Some(ProcessInUse {
        rank: r.rank.clone(),
        in_use: field.as_bytes()?,
        in_use_step: i64::try_from(field.resolution()).unwrap_or(i64::MAX),
        taken,
        taken_step,
        origin: f.origin.clone()?,
    })
}

/// One comparison per GPU of the run's nvidia-smi CSVs that ranks can be put on.
pub(crate) fn smi_comparisons(run: &Run) -> Vec<SmiComparison> {
    if run.gpus.is_empty() {
        return Vec::new();
    }
    let rd = Reader::new(run);
    let workers: Vec<&RankRun> = run.worker_ranks().collect();
    let gpus = run.gpus.len();
    let placement = if gpus == 1 {
        GpuRanks::Shared
    } else if gpus >= workers.len() {
        GpuRanks::ByIndex
    } else {
        return Vec::new();
    };
    let takens: Vec<Option<Taken>> = workers.iter().map(|r| taken(&rd, r)).collect();
    // The free figures' lines, timed once for every rank.
    let key = |o: &Origin| (o.source, o.line);
    let wanted: HashSet<(usize, u64)> = takens.iter().flatten().map(|t| key(&t.2)).collect();
    let times: HashMap<(usize, u64), f64> = run
        .events
        .iter()
        .filter(|e| wanted.contains(&key(&e.origin)))
        .filter_map(|e| {
            let s = (e.ts? - run.start?).num_milliseconds() as f64 / 1e3;
            Some((key(&e.origin), s))
        })
        .collect();
    let mut out = Vec::new();
    for g in &run.gpus {
        let on: Vec<usize> = match placement {
            GpuRanks::Shared => (0..workers.len()).collect(),
            GpuRanks::ByIndex => (0..workers.len())
                .filter(|&i| u32::try_from(i).ok() == Some(g.gpu))
                .collect(),
        };
        let mut sum = 0i64;
        let mut res = 0i64;
        let mut step = 0i64;
        let mut at: Option<f64> = None;
        let mut process = None;
        let mut complete = !on.is_empty();
        let mut finished = true;
        for &i in &on {
            let (Some((t, r, o, fin, st)), Some(r_)) = (&takens[i], workers.get(i)) else {
                complete = false;
                break;
            };
            finished &= *fin;
            sum += t;
            res += r;
            step += st;
            match times.get(&key(o)) {
                Some(&s) => at = Some(at.map_or(s, |a: f64| a.max(s))),
                None => complete = false,
            }
            if process.is_none() {
                process = process_in_use(r_, *t, *st);
            }
        }
        let Some(at) = at.filter(|_| complete) else {
            continue;
        };
        // The first point a stamp's second after the line (the figure is printed once the
        // memory is taken, and the servers stamp whole seconds), else the last before.
        let at = at + STAMP_S;
        let point = g
            .series
            .iter()
            .find(|p| p.0 >= at)
            .or_else(|| g.series.iter().rev().find(|p| p.0 < at));
        let Some(&(at_s, used)) = point else { continue };
        let before = g
            .series
            .iter()
            .take_while(|p| p.0 < 0.0)
            .last()
            .or_else(|| g.series.first().filter(|p| p.0 <= 0.0))
            .map(|p| p.1 as i64);
        out.push(SmiComparison {
            source: g.source.clone(),
            gpu: g.gpu,
            ranks: on
                .iter()
                .filter_map(|&i| workers.get(i))
                .map(|r| r.rank.clone())
                .collect(),
            placement,
            at_s: Seconds(at_s),
            smi_used: used as i64,
            taken: sum,
            resolution: res,
            step,
            before,
            process,
            finished,
        });
    }
    out
}
