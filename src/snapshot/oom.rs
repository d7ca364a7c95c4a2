//! The allocator as it stood at an OOM: what bound the allocation (the device or the
//! process's cap), and whether the memory PyTorch held but had not handed out was there
//! yet unusable — split in holes smaller than the request, in segments that live blocks
//! keep from being released (fragmentation).
//!
//! A snapshot is dumped after the OOM, usually after the failing code has freed what it
//! held (the exception unwinds), so its segments are not the state the allocator saw.
//! That state is rebuilt by undoing, newest first, the trace entries recorded after the
//! `oom` entry; when an entry cannot be undone (expandable segments map and unmap pages,
//! a trace that does not match the segments) the dump state is used and said so.

use std::collections::{BTreeMap, HashMap};

use super::site::{site_at_line, SiteRule};
use super::types::{Action, BlockState, Snapshot, StackId};
use crate::base::units::Bytes;

/// PyTorch's caching-allocator constants (c10/cuda/CUDACachingAllocator.cpp).
const MIN_BLOCK: u64 = 512;
const SMALL_SIZE: u64 = 1 << 20;
const SMALL_BUFFER: u64 = 2 << 20;
const LARGE_BUFFER: u64 = 20 << 20;
const MIN_LARGE_ALLOC: u64 = 10 << 20;
const ROUND_LARGE: u64 = 2 << 20;

/// The bytes of the segment `cudaMalloc` is asked for when no cached block fits a
/// request of `size` (already rounded to 512 B): PyTorch's `get_allocation_size`.
pub(crate) fn segment_size_for(size: u64) -> u64 {
    if size <= SMALL_SIZE {
        SMALL_BUFFER
    } else if size < MIN_LARGE_ALLOC {
        LARGE_BUFFER
    } else {
        size.div_ceil(ROUND_LARGE).saturating_mul(ROUND_LARGE)
    }
}

#[derive(Debug, Clone)]
struct Blk {
    address: u64,
    size: u64,
    allocated: bool,
    stack: StackId,
}

#[derive(Debug, Clone)]
struct Seg {
    address: u64,
    total: u64,
    private: bool,
    small: bool,
    blocks: Vec<Blk>,
}

impl Seg {
    fn allocated(&self) -> u64 {
        self.blocks
            .iter()
            .filter(|b| b.allocated)
            .fold(0u64, |a, b| a.saturating_add(b.size))
    }
    fn holes(&self) -> impl Iterator<Item = u64> + '_ {
        self.blocks.iter().filter(|b| !b.allocated).map(|b| b.size)
    }
    fn contains(&self, addr: u64) -> bool {
        addr >= self.address && addr - self.address < self.total
    }
}

/// What the allocation ran into.
#[derive(Debug, Clone, PartialEq)]
pub enum Limit {
    /// The device had less free memory than the segment asked for.
    Device {
        /// The device's free bytes.
        device_free: Bytes,
        /// The segment asked for (bytes).
        segment: Bytes,
    },
    /// The device had room, the process did not: its cap
    /// (`torch.cuda.set_per_process_memory_fraction`) lies in
    /// `[cap_at_least, cap_below)` — at least what the process held, less than that plus
    /// the segment it asked for.
    ProcessCap {
        /// The device's free bytes.
        device_free: Bytes,
        /// The segment asked for (bytes).
        segment: Bytes,
        /// The cap is at least this (bytes).
        cap_at_least: Bytes,
        /// The cap is less than this (bytes).
        cap_below: Bytes,
    },
    /// The `oom` entry carries no device free figure.
    Unknown,
}

/// Segments of one shape inside the fragmentation.
#[derive(Debug, Clone, PartialEq)]
pub struct SegmentShape {
    /// How many segments of this shape.
    pub count: u64,
    /// Each segment's size in bytes.
    pub size: Bytes,
    /// Bytes allocated in each.
    pub allocated: Bytes,
    /// Free blocks in each.
    pub free_blocks: u64,
    /// The largest free block in any of them.
    pub largest_free: Bytes,
}

