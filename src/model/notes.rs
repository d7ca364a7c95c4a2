//! What reading a run noted: the files, lines and events it could not read as a whole,
//! and how it filled what the logs did not say. Facts only; `render::text::notes` words
//! them (the summary, `diff`'s run notes, the JSON `notes` strings and the load errors
//! all take their sentences from there).
//!
//! Paths are as the reader shows them (`SourceFile::display`, `base::text::shown_path`:
//! sanitised when they were taken); error texts are the operating system's or the
//! decoder's, sanitised where they are worded.

use chrono::NaiveDateTime;

use crate::base::event::Rank;
use crate::ingest::follow::FollowNote;
use crate::ingest::source::ListingNote;

/// One note on how a run was read.
#[derive(Clone, Debug, PartialEq)]
pub enum ReadNote {
    /// A directory entry not read while the run's files were listed.
    Listing(ListingNote),
    /// A file of a run directory that could not be opened or is binary: skipped, the
    /// other files still make the run. `error` is the load error's own message.
    Skipped { error: String },
    /// Reading a file stopped on an error (or a decompression limit) at `offset` bytes of
    /// its text; what came before is read. For a compressed file, `compressed_read` is
    /// how many of its own bytes were taken.
    ReadStopped {
        path: String,
        offset: u64,
        compressed_read: Option<u64>,
        reason: String,
    },
    /// A file cut while it was read (copy-truncate rotation): `listed` bytes when listed,
    /// `now` after, `read` read.
    Shrank {
        path: String,
        listed: u64,
        now: u64,
        read: u64,
    },
    /// More distinct rank prefixes than the scan keeps (`limit`): those first seen from
    /// `line` on are not counted.
    PrefixesNotKept {
        path: String,
        limit: usize,
        line: u64,
    },
    /// Event lines whose stamp is no date or time: `lines` of them, the first at `line`
    /// (`text`, what did not read); those events have no time.
    BadStamps {
        path: String,
        lines: u64,
        line: u64,
        text: String,
    },
    /// Event lines naming a rank number past `limit`: not read.
    BadRanks {
        path: String,
        lines: u64,
        line: u64,
        text: String,
        limit: u32,
    },
    /// A compressed file that expanded more than real logs do.
    Expanded {
        path: String,
        compressed: u64,
        decompressed: u64,
    },
    /// Events recognised but not kept past the event budget, over the run's files:
    /// the first `files` named, `more_files` others, how many of each kind.
    EventsDropped {
        files: Vec<String>,
        more_files: usize,
        by_kind: Vec<(String, u64)>,
        budget: EventBudgetLimits,
    },
    /// An nvidia-smi CSV longer than `limit` bytes: only its start is read.
    CsvCut { path: String, limit: u64 },
    /// Lines of an nvidia-smi CSV not understood as one.
    CsvNotUnderstood { path: String, lines: usize },
    /// An nvidia-smi CSV that could not be read.
    CsvUnreadable { path: String, error: String },
    /// A file whose printed stamps go backwards by more than a minute, `times` times.
    TimeGoesBack { path: String, times: usize },
    /// Event lines stamped outside `years` while the run's other stamps are inside: their
    /// time is taken off. `count` of them, the first at `line` stamped `stamp`.
    ImplausibleStamps {
        path: String,
        count: usize,
        years: std::ops::RangeInclusive<i32>,
        line: u64,
        stamp: NaiveDateTime,
    },
    /// Stamps printed without a year or a date were dated.
    DatesInferred { from: DatesFrom },
    /// A rank whose NCCL lines name two or more hosts (`hosts`: host and pid).
    RankOnTwoHosts {
        node: String,
        rank: Rank,
        hosts: Vec<(String, u32)>,
    },
    /// Node directories whose NCCL lines all name the one host `host`.
    NodesShareHost { host: String, nodes: Vec<String> },
    /// A node with no barrier exit in common with the reference node: its clock is
    /// taken as is.
    NodeNotAligned { node: String, reference: String },
    /// Nothing in the run is a start-up event: `lines` lines read, the grammar families
    /// their prefixes look like.
    NoStartup { lines: u64, families: Vec<String> },
    /// `watch` got no file events from the platform (`why`) and polls the files.
    NoFileEvents { why: String },
    /// What happened to a file `watch` followed.
    Follow(FollowNote),
}

/// The limits of the event budget a run was read with (`ingest::scan::budget`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventBudgetLimits {
    pub events_per_run: u64,
    pub text_bytes_per_run: u64,
    pub same_event_per_source: u32,
}

impl Default for EventBudgetLimits {
    fn default() -> Self {
        use crate::ingest::scan::budget;
        EventBudgetLimits {
            events_per_run: budget::EVENTS_PER_RUN,
            text_bytes_per_run: budget::EVENT_TEXT_PER_RUN,
            same_event_per_source: budget::SAME_EVENT_PER_SOURCE,
        }
    }
}

/// Where the dates of stamps that printed none were taken from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DatesFrom {
    /// The fully dated lines of the run.
    RunLines,
    /// The files' modification dates (no line of the run printed a date).
    FileDates,
}
