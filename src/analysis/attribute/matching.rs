//! Which rank a snapshot belongs to: matched on what the files say (OOM GPU, device index), the file name's number being one piece of evidence among them.

use super::*;

/// A rank's snapshot, read and ready.
pub struct RankSnapshot {
    /// The rank it belongs to.
    pub rank: Rank,
    /// The snapshot's file.
    pub path: String,
    /// The snapshot, read.
    pub snapshot: Snapshot,
    /// How the snapshot was matched to its rank.
    pub matched_by: RankMatch,
}

/// The evidence a snapshot was matched to its rank on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RankMatch {
    /// `snapshot_rank{N}` and the N-th rank; the snapshot's device is N too, or it names
    /// the GPU of the rank's OOM message (`gpu_confirms`).
    FileName {
        /// The device the snapshot is on, when it is on one.
        device: Option<usize>,
        /// That device is the file name's N.
        device_agrees: bool,
        /// The snapshot's OOM names the GPU the rank's OOM message names.
        gpu_confirms: bool,
    },
    /// The snapshot has an OOM on device D and exactly one rank's OOM message names
    /// GPU D; `file_said` is the rank the file name would have given, when different.
    OomGpu {
        /// The device of the snapshot's OOM.
        device: usize,
        /// The rank the file name would have given, when different.
        file_said: Option<Rank>,
    },
    /// No rank in the file name: the D-th rank for device D (one GPU per rank from GPU 0).
    Device {
        /// The snapshot's device.
        device: usize,
    },
}

/// The one device a snapshot's segments and traces are on.
pub fn snapshot_device(s: &Snapshot) -> Option<usize> {
    let mut devices: std::collections::BTreeSet<usize> = s
        .segments
        .iter()
        .filter_map(|g| usize::try_from(g.device).ok())
        .collect();
    devices.extend(
        s.device_traces
            .iter()
            .enumerate()
            .filter(|(_, t)| !t.is_empty())
            .map(|(d, _)| d),
    );
    match (devices.len(), devices.first()) {
        (1, Some(&d)) => Some(d),
        _ => None,
    }
}

/// Matches one snapshot to a rank from what the files say: the GPU an OOM message names
/// against the snapshot's device, then the rank number in the file name (the N-th rank,
/// global rank order being DP, PP, TP major to minor as `Rank` sorts), then the device
/// index alone.
pub fn match_rank(
    run: &Run,
    hint: Option<u32>,
    s: &Snapshot,
) -> Result<(Rank, RankMatch), RankMatchError> {
    use crate::base::event::FieldValue;
    let device = snapshot_device(s);
    let by_name = hint.and_then(|n| rank_for_hint(run, n));
    let has_oom = s
        .trace_entries()
        .any(|e| e.action == crate::snapshot::Action::Oom);
    let oom_gpu = |rr: &&RankRun| {
        rr.failure.as_ref().and_then(|f| match f.fields.get("gpu") {
            Some(FieldValue::Int(g)) => usize::try_from(*g).ok(),
            _ => None,
        })
    };
    let by_gpu: Vec<&RankRun> = match (has_oom, device) {
        (true, Some(d)) => run
            .ranks
            .iter()
            .filter(|rr| oom_gpu(rr) == Some(d))
            .collect(),
        _ => Vec::new(),
    };
    if let ([rr], Some(d)) = (by_gpu.as_slice(), device) {
        if by_name.as_ref() != Some(&rr.rank) {
            return Ok((
                rr.rank.clone(),
                RankMatch::OomGpu {
                    device: d,
                    file_said: by_name,
                },
            ));
        }
    }
    if let Some(rank) = by_name {
        let device_agrees = match (device, hint) {
            (Some(d), Some(n)) => d as u64 == u64::from(n),
            _ => false,
        };
        let gpu_confirms = by_gpu.len() == 1;
        return Ok((
            rank,
            RankMatch::FileName {
                device,
                device_agrees,
                gpu_confirms,
            },
        ));
    }
    if let Some(rank) = hint {
        return Err(RankMatchError::NotInRun {
            rank,
            ranks: run.ranks.len(),
        });
    }
    match device.and_then(|d| run.ranks.get(d).map(|rr| (d, rr))) {
        Some((d, rr)) => Ok((rr.rank.clone(), RankMatch::Device { device: d })),
        None => Err(RankMatchError::NoEvidence),
    }
}

