//! A run's read notes in words (`model::notes::ReadNote`): the summary's `note:` lines,
//! `diff`'s `baseline:`/`candidate:` notes, the JSON documents' `notes` strings and the
//! load errors that list what could not be read all take their sentences from here.
//!
//! The sentences are plain: the paths in the facts were sanitised when they were taken
//! (`base::text::shown_path`), and the text renderers sanitise each whole sentence before
//! it reaches the terminal, as they do any text from the input.

use crate::ingest::source::{DecompressionStop, ListingNote, SpecialFile, StopReason};
use crate::model::notes::{DatesFrom, EventBudgetLimits, ReadNote};

/// Why a read stopped: the error's own words, or the decompression limit it reached
/// (`ingest::source::limits`, docs/reliability.md).
pub(crate) fn stop_reason(r: &StopReason) -> String {
    match r {
        StopReason::Error(text) => text.clone(),
        StopReason::Decompression(DecompressionStop::SizeLimit { limit }) => {
            format!("stopped at the limit of {limit} decompressed bytes per file")
        }
        StopReason::Decompression(DecompressionStop::Ratio {
            expanded,
            compressed,
            ratio,
        }) => format!(
            "stopped: {expanded} bytes expanded from {compressed} compressed bytes (more than {ratio}:1, a decompression bomb or one line repeated)"
        ),
    }
}

/// Global numbers the configured sizes could not place.
fn unplaced_note(number: u32, tp: u32, pp: u32) -> String {
    format!(
        "global rank {number} lies past the configured layout (tp_size {tp} × pp_size {pp} = {} ranks, numbered per replica): the global numbers are named as TP ranks of those numbers, not placed by the sizes",
        u64::from(tp) * u64::from(pp)
    )
}

/// One note in words.
pub fn read_note(n: &ReadNote) -> String {
    match n {
        ReadNote::Listing(l) => listing_note(l),
        ReadNote::Skipped { error } => format!("skipped {error}"),
        ReadNote::ReadStopped {
            path,
            offset,
            compressed_read,
            reason,
        } => {
            let at = match compressed_read {
                Some(raw) => format!(
                    "after {offset} decompressed bytes (byte {raw} of the compressed file)"
                ),
                None => format!("at byte {offset}"),
            };
            format!(
                "{path}: read stopped {at}: {}; the part before it is read",
                stop_reason(reason)
            )
        }
        ReadNote::Shrank {
            path,
            listed,
            now,
            read,
        } => format!(
            "{path}: the file shrank while it was read ({listed} bytes when listed, {now} now; {read} read): the part read is scanned, the rest is lost"
        ),
        ReadNote::PrefixesNotKept { path, limit, line } => format!(
            "{path}: more than {limit} distinct rank prefixes; those first seen from line {line} on are not counted, so the ranks shown are a part of the run's"
        ),
        ReadNote::BadStamps {
            path,
            lines,
            line,
            text,
        } => format!(
            "{path}: {lines} event line(s) with a stamp that is no date or time, first at line {line} ({text}); those events have no time"
        ),
        ReadNote::BadRanks {
            path,
            lines,
            line,
            text,
            limit,
        } => format!(
            "{path}: {lines} event line(s) naming a rank number past {limit} (first at line {line}: `{text}`) are not read"
        ),
        ReadNote::Expanded {
            path,
            compressed,
            decompressed,
        } => format!(
            "{path}: {compressed} compressed bytes expanded to {decompressed} ({}:1; real logs give 5–50:1)",
            decompressed / (*compressed).max(1)
        ),
        ReadNote::EventsDropped {
            files,
            more_files,
            by_kind,
            kept_past_budget,
            budget,
        } => events_dropped(files, *more_files, by_kind, *kept_past_budget, budget),
        ReadNote::CsvCut { path, limit } => format!(
            "{path}: only the first {limit} bytes are read (the limit for an nvidia-smi CSV)"
        ),
        ReadNote::CsvNotUnderstood { path, lines } => {
            format!("{path}: {lines} lines not understood as nvidia-smi CSV")
        }
        ReadNote::CsvUnreadable { path, error } => format!("{path}: cannot read: {error}"),
        ReadNote::GlobalRanksUnplaced { number, tp, pp } => unplaced_note(*number, *tp, *pp),
        ReadNote::AssignmentOverGlobal { pid, global, placed, assigned } => format!(
            "process {pid}: its lines' global rank {global} is {placed} by the configured sizes, but its assignment line names {assigned}: the assignment line is taken (the sizes printed, or the numbering, are not what the server ran)"
        ),
        ReadNote::TimeGoesBack { path, times } => format!(
            "{path}: time stamps go backwards by more than a minute {times} time(s) (newest-first copy, or clocks that disagree); events are shown in time order"
        ),
        ReadNote::ImplausibleStamps {
            path,
            count,
            years,
            line,
            stamp,
        } => format!(
            "{path}: {count} event line(s) stamped outside the years {}–{} while the run's other stamps are inside, first at line {line} ({}): a clock not set or a placeholder; those events have no time",
            years.start(),
            years.end(),
            stamp.format("%Y-%m-%d %H:%M:%S")
        ),
        ReadNote::DatesInferred { from } => match from {
            DatesFrom::RunLines => {
                "some stamps print no year or date: inferred from the fully dated lines of the run"
            }
            DatesFrom::FileDates => {
                "some stamps print no year or date: inferred from the files' modification dates"
            }
        }
        .to_string(),
        ReadNote::RankOnTwoHosts { node, rank, hosts } => {
            let named: Vec<String> = hosts.iter().map(|(h, p)| format!("{h}:{p}")).collect();
            format!(
                "node {node}: rank {rank}'s lines name two hosts ({}): one rank runs on one host, so two machines' processes were read as it",
                named.join(", ")
            )
        }
        ReadNote::NodesShareHost { host, nodes } => format!(
            "nodes {} all name host {host} in their lines: one machine split into directories, or hosts that share a name",
            nodes.join(", ")
        ),
        ReadNote::NodeNotAligned { node, reference } => format!(
            "node {node}: no barrier exit in common with {reference}: its clock is taken as is"
        ),
        ReadNote::NoStartup { lines, families } => no_startup(*lines, families),
        ReadNote::NoFileEvents { why } => {
            format!("no file events ({why}): the files are polled every 100 ms")
        }
        ReadNote::Follow(f) => super::watch::follow_note(f),
    }
}

