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
use crate::ingest::source::{ListingNote, StopReason};

/// One note on how a run was read.
#[derive(Clone, Debug, PartialEq)]
pub enum ReadNote {
    /// A directory entry not read while the run's files were listed.
    Listing(ListingNote),
    /// A file of a run directory that could not be opened or is binary: skipped, the
    /// other files still make the run. `error` is the load error's own message.
    Skipped {
        /// The error, in its own words.
        error: String,
    },
    /// Reading a file stopped on an error (or a decompression limit) at `offset` bytes of
    /// its text; what came before is read. For a compressed file, `compressed_read` is
    /// how many of its own bytes were taken.
    ReadStopped {
        /// The file, as shown.
        path: String,
        /// Bytes of text read before the stop.
        offset: u64,
        /// For a compressed file, how many of its own bytes were taken.
        compressed_read: Option<u64>,
        /// Why it stopped: the error's own words, or the decompression limit.
        reason: StopReason,
    },
    /// A file cut while it was read (copy-truncate rotation): `listed` bytes when listed,
    /// `now` after, `read` read.
    Shrank {
        /// The file, as shown.
        path: String,
        /// Its size when it was listed.
        listed: u64,
        /// Its size after it was read.
        now: u64,
        /// The bytes read.
        read: u64,
    },
    /// More distinct rank prefixes than the scan keeps (`limit`): those first seen from
    /// `line` on are not counted.
    PrefixesNotKept {
        /// The file, as shown.
        path: String,
        /// The limit that applied.
        limit: usize,
        /// The first such line.
        line: u64,
    },
    /// Event lines whose stamp is no date or time: `lines` of them, the first at `line`
    /// (`text`, what did not read); those events have no time.
    BadStamps {
        /// The file, as shown.
        path: String,
        /// How many lines.
        lines: u64,
        /// The first such line.
        line: u64,
        /// What did not read in the first line.
        text: String,
    },
    /// Event lines naming a rank number past `limit`: not read.
    BadRanks {
        /// The file, as shown.
        path: String,
        /// How many lines.
        lines: u64,
        /// The first such line.
        line: u64,
        /// What did not read in the first line.
        text: String,
        /// The limit that applied.
        limit: u32,
    },
    /// A compressed file that expanded more than real logs do.
    Expanded {
        /// The file, as shown.
        path: String,
        /// The compressed bytes.
        compressed: u64,
        /// The bytes they expanded to.
        decompressed: u64,
    },
    /// Events recognised but not kept past the event budget, over the run's files:
    /// the first `files` named, `more_files` others, how many of each kind.
    EventsDropped {
        /// The first files it touched.
        files: Vec<String>,
        /// How many other files it touched.
        more_files: usize,
        /// How many events of each kind.
        by_kind: Vec<(String, u64)>,
        /// Events kept past the budget, each the first of its kind for its rank in its
        /// file, shortened (`ingest::scan::budget::FIRST_OF_KIND_PAST_BUDGET`).
        kept_past_budget: u64,
        /// The budget the run was read with.
        budget: EventBudgetLimits,
    },
    /// An nvidia-smi CSV longer than `limit` bytes: only its start is read.
    CsvCut {
        /// The file, as shown.
        path: String,
        /// The limit that applied.
        limit: u64,
    },
    /// Lines of an nvidia-smi CSV not understood as one.
    CsvNotUnderstood {
        /// The file, as shown.
        path: String,
        /// How many lines.
        lines: usize,
    },
    /// An nvidia-smi CSV that could not be read.
    CsvUnreadable {
        /// The file, as shown.
        path: String,
        /// The error, in its own words.
        error: String,
    },
    /// Processes named by global numbers alone, one of which (`number`) the configured
    /// layout cannot hold (past `tp` × `pp` ranks in a server that numbers each replica on
    /// its own): every number is then named as the TP rank of that number.
    GlobalRanksUnplaced {
        /// The first number the layout cannot hold.
        number: u32,
        /// The configured `tp_size`.
        tp: u32,
        /// The configured `pp_size` (1 when not printed).
        pp: u32,
    },
    /// A process whose `assignment` line names `assigned` while the configured sizes place
    /// its prefix's global number `global` at `placed`: the assignment is taken.
    AssignmentOverGlobal {
        /// The process.
        pid: u32,
        /// The global number its prefix printed.
        global: u32,
        /// Where the configured sizes place that number.
        placed: Rank,
        /// The rank its assignment line names.
        assigned: Rank,
    },
    /// A file whose printed stamps go backwards by more than a minute, `times` times.
    TimeGoesBack {
        /// The file, as shown.
        path: String,
        /// How many times.
        times: usize,
    },
    /// Event lines stamped outside `years` while the run's other stamps are inside: their
    /// time is taken off. `count` of them, the first at `line` stamped `stamp`.
    ImplausibleStamps {
        /// The file, as shown.
        path: String,
        /// How many event lines.
        count: usize,
        /// The years a stamp may hold.
        years: std::ops::RangeInclusive<i32>,
        /// The first such line.
        line: u64,
        /// The first such stamp.
        stamp: NaiveDateTime,
    },
    /// Stamps printed without a year or a date were dated.
    DatesInferred {
        /// Where the dates came from.
        from: DatesFrom,
    },
    /// A rank whose lines name two or more hosts (`hosts`: host and pid): two machines'
    /// processes that both claim it (a node directory holding two machines' files).
    RankOnTwoHosts {
        /// The node, by name.
        node: String,
        /// The rank.
        rank: Rank,
        /// The hosts it names, each with its pid.
        hosts: Vec<(String, u32)>,
    },
    /// Node directories whose NCCL lines all name the one host `host`.
    NodesShareHost {
        /// The host they name.
        host: String,
        /// The nodes, by name.
        nodes: Vec<String>,
    },
    /// A node with no barrier exit in common with the reference node: its clock is
    /// taken as is.
    NodeNotAligned {
        /// The node, by name.
        node: String,
        /// The reference node, by name.
        reference: String,
    },
    /// Nothing in the run is a start-up event: `lines` lines read, the grammar families
    /// their prefixes look like.
    NoStartup {
        /// How many lines.
        lines: u64,
        /// The grammar families its prefixes look like.
        families: Vec<String>,
    },
    /// `watch` got no file events from the platform (`why`) and polls the files.
    NoFileEvents {
        /// The platform's reason.
        why: String,
    },
    /// What happened to a file `watch` followed.
    Follow(FollowNote),
}

/// The limits of the event budget a run was read with (`ingest::scan::budget`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventBudgetLimits {
    /// Events kept in one run.
    pub events_per_run: u64,
    /// Bytes of event text kept in one run.
    pub text_bytes_per_run: u64,
    /// Times one file keeps the same event kind for one rank.
    pub same_event_per_source: u32,
}

impl Default for EventBudgetLimits {
    fn default() -> Self {
        EventBudgetLimits::for_files(1)
    }
}

impl EventBudgetLimits {
    /// The limits of a run of `files` log files: the run's own, or a share per file when
    /// that is more (`ingest::scan::budget::EVENTS_PER_FILE`).
    pub fn for_files(files: usize) -> Self {
        use crate::ingest::scan::budget;
        let files = files as u64;
        EventBudgetLimits {
            events_per_run: (budget::EVENTS_PER_RUN)
                .max(files.saturating_mul(budget::EVENTS_PER_FILE)),
            text_bytes_per_run: (budget::EVENT_TEXT_PER_RUN)
                .max(files.saturating_mul(budget::EVENT_TEXT_PER_FILE)),
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