/// Why a snapshot could not be matched to a rank.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[expect(
    missing_docs,
    reason = "the #[error] texts say what each variant and field is"
)]
pub enum RankMatchError {
    /// The file name's rank number is past the run's ranks.
    #[error("rank {rank} is not among the run's {ranks} ranks")]
    NotInRun { rank: u32, ranks: usize },
    #[error("no rank number in the file name, and no single device to match")]
    NoEvidence,
}

/// The N-th rank in rank order, for `snapshot_rank{N}` (global rank order is DP, PP, TP
/// major to minor, which is how `Rank` sorts).
pub(crate) fn rank_for_hint(run: &Run, n: u32) -> Option<Rank> {
    run.ranks.get(n as usize).map(|r| r.rank.clone())
}

/// The evidence one snapshot was matched to its rank on, as the rank-match note tells it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum MatchEvidence {
    /// The file name, and the GPU its OOM message names.
    FileNameAndOomGpu,
    /// The file name, all snapshots being on one device (which says nothing of rank).
    FileNameSharedDevice,
    /// The file name, and the device index agrees.
    FileNameDeviceAgrees,
    /// The file name only: the device does not follow rank order.
    FileNameOnly,
    /// The GPU its OOM message names; `file_said` when the file name gives another rank.
    OomGpu {
        device: usize,
        file_said: Option<Rank>,
    },
    /// No rank in the file name: the D-th rank for device D.
    Device {
        /// The snapshot's device.
        device: usize,
    },
}

/// How a run's snapshots were matched to ranks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RankMatchNote {
    /// Each snapshot's rank and evidence, in the snapshots' order.
    pub(crate) snapshots: Vec<(Rank, MatchEvidence)>,
    /// Several snapshots, all on this one device: it cannot tell ranks apart.
    pub(crate) shared_device: Option<usize>,
}

/// How a run's snapshots were matched to ranks (`None` without snapshots).
pub(crate) fn rank_match_note(snaps: &[RankSnapshot]) -> Option<RankMatchNote> {
    if snaps.is_empty() {
        return None;
    }
    // Several snapshots on one device (ranks sharing a GPU): the device says nothing of
    // the rank, and rank 0 on device 0 agrees by coincidence.
    let shared = {
        let devs: std::collections::BTreeSet<Option<usize>> =
            snaps.iter().map(|s| snapshot_device(&s.snapshot)).collect();
        match (snaps.len() > 1, devs.len(), devs.first()) {
            (true, 1, Some(Some(d))) => Some(*d),
            _ => None,
        }
    };
    let snapshots = snaps
        .iter()
        .map(|s| {
            let how = match &s.matched_by {
                RankMatch::FileName {
                    gpu_confirms: true, ..
                } => MatchEvidence::FileNameAndOomGpu,
                RankMatch::FileName { .. } if shared.is_some() => {
                    MatchEvidence::FileNameSharedDevice
                }
                RankMatch::FileName {
                    device_agrees: true,
                    ..
                } => MatchEvidence::FileNameDeviceAgrees,
                RankMatch::FileName { .. } => MatchEvidence::FileNameOnly,
                RankMatch::OomGpu { device, file_said } => MatchEvidence::OomGpu {
                    device: *device,
                    file_said: file_said.clone(),
                },
                RankMatch::Device { device } => MatchEvidence::Device { device: *device },
            };
            (s.rank.clone(), how)
        })
        .collect();
    Some(RankMatchNote {
        snapshots,
        shared_device: shared,
    })
}