/// A site whose live blocks keep fragmented segments from being released.
#[derive(Debug, Clone, PartialEq)]
pub struct Pin {
    /// `warm_prefill/<lambda> (launch.py:76)`
    pub site: String,
    /// Segments it pins.
    pub segments: u64,
    /// Its live blocks in them.
    pub blocks: u64,
    /// Bytes of those blocks.
    pub bytes: Bytes,
}

/// Memory held but unusable for the failed request.
#[derive(Debug, Clone, PartialEq)]
pub struct Fragmentation {
    /// Free bytes in segments (outside private pools) that hold live blocks and whose
    /// every hole is smaller than the request.
    pub free: Bytes,
    /// Such segments.
    pub segments: u64,
    /// Free blocks (holes) in them.
    pub holes: u64,
    /// The largest hole anywhere (all pools): smaller than the request, or this would not
    /// be fragmentation.
    pub largest_hole: Bytes,
    /// Those segments by shape, most numerous first.
    pub shapes: Vec<SegmentShape>,
    /// Sites owning the live blocks in those segments, most segments pinned first.
    pub pinned_by: Vec<Pin>,
}

/// Free memory inside segments, at the OOM or at the dump.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FreeSpace {
    /// Bytes the segments reserve.
    pub reserved: Bytes,
    pub(crate) allocated: Bytes,
    /// Reserved minus allocated outside private pools: what PyTorch's OOM message calls
    /// "reserved by PyTorch but unallocated".
    pub unallocated: Bytes,
    /// Reserved minus allocated inside private (CUDA graph) pools.
    pub private_unallocated: Bytes,
    /// The largest free block in any segment.
    pub largest_free: Bytes,
    /// Segments with live blocks and free space.
    pub(crate) segments_with_holes: u64,
    /// Segments with no live block (at an OOM: ones PyTorch could not release, such as a
    /// CUDA graph's pool during capture).
    pub wholly_free_segments: u64,
    pub(crate) wholly_free_bytes: Bytes,
}

/// A snapshot's OOM against the allocator's state at that moment: what was asked, what was
/// free, what limited it.
#[derive(Debug, Clone, PartialEq)]
pub struct OomAnalysis {
    /// The device of the OOM.
    pub device: usize,
    pub(crate) time_us: i64,
    /// The block asked for (rounded to 512 B, as the trace records it).
    pub requested: Bytes,
    /// The segment `cudaMalloc` was asked for when no cached block fitted (this is the
    /// "Tried to allocate" figure of PyTorch's message).
    pub segment: Bytes,
    /// `capture_graphs (worker_main.py:192)`
    pub site: String,
    pub(crate) device_free: Option<Bytes>,
    /// The segments were rebuilt as they stood at the OOM; false: as dumped.
    pub at_oom: bool,
    /// Why the dump state was used, when it was.
    pub state_note: Option<String>,
    /// Free memory inside the segments.
    pub space: FreeSpace,
    /// What the allocation ran into.
    pub limit: Limit,
    /// Memory held but unusable for the request, when there is any.
    pub fragmentation: Option<Fragmentation>,
    /// `expandable_segments` of the snapshot's `allocator_settings`, when recorded.
    pub expandable_segments: Option<bool>,
    /// `oom` entries after this one (a caller that caught the error and tried again).
    pub(crate) later_ooms: u64,
}

fn segments_at_dump(s: &Snapshot, device: Option<usize>) -> Vec<Seg> {
    s.segments
        .iter()
        .filter(|g| device.is_none_or(|d| g.device == d as i64))
        .map(|g| Seg {
            address: g.address,
            total: g.total_size,
            private: g.segment_pool_id != (0, 0),
            small: g.segment_type.as_ref() == "small",
            blocks: g
                .blocks
                .iter()
                .map(|b| Blk {
                    address: b.address,
                    size: b.size,
                    // A block whose free waits for a stream event still holds its bytes.
                    allocated: matches!(
                        b.state,
                        BlockState::ActiveAllocated | BlockState::ActivePendingFree
                    ),
                    stack: b.stack,
                })
                .collect(),
        })
        .collect()
}

/// The segment holding `addr`; `segs` is sorted by address (segments do not overlap).
fn seg_of(segs: &mut [Seg], addr: u64) -> Result<&mut Seg, String> {
    let i = segs.partition_point(|g| g.address <= addr);
    i.checked_sub(1)
        .and_then(|i| segs.get_mut(i))
        .filter(|g| g.contains(addr))
        .ok_or_else(|| format!("no segment holds address {addr:#x}"))
}

