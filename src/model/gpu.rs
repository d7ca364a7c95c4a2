//! GPU memory from nvidia-smi samples found beside the logs, joined to the run's clock and,
//! by pid, to its ranks.

use std::collections::BTreeMap;

use chrono::NaiveDateTime;

use crate::base::event::{Event, Rank};
use crate::base::units::{Bytes, Seconds};

/// One GPU's memory as nvidia-smi sampled it, on the run's clock (nvidia-smi stamps are
/// local wall-clock time, like SGLang's).
#[derive(Clone, Debug, PartialEq)]
pub struct GpuMemory {
    pub(crate) source: String,
    /// The GPU's index.
    pub gpu: u32,
    /// Samples read.
    pub samples: usize,
    /// The GPU's memory, when sampled.
    pub total_bytes: Option<Bytes>,
    /// The most memory used in any sample.
    pub peak_used_bytes: Bytes,
    /// Seconds since the run's first line when the peak was sampled.
    pub peak_at_s: Option<Seconds>,
    /// (seconds since the run's first line, bytes used), at most `GPU_SERIES_POINTS`.
    pub(crate) series: Vec<(f64, u64)>,
}

/// The most points a GPU's series keeps: each is the largest sample of its bucket, so
/// short peaks survive.
pub const GPU_SERIES_POINTS: usize = 256;

/// One process as `nvidia-smi --query-compute-apps` sampled it; the rank is known when
/// the logs name the same pid (vLLM workers, NCCL lines).
#[derive(Clone, Debug, PartialEq)]
pub struct GpuProcess {
    pub(crate) source: String,
    /// The process id.
    pub pid: u32,
    pub(crate) process_name: Option<String>,
    pub(crate) gpu: Option<u32>,
    /// The rank the logs give the same pid, when they do.
    pub rank: Option<Rank>,
    pub(crate) samples: usize,
    /// The most memory it used in any sample.
    pub peak_used_bytes: Bytes,
    /// Seconds since the run's first line when the peak was sampled.
    pub peak_at_s: Option<Seconds>,
}

impl GpuProcess {
    /// Per-process peaks from a parsed nvidia-smi CSV, timed from `start`; a pid the
    /// `events` name gets its rank.
    pub fn from_nvsmi(
        source: &str,
        t: &crate::ingest::nvsmi::NvSmiTimeline,
        start: Option<NaiveDateTime>,
        events: &[Event],
    ) -> Vec<GpuProcess> {
        let mut by_pid: BTreeMap<u32, Vec<&crate::ingest::nvsmi::ComputeApp>> = BTreeMap::new();
        for a in &t.apps {
            if let Some(pid) = a.pid {
                by_pid.entry(pid).or_default().push(a);
            }
        }
        by_pid
            .into_iter()
            .filter_map(|(pid, apps)| {
                let peak = apps.iter().filter(|a| a.used_memory_bytes.is_some()).fold(
                    None::<&&crate::ingest::nvsmi::ComputeApp>,
                    |best, a| match best {
                        Some(b) if b.used_memory_bytes >= a.used_memory_bytes => Some(b),
                        _ => Some(a),
                    },
                )?;
                Some(GpuProcess {
                    source: source.to_string(),
                    pid,
                    process_name: apps.iter().find_map(|a| a.process_name.clone()),
                    gpu: apps.iter().find_map(|a| a.gpu_index),
                    rank: events
                        .iter()
                        .find(|e| e.pid() == Some(pid) && e.rank.is_some())
                        .and_then(|e| e.rank.clone()),
                    samples: apps.len(),
                    peak_used_bytes: peak.used_memory_bytes.unwrap_or_default(),
                    peak_at_s: match (peak.timestamp, start) {
                        (Some(t), Some(s)) => Some(Seconds::from_ms((t - s).num_milliseconds())),
                        _ => None,
                    },
                })
            })
            .collect()
    }
}

impl GpuMemory {
    /// Per-GPU timelines from a parsed nvidia-smi CSV, timed from `start`.
    pub fn from_nvsmi(
        source: &str,
        t: &crate::ingest::nvsmi::NvSmiTimeline,
        start: Option<NaiveDateTime>,
    ) -> Vec<GpuMemory> {
        let since = |ts: Option<NaiveDateTime>| -> Option<f64> {
            Some((ts? - start?).num_milliseconds() as f64 / 1000.0)
        };
        let mut out = Vec::new();
        for (&gpu, samples) in &t.gpus {
            let used: Vec<(Option<NaiveDateTime>, u64)> = samples
                .iter()
                .filter_map(|s| Some((s.timestamp, s.memory_used_bytes?.get())))
                .collect();
            // The first sample at the peak: when the memory got there.
            let Some(&(peak_ts, peak)) = used.iter().fold(
                None::<&(Option<NaiveDateTime>, u64)>,
                |best, x| match best {
                    Some(b) if b.1 >= x.1 => Some(b),
                    _ => Some(x),
                },
            ) else {
                continue;
            };
            let step = used.len().div_ceil(GPU_SERIES_POINTS).max(1);
            // Each kept point is the largest of its bucket, so short peaks survive.
            let series = used
                .chunks(step)
                .filter_map(|c| {
                    let (ts, b) = c.iter().max_by_key(|(_, b)| *b)?;
                    Some((since(*ts)?, *b))
                })
                .collect();
            out.push(GpuMemory {
                source: source.to_string(),
                gpu,
                samples: used.len(),
                total_bytes: samples.iter().find_map(|s| s.memory_total_bytes),
                peak_used_bytes: Bytes(peak),
                peak_at_s: since(peak_ts).map(Seconds),
                series,
            });
        }
        out
    }
}