/// A run in which nothing is a start-up event.
fn no_startup(lines: u64, families: &[String]) -> String {
    let of = if families.is_empty() {
        String::new()
    } else {
        format!(" of {} output", families.join("+"))
    };
    format!(
        "no start-up event (no phase line, no failure) in {lines} lines{of}: the log starts after the start-up or stops before its first phase line"
    )
}

/// The events a spent budget did not keep, over all the run's files.
fn events_dropped(
    files: &[String],
    more_files: usize,
    by_kind: &[(String, u64)],
    kept_past_budget: u64,
    budget: &EventBudgetLimits,
) -> String {
    use crate::ingest::scan::budget::{
        FIRST_OF_KIND_MESSAGE_MAX, FIRST_OF_KIND_PAST_BUDGET, FIRST_OF_KIND_PER_FILE,
    };
    let total: u64 = by_kind.iter().map(|(_, n)| n).sum();
    let kinds: Vec<String> = by_kind.iter().map(|(k, n)| format!("{k} ×{n}")).collect();
    let files = if more_files > 0 {
        format!("{} and {more_files} more files", files.join(", "))
    } else {
        files.join(", ")
    };
    let limits = format!(
        "a run keeps {} events and {} MiB of their text, a file the same event of one rank {} times per start-up",
        budget.events_per_run,
        budget.text_bytes_per_run >> 20,
        budget.same_event_per_source,
    );
    let mut text = if total == 0 {
        format!("{files}: past the event budget ({limits})")
    } else {
        format!(
            "{files}: {total} events not kept, past the event budget ({limits}); they are counted in the lines, and a rank named only in them is not shown: {}",
            kinds.join(", ")
        )
    };
    if kept_past_budget > 0 {
        text.push_str(&format!(
            "; {kept_past_budget} events past it were kept, each the first of its kind for its rank in its file (up to {FIRST_OF_KIND_PER_FILE} a file and {FIRST_OF_KIND_PAST_BUDGET} a run), with the message cut to {FIRST_OF_KIND_MESSAGE_MAX} bytes and the traceback kept only within the text budget"
        ));
    }
    text
}

/// A directory entry the listing skipped, in words.
pub fn listing_note(n: &ListingNote) -> String {
    match n {
        ListingNote::EntryNotListed { dir, error } => {
            format!("{dir}: an entry could not be listed: {error}")
        }
        ListingNote::NotRegular { path, what } => {
            format!(
                "{path}: skipped: {}, not a regular file",
                special_file(*what)
            )
        }
        ListingNote::Unreadable { path, error } => format!("{path}: skipped: {error}"),
    }
}

fn special_file(f: SpecialFile) -> &'static str {
    match f {
        SpecialFile::Directory => "a directory",
        SpecialFile::Fifo => "a FIFO",
        SpecialFile::CharDevice => "a character device",
        SpecialFile::BlockDevice => "a block device",
        SpecialFile::Socket => "a socket",
        SpecialFile::Other => "a special file",
    }
}