/// Undoes a free: the bytes at `addr` were allocated at the OOM.
fn unfree(segs: &mut [Seg], addr: u64, size: u64, stack: StackId) -> Result<(), String> {
    let seg = seg_of(segs, addr)?;
    let small = seg.small;
    let k = seg
        .blocks
        .iter()
        .position(|b| !b.allocated && addr >= b.address && addr - b.address < b.size)
        .ok_or_else(|| format!("no free block at {addr:#x} to undo a free into"))?;
    let b = seg.blocks[k].clone();
    let size = size.max(1).div_ceil(MIN_BLOCK).saturating_mul(MIN_BLOCK);
    let end = b.address.saturating_add(b.size);
    if addr.checked_add(size).is_none_or(|e| e > end) {
        return Err(format!(
            "a free of {size} B at {addr:#x} overruns its block"
        ));
    }
    // PyTorch splits a block only when the rest is worth keeping: any 512 B in the small
    // pool, more than 1 MiB in the large one.
    let rest = end - addr - size;
    let keep_rest = if small {
        rest >= MIN_BLOCK
    } else {
        rest > SMALL_SIZE
    };
    let mut new = Vec::with_capacity(3);
    if addr > b.address {
        new.push(Blk {
            address: b.address,
            size: addr - b.address,
            allocated: false,
            stack: StackId(0),
        });
    }
    let own = if keep_rest { size } else { end - addr };
    new.push(Blk {
        address: addr,
        size: own,
        allocated: true,
        stack,
    });
    if keep_rest {
        new.push(Blk {
            address: addr + size,
            size: rest,
            allocated: false,
            stack: StackId(0),
        });
    }
    seg.blocks.splice(k..=k, new);
    Ok(())
}

/// Undoes an allocation: the block at `addr` was free at the OOM.
fn unalloc(segs: &mut [Seg], addr: u64) -> Result<(), String> {
    let seg = seg_of(segs, addr)?;
    let k = seg
        .blocks
        .iter()
        .position(|b| b.allocated && b.address == addr)
        .ok_or_else(|| format!("no live block at {addr:#x} to undo an allocation of"))?;
    seg.blocks[k].allocated = false;
    seg.blocks[k].stack = StackId(0);
    // Merge with free neighbours, as the allocator does on free.
    let mut merged: Vec<Blk> = Vec::with_capacity(seg.blocks.len());
    for b in seg.blocks.drain(..) {
        match merged.last_mut() {
            Some(prev) if !prev.allocated && !b.allocated => {
                prev.size = prev.size.saturating_add(b.size)
            }
            _ => merged.push(b),
        }
    }
    seg.blocks = merged;
    Ok(())
}

/// The device's segments at trace entry `oom_index`, rebuilt from the dump.
fn segments_at(s: &Snapshot, device: usize, oom_index: usize) -> Result<Vec<Seg>, String> {
    let trace = s
        .device_traces
        .get(device)
        .map_or(&[][..], |t| t.as_slice());
    let mut segs = segments_at_dump(s, Some(device));
    segs.sort_by_key(|g| g.address);
    // Who allocated each address last before the OOM: a free's own stack is the freeing
    // code, not the owner.
    let mut owner: HashMap<u64, StackId> = HashMap::new();
    for e in trace.iter().take(oom_index) {
        if e.action == Action::Alloc {
            owner.insert(e.addr, e.stack);
        }
    }
    for e in trace.iter().skip(oom_index + 1).rev() {
        match &e.action {
            Action::FreeCompleted => {
                let stack = owner.get(&e.addr).copied().unwrap_or(e.stack);
                unfree(&mut segs, e.addr, e.size, stack)?
            }
            Action::Alloc => unalloc(&mut segs, e.addr)?,
            Action::SegmentAlloc => {
                let n = segs.len();
                segs.retain(|g| g.address != e.addr);
                if segs.len() == n {
                    return Err(format!("no segment at {:#x} to undo", e.addr));
                }
            }
            Action::SegmentFree => segs.insert(
                segs.partition_point(|g| g.address < e.addr),
                Seg {
                    address: e.addr,
                    total: e.size,
                    // Only the default pool returns segments outside a graph's teardown.
                    private: false,
                    small: e.size == SMALL_BUFFER,
                    blocks: vec![Blk {
                        address: e.addr,
                        size: e.size,
                        allocated: false,
                        stack: StackId(0),
                    }],
                },
            ),
            Action::SegmentMap | Action::SegmentUnmap => {
                return Err("expandable segments map pages after the OOM".into())
            }
            _ => {}
        }
    }
    Ok(segs)
}

