//! The hosts a run was collected from, and how each one's clock sits against the
//! reference node's (`analysis::clock` estimates it, `load` applies it).

use crate::base::event::Rank;
use crate::base::units::Seconds;

/// One host of a multi-node run: the files it wrote and the ranks they name.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// The directory name (`node1`, a hostname), or the path when two share a name.
    pub name: String,
    /// Indices into `Run::sources`.
    pub sources: Vec<usize>,
    /// The ranks whose lines are in its files.
    pub ranks: Vec<Rank>,
    /// `node_rank` from the server arguments, when this node's log printed them.
    pub node_rank: Option<u32>,
    /// `nnodes` from the server arguments, when printed.
    pub nnodes: Option<u32>,
    /// The hosts its NCCL lines name (`host:pid:tid` prefixes), sorted; empty when it
    /// printed none.
    pub hosts: Vec<String>,
    /// The node whose clock the others are aligned to.
    pub reference: bool,
    /// This node's clock against the reference node's; `None` for the reference itself
    /// and for a node with no barrier exit in common with it.
    pub offset: Option<ClockOffset>,
}

/// How far a node's clock is from the reference node's: node clock minus reference
/// clock lies in the open interval (`lo_ms`, `hi_ms`). Every stamp of the node is moved by
/// minus the interval's middle when `applied`, so the remaining error is at most half
/// the interval's width.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClockOffset {
    /// Lower bound of node clock minus reference clock, in ms (exclusive).
    pub lo_ms: i64,
    /// Upper bound of node clock minus reference clock, in ms (exclusive).
    pub hi_ms: i64,
    /// Barrier exits whose intervals were intersected.
    pub barrier_events: usize,
    /// Barrier exits whose interval disagreed with the larger agreeing set and were left
    /// out (a rank that did not leave with the others, a line marked barrier exit that is
    /// not one on this server).
    pub rejected_events: usize,
    /// The offset was applied to this node's stamps (false under `--no-clock-align`).
    pub applied: bool,
}

impl ClockOffset {
    /// The estimate: the middle of the interval.
    pub(crate) fn mid_ms(&self) -> i64 {
        (self.lo_ms + self.hi_ms).div_euclid(2)
    }
    /// The most the estimate can be off by.
    pub(crate) fn half_width_ms(&self) -> i64 {
        (self.hi_ms - self.lo_ms + 1) / 2
    }
    /// The interval's width in ms: how far apart the bounds are.
    pub fn width_ms(&self) -> i64 {
        self.hi_ms - self.lo_ms
    }
    // The bounds are whole milliseconds (stamp differences, compared and halved exactly);
    // what leaves this module for render is a time span.
    /// [`Self::mid_ms`] as a time span.
    pub(crate) fn mid(&self) -> Seconds {
        Seconds::from_ms(self.mid_ms())
    }
    /// [`Self::half_width_ms`] as a time span.
    pub(crate) fn half_width(&self) -> Seconds {
        Seconds::from_ms(self.half_width_ms())
    }
    /// The lower bound as a time span.
    pub(crate) fn lo(&self) -> Seconds {
        Seconds::from_ms(self.lo_ms)
    }
    /// The upper bound as a time span.
    pub(crate) fn hi(&self) -> Seconds {
        Seconds::from_ms(self.hi_ms)
    }
}

/// How a multi-node run's clocks were put on one: the reference node, the milliseconds
/// added to each node's stamps (0 where nothing was applied), and the nodes that had no
/// barrier exit in common with the reference (their clocks are taken as they are).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Alignment {
    pub(crate) reference: usize,
    pub(crate) shift_ms: Vec<i64>,
    pub(crate) unaligned: Vec<usize>,
}