/// Every note of a run in words, in its order.
pub fn read_notes(notes: &[ReadNote]) -> Vec<String> {
    notes.iter().map(read_note).collect()
}

/// The notes in one line, as an error that lists them gives them.
pub fn read_notes_joined(notes: &[ReadNote]) -> String {
    read_notes(notes).join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_dropped_over_files_name_three_and_count_the_rest() {
        // 5 + 2 events over five files, three named.
        let n = ReadNote::EventsDropped {
            files: vec!["a.log".into(), "b.log".into(), "c.log".into()],
            more_files: 2,
            by_kind: vec![("weight_load_begin".into(), 5), ("env".into(), 2)],
            kept_past_budget: 0,
            budget: EventBudgetLimits::default(),
        };
        assert_eq!(
            read_note(&n),
            "a.log, b.log, c.log and 2 more files: 7 events not kept, past the event budget \
             (a run keeps 131072 events and 32 MiB of their text, a file the same event of one \
             rank 1024 times per start-up); they are counted in the lines, and a rank named \
             only in them is not shown: weight_load_begin ×5, env ×2"
        );
    }

    #[test]
    fn events_kept_past_the_budget_are_counted_after_those_dropped() {
        let note = |by_kind: Vec<(String, u64)>| ReadNote::EventsDropped {
            files: vec!["a.log".into()],
            more_files: 0,
            by_kind,
            kept_past_budget: 12,
            budget: EventBudgetLimits::default(),
        };
        let tail = "12 events past it were kept, each the first of its kind for its rank in \
                    its file (up to 256 a file and 65536 a run), with the message cut to 1024 \
                    bytes and the traceback kept only within the text budget";
        assert_eq!(
            read_note(&note(vec![("env".into(), 30)])),
            format!(
                "a.log: 30 events not kept, past the event budget (a run keeps 131072 events \
                 and 32 MiB of their text, a file the same event of one rank 1024 times per \
                 start-up); they are counted in the lines, and a rank named only in them is \
                 not shown: env ×30; {tail}"
            )
        );
        // Every event past the budget was the first of its kind: nothing was dropped.
        assert_eq!(
            read_note(&note(Vec::new())),
            format!(
                "a.log: past the event budget (a run keeps 131072 events and 32 MiB of their \
                 text, a file the same event of one rank 1024 times per start-up); {tail}"
            )
        );
    }

    #[test]
    fn a_stop_in_a_compressed_file_gives_both_offsets() {
        let stop = |compressed_read| ReadNote::ReadStopped {
            path: "r9.log.gz".into(),
            offset: 1710,
            compressed_read,
            reason: StopReason::Error("unexpected end of file".into()),
        };
        assert_eq!(
            read_note(&stop(Some(512))),
            "r9.log.gz: read stopped after 1710 decompressed bytes (byte 512 of the compressed \
             file): unexpected end of file; the part before it is read"
        );
        assert_eq!(
            read_note(&stop(None)),
            "r9.log.gz: read stopped at byte 1710: unexpected end of file; the part before it is read"
        );
        // The decompression limits, worded here from the fact: 4 GiB is 4,294,967,296
        // bytes; 268,435,456 bytes out of 500,000 is 536:1, past 500:1.
        let limited = |stop| ReadNote::ReadStopped {
            path: "bomb.gz".into(),
            offset: 268_435_456,
            compressed_read: Some(500_000),
            reason: StopReason::Decompression(stop),
        };
        assert_eq!(
            read_note(&limited(DecompressionStop::SizeLimit { limit: 4 << 30 })),
            "bomb.gz: read stopped after 268435456 decompressed bytes (byte 500000 of the \
             compressed file): stopped at the limit of 4294967296 decompressed bytes per file; \
             the part before it is read"
        );
        assert_eq!(
            read_note(&limited(DecompressionStop::Ratio {
                expanded: 268_435_456,
                compressed: 500_000,
                ratio: 500
            })),
            "bomb.gz: read stopped after 268435456 decompressed bytes (byte 500000 of the \
             compressed file): stopped: 268435456 bytes expanded from 500000 compressed bytes \
             (more than 500:1, a decompression bomb or one line repeated); the part before it \
             is read"
        );
        // 250,000 bytes out of 1,000 is 250:1.
        let expanded = ReadNote::Expanded {
            path: "x.gz".into(),
            compressed: 1000,
            decompressed: 250_000,
        };
        assert!(read_note(&expanded).contains("(250:1;"));
    }
}