fn free_space(segs: &[Seg]) -> FreeSpace {
    let mut f = FreeSpace::default();
    for g in segs {
        let alloc = g.allocated();
        f.reserved = f.reserved.saturating_add(Bytes(g.total));
        f.allocated = f.allocated.saturating_add(Bytes(alloc));
        let unalloc = g.total.saturating_sub(alloc);
        if g.private {
            f.private_unallocated = f.private_unallocated.saturating_add(Bytes(unalloc));
        } else {
            f.unallocated = f.unallocated.saturating_add(Bytes(unalloc));
        }
        f.largest_free = f.largest_free.max(Bytes(g.holes().max().unwrap_or(0)));
        if alloc == 0 {
            f.wholly_free_segments += 1;
            f.wholly_free_bytes = f.wholly_free_bytes.saturating_add(Bytes(g.total));
        } else if unalloc > 0 {
            f.segments_with_holes += 1;
        }
    }
    f
}

/// Free memory inside the snapshot's segments as dumped.
pub fn free_space_at_dump(s: &Snapshot) -> FreeSpace {
    free_space(&segments_at_dump(s, None))
}

fn fragmentation(s: &Snapshot, rule: &SiteRule, segs: &[Seg], requested: u64) -> Fragmentation {
    let pinned: Vec<&Seg> = segs
        .iter()
        .filter(|g| !g.private && g.allocated() > 0 && g.holes().next().is_some())
        .filter(|g| g.holes().max().unwrap_or(0) < requested)
        .collect();
    let mut shapes: BTreeMap<(u64, u64, u64, u64), u64> = BTreeMap::new();
    let mut pins: HashMap<String, (std::collections::HashSet<u64>, u64, u64)> = HashMap::new();
    let mut site_cache: HashMap<StackId, String> = HashMap::new();
    let (mut free, mut holes) = (0, 0);
    for g in &pinned {
        let hs: Vec<u64> = g.holes().collect();
        free = hs.iter().fold(free, |a: u64, &h| a.saturating_add(h));
        holes += hs.len() as u64;
        let key = (
            g.total,
            g.allocated(),
            hs.len() as u64,
            hs.iter().copied().max().unwrap_or(0),
        );
        *shapes.entry(key).or_default() += 1;
        for b in g.blocks.iter().filter(|b| b.allocated) {
            let site = site_cache
                .entry(b.stack)
                .or_insert_with(|| site_at_line(s, rule, b.stack))
                .clone();
            let p = pins.entry(site).or_default();
            p.0.insert(g.address);
            p.1 += 1;
            p.2 = p.2.saturating_add(b.size);
        }
    }
    let mut shapes: Vec<SegmentShape> = shapes
        .into_iter()
        .map(
            |((size, allocated, free_blocks, largest_free), count)| SegmentShape {
                count,
                size: Bytes(size),
                allocated: Bytes(allocated),
                free_blocks,
                largest_free: Bytes(largest_free),
            },
        )
        .collect();
    shapes.sort_by(|a, b| {
        let total = |s: &SegmentShape| s.size.get().saturating_mul(s.count);
        (b.count, total(b)).cmp(&(a.count, total(a)))
    });
    let mut pinned_by: Vec<Pin> = pins
        .into_iter()
        .map(|(site, (segs, blocks, bytes))| Pin {
            site,
            segments: segs.len() as u64,
            blocks,
            bytes: Bytes(bytes),
        })
        .collect();
    pinned_by.sort_by(|a, b| {
        (b.segments, b.bytes)
            .cmp(&(a.segments, a.bytes))
            .then_with(|| a.site.cmp(&b.site))
    });
    Fragmentation {
        free: Bytes(free),
        segments: pinned.len() as u64,
        holes,
        largest_hole: Bytes(segs.iter().flat_map(|g| g.holes()).max().unwrap_or(0)),
        shapes,
        pinned_by,
    }
}

/// `expandable_segments` from the snapshot's `allocator_settings`, when recorded.
pub fn expandable_segments(s: &Snapshot) -> Option<bool> {
    s.allocator_settings
        .get("expandable_segments")
        .and_then(|v| v.as_bool())
}

/// The first OOM of each device's trace, analysed against the allocator's state then.
pub fn analyse(s: &Snapshot, rule: &SiteRule) -> Vec<OomAnalysis> {
    let mut out = Vec::new();
    for (device, trace) in s.device_traces.iter().enumerate() {
        let mut ooms = trace
            .iter()
            .enumerate()
            .filter(|(_, e)| e.action == Action::Oom);
        let Some((index, e)) = ooms.next() else {
            continue;
        };
        let later_ooms = ooms.count() as u64;
        let (segs, at_oom, state_note) = match segments_at(s, device, index) {
            Ok(v) => (v, true, None),
            Err(why) => (
                segments_at_dump(s, Some(device)),
                false,
                Some(format!("segments as dumped, not at the OOM: {why}")),
            ),
        };
        let requested = e.size.div_ceil(MIN_BLOCK).saturating_mul(MIN_BLOCK);
        let segment = segment_size_for(requested);
        let space = free_space(&segs);
        let limit = match s.device_free(device, index) {
            Some(free) if free < segment => Limit::Device {
                device_free: Bytes(free),
                segment: Bytes(segment),
            },
            // PyTorch releases what cached segments it can and retries before it records
            // the `oom` entry (the releases are `segment_free` entries before it), so the
            // reserved bytes at the entry are what the last try added the segment to.
            Some(free) => Limit::ProcessCap {
                device_free: Bytes(free),
                segment: Bytes(segment),
                cap_at_least: space.reserved,
                cap_below: space.reserved.saturating_add(Bytes(segment)),
            },
            None => Limit::Unknown,
        };
        let frag = fragmentation(s, rule, &segs, requested);
        // Fragmentation is the story when the memory held would have covered the request
        // yet no hole could take it.
        let fragmentation = (frag.largest_hole < Bytes(requested)
            && frag.free >= Bytes(requested)
            && frag.segments > 0)
            .then_some(frag);
        out.push(OomAnalysis {
            device,
            time_us: e.time_us,
            requested: Bytes(requested),
            segment: Bytes(segment),
            site: site_at_line(s, rule, e.stack),
            device_free: s.device_free(device, index).map(Bytes),
            at_oom,
            state_note,
            space,
            limit,
            fragmentation,
            expandable_segments: expandable_segments(s),
            later_ooms,
        });
    }
    out
}

/// Every site, as [`site_at_line`] names it, where the snapshot allocated: trace
/// allocations and live blocks (`oom` entries do not count). One pass per snapshot, so a
/// run's ranks can be asked about each other's sites without rescanning traces.
pub fn allocation_sites(s: &Snapshot, rule: &SiteRule) -> std::collections::HashSet<String> {
    let stacks: std::collections::HashSet<StackId> = s
        .trace_entries()
        .filter(|e| matches!(e.action, Action::Alloc | Action::SegmentAlloc))
        .map(|e| e.stack)
        .chain(
            s.segments
                .iter()
                .flat_map(|g| &g.blocks)
                .filter(|b| b.state == BlockState::ActiveAllocated)
                .map(|b| b.stack),
        )
        .collect();
    stacks
        .into_iter()
        .map(|st| site_at_line(s, rule, st))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_sizes_follow_pytorch() {
        // get_allocation_size: ≤1 MiB → 2 MiB, <10 MiB → 20 MiB, else 2 MiB multiples.
        assert_eq!(segment_size_for(512), 2 << 20);
        assert_eq!(segment_size_for(3 << 20), 20 << 20);
        assert_eq!(segment_size_for(19_358_720), 20 << 20);
        assert_eq!(segment_size_for(21 << 20), 22 << 20);
    }
}
