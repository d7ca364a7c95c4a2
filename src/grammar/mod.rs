//! Grammars: a server's log wording as data (`grammars/*.toml`), compiled into one matcher.
//!
//! A grammar has three layers. *Prefixes* say how a record starts and what it tells about
//! time, rank and process; they are shared by all grammars, because one stream often mixes
//! families (SGLang stamps in front of vendored vLLM lines, NCCL lines between them).
//! *Events* are a literal (what the buffer scan looks for) plus a regex with named captures
//! applied only to lines that hit the literal. *Noise* literals mark lines that are known
//! and deliberately ignored, so "lines not understood" means what it says.

mod knowledge;
pub mod remedy;
mod spec;

use std::collections::BTreeMap;
use std::path::Path;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, Anchored, Input, MatchKind, StartKind};
use chrono::{NaiveDate, NaiveDateTime, NaiveTime};
use regex::Regex;

pub use knowledge::{
    phase_of_frame, phase_of_stack, ConfigRule, ConfigSyntax, FrameRule, GrammarKnowledge,
    KindMeaning, Knowledge, OutcomeMatch, OutcomeRule, OutcomeWord, ProcessInfo, ProcessRole,
    RankEvidence, RankRule,
};
pub use spec::{EventSpec, GrammarSpec, PrefixSpec, SampleSpec, Unit};

use crate::base::event::{FieldValue, Phase, Rank};
use crate::base::units;

// The grammars compiled into the binary: every `grammars/*.toml`, found by build.rs.
include!(concat!(env!("OUT_DIR"), "/builtin_grammars.rs"));

#[derive(Debug, thiserror::Error)]
pub enum GrammarError {
    #[error("{origin}: not a valid grammar: {message}")]
    Toml { origin: String, message: String },
    #[error("{origin}: event `{kind}`: bad regex: {message}")]
    Regex {
        origin: String,
        kind: String,
        message: String,
    },
    #[error("{origin}: prefix `{id}`: bad regex: {message}")]
    PrefixRegex {
        origin: String,
        id: String,
        message: String,
    },
    #[error("{origin}: event `{kind}`: unit `{unit}` for capture `{field}` is not a capture of its regex")]
    UnitWithoutCapture {
        origin: String,
        kind: String,
        field: String,
        unit: String,
    },
    #[error("{origin}: event `{kind}` has no literal; every event needs one for the buffer scan")]
    NoLiteral { origin: String, kind: String },
    #[error("cannot read grammar {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{origin}: loading it makes {count} {what} or more, past the {limit} all grammars may hold together (each costs about 60 KiB compiled)")]
    TooMany {
        origin: String,
        what: &'static str,
        count: usize,
        limit: usize,
    },
    #[error("grammar {path}: {what}, not a regular file")]
    NotAFile { path: String, what: &'static str },
    #[error("grammar {path}: larger than {limit} bytes (the built-in grammars are under 64 KiB)")]
    TooLarge { path: String, limit: u64 },
    #[error("{origin}: {message}")]
    Knowledge { origin: String, message: String },
    #[error("building the literal matcher: {0}")]
    Matcher(String),
}

pub struct CompiledEvent {
    pub kind: String,
    pub regex: EventRegex,
    pub units: BTreeMap<String, Unit>,
    /// Following lines without a record start belong to this record (tracebacks).
    pub traceback: bool,
    pub set: BTreeMap<String, String>,
}

/// An event's regex, compiled on its first use: a run meets the events of one or two
/// grammars, and compiling every event of every grammar up front was a tenth of a 1,024-rank
/// diff. The pattern is parsed when the grammar loads, so a bad regex is an error then and
/// the capture names are known for the grammar's checks; a user's grammar is compiled at
/// load (`compile_now`), so only the built-in ones, checked by a test, are ever lazy.
pub struct EventRegex {
    pattern: String,
    /// Named captures, in the order of their groups (as `Regex::capture_names` gives them).
    names: Vec<String>,
    compiled: std::sync::OnceLock<Option<Regex>>,
}

impl EventRegex {
    pub fn new(pattern: &str, compile_now: bool) -> Result<EventRegex, regex::Error> {
        // A pattern the parser rejects is compiled too: `Regex::new`'s error is the one to
        // show (it reports the same parse failure in its own words).
        let hir = match (compile_now, regex_syntax::parse(pattern)) {
            (false, Ok(hir)) => hir,
            _ => {
                let r = Regex::new(pattern)?;
                return Ok(EventRegex {
                    pattern: pattern.to_string(),
                    names: r.capture_names().flatten().map(str::to_string).collect(),
                    compiled: std::sync::OnceLock::from(Some(r)),
                });
            }
        };
        let mut named = Vec::new();
        capture_names(&hir, &mut named);
        named.sort_by_key(|(i, _)| *i);
        Ok(EventRegex {
            pattern: pattern.to_string(),
            names: named.into_iter().map(|(_, n)| n).collect(),
            compiled: std::sync::OnceLock::new(),
        })
    }
    /// The compiled regex; `None` only for a built-in pattern that parses but is too large
    /// to compile, which a test rules out.
    pub fn get(&self) -> Option<&Regex> {
        self.compiled
            .get_or_init(|| Regex::new(&self.pattern).ok())
            .as_ref()
    }
    pub fn as_str(&self) -> &str {
        &self.pattern
    }
    pub fn capture_names(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(String::as_str)
    }
}

fn capture_names(hir: &regex_syntax::hir::Hir, out: &mut Vec<(u32, String)>) {
    use regex_syntax::hir::HirKind;
    match hir.kind() {
        HirKind::Capture(c) => {
            if let Some(n) = &c.name {
                out.push((c.index, n.to_string()));
            }
            capture_names(&c.sub, out);
        }
        HirKind::Repetition(r) => capture_names(&r.sub, out),
        HirKind::Concat(v) | HirKind::Alternation(v) => {
            for h in v {
                capture_names(h, out);
            }
        }
        HirKind::Empty | HirKind::Literal(_) | HirKind::Class(_) | HirKind::Look(_) => {}
    }
}

pub struct CompiledPrefix {
    pub id: String,
    pub regex: Regex,
    pub date_format: String,
    pub time_format: String,
    pub stamp_format: Option<String>,
}

const DEFAULT_DATE_FORMAT: &str = "%Y-%m-%d";
const DEFAULT_TIME_FORMAT: &str = "%H:%M:%S%.f";

/// A strftime-style format chrono can parse with: no unknown `%` directive.
fn check_format(origin: &str, id: &str, field: &str, format: &str) -> Result<(), GrammarError> {
    use chrono::format::{Item, StrftimeItems};
    if StrftimeItems::new(format).any(|i| matches!(i, Item::Error)) {
        return Err(GrammarError::Knowledge {
            origin: origin.into(),
            message: format!(
                "prefix `{id}`: {field} `{format}` is not a strftime format chrono reads"
            ),
        });
    }
    Ok(())
}

pub struct Grammar {
    pub spec: GrammarSpec,
    /// Where it came from: `builtin:sglang` or a file path.
    pub origin: String,
    pub events: Vec<CompiledEvent>,
    pub prefixes: Vec<CompiledPrefix>,
    pub frames: Vec<FrameRule>,
    pub outcomes: Vec<OutcomeRule>,
    /// What its events, processes and configuration dumps mean.
    pub know: GrammarKnowledge,
    /// Settings that explain failures, and settings that size memory.
    pub remedy: remedy::RemedyRules,
}

/// The largest grammar file read (the largest built-in one is under 40 KB).
pub const MAX_GRAMMAR_FILE: u64 = 4 << 20;

/// Events and prefixes all loaded grammars may hold together. Each costs about 60 KiB
/// once compiled (10,000 events took 604 MiB, 10,000 prefixes 753 MiB); the built-in
/// grammars have 119 events and 14 prefixes.
pub const MAX_EVENTS: usize = 1_000;
pub const MAX_PREFIXES: usize = 256;

/// Refuses a grammar (or the set it joins) past `MAX_EVENTS` or `MAX_PREFIXES`.
fn check_counts(origin: &str, events: usize, prefixes: usize) -> Result<(), GrammarError> {
    for (what, count, limit) in [
        ("events", events, MAX_EVENTS),
        ("prefixes", prefixes, MAX_PREFIXES),
    ] {
        if count > limit {
            return Err(GrammarError::TooMany {
                origin: crate::base::text::sanitize(origin),
                what,
                count,
                limit,
            });
        }
    }
    Ok(())
}

impl Grammar {
    pub fn from_toml(text: &str, origin: &str) -> Result<Grammar, GrammarError> {
        let mut spec: GrammarSpec = toml::from_str(text).map_err(|e| GrammarError::Toml {
            origin: origin.to_string(),
            message: e.to_string(),
        })?;
        // Counted before anything is compiled: compiling is what costs memory.
        check_counts(origin, spec.event.len(), spec.prefix.len())?;
        // A user grammar's names reach the terminal (`grammars list`, the summary's "read
        // as", the events' kinds and fields): cleaned once, here, as log lines are.
        spec.id = crate::base::text::sanitize(&spec.id);
        spec.name = crate::base::text::sanitize(&spec.name);
        spec.description = crate::base::text::sanitize(&spec.description);
        for ev in &mut spec.event {
            ev.kind = crate::base::text::sanitize(&ev.kind);
            for v in ev.set.values_mut() {
                *v = crate::base::text::sanitize(v);
            }
        }
        let mut events = Vec::new();
        for ev in &spec.event {
            if ev.literals.is_empty() || ev.literals.iter().any(|l| l.is_empty()) {
                return Err(GrammarError::NoLiteral {
                    origin: origin.into(),
                    kind: ev.kind.clone(),
                });
            }
            // A user's grammar is compiled now: a pattern that parses but is too large to
            // compile is an error at load, not an event that silently matches nothing.
            // The built-in ones are compiled in tests (`every_builtin_event_regex_compiles`).
            let compile_now = !origin.starts_with("builtin:");
            let regex =
                EventRegex::new(&ev.regex, compile_now).map_err(|e| GrammarError::Regex {
                    origin: origin.into(),
                    kind: ev.kind.clone(),
                    message: e.to_string(),
                })?;
            for (field, unit) in &ev.units {
                if !regex.capture_names().any(|n| n == field) {
                    return Err(GrammarError::UnitWithoutCapture {
                        origin: origin.into(),
                        kind: ev.kind.clone(),
                        field: field.clone(),
                        unit: format!("{unit:?}"),
                    });
                }
            }
            events.push(CompiledEvent {
                kind: ev.kind.clone(),
                regex,
                units: ev.units.clone(),
                traceback: ev.traceback,
                set: ev.set.clone(),
            });
        }
        let mut prefixes = Vec::new();
        for p in &spec.prefix {
            let regex = Regex::new(&p.regex).map_err(|e| GrammarError::PrefixRegex {
                origin: origin.into(),
                id: p.id.clone(),
                message: e.to_string(),
            })?;
            let has = |n: &str| regex.capture_names().flatten().any(|c| c == n);
            for (field, format, capture) in [
                ("date_format", &p.date_format, "date"),
                ("time_format", &p.time_format, "time"),
                ("stamp_format", &p.stamp_format, "stamp"),
            ] {
                if let Some(f) = format {
                    check_format(origin, &p.id, field, f)?;
                    if !has(capture) {
                        return Err(GrammarError::Knowledge {
                            origin: origin.into(),
                            message: format!("prefix `{}`: {field} given but the regex has no `{capture}` capture", p.id),
                        });
                    }
                }
            }
            if has("stamp") && p.stamp_format.is_none() {
                return Err(GrammarError::Knowledge {
                    origin: origin.into(),
                    message: format!(
                        "prefix `{}`: a `stamp` capture needs a `stamp_format`",
                        p.id
                    ),
                });
            }
            prefixes.push(CompiledPrefix {
                id: p.id.clone(),
                regex,
                date_format: p
                    .date_format
                    .clone()
                    .unwrap_or_else(|| DEFAULT_DATE_FORMAT.into()),
                time_format: p
                    .time_format
                    .clone()
                    .unwrap_or_else(|| DEFAULT_TIME_FORMAT.into()),
                stamp_format: p.stamp_format.clone(),
            });
        }
        let frames = knowledge::compile_frames(origin, &spec.frame_phase)?;
        let outcomes = knowledge::compile_outcomes(origin, &spec.outcome)?;
        let captures: Vec<Vec<&str>> = events
            .iter()
            .map(|e| e.regex.capture_names().collect())
            .collect();
        let know = knowledge::compile_grammar(origin, &spec, &captures)?;
        let remedy = remedy::compile(origin, &spec.id, &spec.suspect, &spec.memory_lever)?;
        for ev in &spec.event {
            if let Some(p) = ev.set.get("phase") {
                if Phase::from_name(p).is_none() {
                    return Err(GrammarError::Knowledge {
                        origin: origin.into(),
                        message: format!("event `{}`: set.phase `{p}` is not a phase", ev.kind),
                    });
                }
            }
            if let Some(o) = ev.set.get("outcome") {
                if OutcomeWord::from_name(o).is_none() {
                    return Err(GrammarError::Knowledge {
                        origin: origin.into(),
                        message: format!(
                            "event `{}`: set.outcome `{o}` is not consequence, terminated or stalled",
                            ev.kind
                        ),
                    });
                }
            }
        }
        Ok(Grammar {
            spec,
            origin: origin.to_string(),
            events,
            prefixes,
            frames,
            outcomes,
            know,
            remedy,
        })
    }

    /// Reads a grammar file: a regular file only (a FIFO would block the open, a device
    /// such as /dev/zero never ends) and at most `MAX_GRAMMAR_FILE` bytes.
    pub fn from_path(path: &Path) -> Result<Grammar, GrammarError> {
        use std::io::Read;
        use std::os::unix::fs::FileTypeExt;
        let shown = crate::base::text::shown_path(path);
        let io = |source| GrammarError::Io {
            path: shown.clone(),
            source,
        };
        let t = std::fs::metadata(path).map_err(io)?.file_type();
        if !t.is_file() {
            let what = if t.is_dir() {
                "a directory"
            } else if t.is_fifo() {
                "a FIFO"
            } else if t.is_char_device() || t.is_block_device() {
                "a device"
            } else {
                "a special file"
            };
            return Err(GrammarError::NotAFile { path: shown, what });
        }
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_GRAMMAR_FILE + 1).read_to_end(&mut bytes))
            .map_err(io)?;
        if bytes.len() as u64 > MAX_GRAMMAR_FILE {
            return Err(GrammarError::TooLarge {
                path: shown,
                limit: MAX_GRAMMAR_FILE,
            });
        }
        let text = String::from_utf8(bytes).map_err(|e| {
            io(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("not UTF-8 at byte {}", e.utf8_error().valid_up_to()),
            ))
        })?;
        Grammar::from_toml(&text, &shown)
    }

    pub fn id(&self) -> &str {
        &self.spec.id
    }
}

/// The built-in grammars' frame tables and outcome wordings, for readers that have no
/// loaded grammar set at hand (a snapshot's stack frames placed in phases).
pub fn builtin_knowledge() -> &'static Knowledge {
    static K: std::sync::OnceLock<Knowledge> = std::sync::OnceLock::new();
    K.get_or_init(|| {
        GrammarSet::builtin()
            .map(|g| g.knowledge().clone())
            .unwrap_or_else(|_| Knowledge::empty())
    })
}

/// Literals per automaton in the buffer scan (see `GrammarSet::literal_groups`).
const LITERALS_PER_GROUP: usize = 32;

/// Fragment lengths for the prefilter (`prefilter_fragments`): long enough that a
/// SIMD search rarely stops on ordinary text, short enough to be shared by literals.
const FRAGMENT_MIN: usize = 4;
const FRAGMENT_MAX: usize = 8;

/// The strings the buffer prefilter looks for: fragments of the event literals such that
/// every literal contains one, so no line holding a literal is missed. Greedily, the
/// fragment shared by most literals not yet covered (then the longest, then the one with
/// most bytes other than lower-case letters and spaces) is taken, until all are covered:
/// `CUDA ` stands for six literals, `SIGTERM` for four. A fragment of lower-case letters
/// and spaces only (`graph`, `memory`), or found in a record start or noise literal
/// (`INFO `, `NCCL_`), would stop the search on traffic lines and is never chosen; a
/// literal with no other fragment is looked for whole. With the built-in grammars, 130
/// literals become 74 fragments: three automata instead of four.
fn prefilter_fragments(literals: &[String], ordinary: &[&str]) -> Vec<Vec<u8>> {
    fn windows(s: &[u8]) -> impl Iterator<Item = &[u8]> {
        (FRAGMENT_MIN..=FRAGMENT_MAX.min(s.len())).flat_map(move |n| s.windows(n))
    }
    let plain = |w: &[u8]| w.iter().all(|&b| b.is_ascii_lowercase() || b == b' ');
    let ordinary: std::collections::HashSet<&[u8]> = ordinary
        .iter()
        .flat_map(|c| windows(c.as_bytes()))
        .collect();
    // Which literals each usable fragment covers, as a bit set over literal indices.
    let words = literals.len().div_ceil(64);
    let bit = |i: usize| (i / 64, 1u64 << (i % 64));
    let mut cover: BTreeMap<&[u8], Vec<u64>> = BTreeMap::new();
    for (i, lit) in literals.iter().enumerate() {
        for w in windows(lit.as_bytes()) {
            if plain(w) || ordinary.contains(w) {
                continue;
            }
            let set = cover.entry(w).or_insert_with(|| vec![0; words]);
            let (word, mask) = bit(i);
            if let Some(x) = set.get_mut(word) {
                *x |= mask;
            }
        }
    }
    let mut uncovered = vec![0u64; words];
    let mut out: Vec<Vec<u8>> = Vec::new();
    for (i, lit) in literals.iter().enumerate() {
        let (word, mask) = bit(i);
        if windows(lit.as_bytes()).any(|w| cover.contains_key(w)) {
            if let Some(x) = uncovered.get_mut(word) {
                *x |= mask;
            }
        } else {
            out.push(lit.as_bytes().to_vec());
        }
    }
    let rare = |w: &[u8]| {
        w.iter()
            .filter(|&&b| !(b.is_ascii_lowercase() || b == b' '))
            .count()
    };
    loop {
        let best = cover
            .iter()
            .map(|(w, set)| {
                let n: u32 = set
                    .iter()
                    .zip(&uncovered)
                    .map(|(a, b)| (a & b).count_ones())
                    .sum();
                ((n, w.len(), rare(w)), *w, set)
            })
            .max_by_key(|c| c.0);
        let Some(((n, _, _), w, set)) = best else {
            break;
        };
        if n == 0 {
            break;
        }
        out.push(w.to_vec());
        for (u, s) in uncovered.iter_mut().zip(set) {
            *u &= !s;
        }
    }
    out
}

/// Stands in for a date no stamp printed, until the loader infers the real one.
pub const PLACEHOLDER_DATE: NaiveDate = match NaiveDate::from_ymd_opt(2000, 1, 1) {
    Some(d) => d,
    None => NaiveDate::MIN,
};

/// Where users keep their own grammars: `$RANKSCOPE_GRAMMAR_DIR`, else
/// `$XDG_CONFIG_HOME/rankscope/grammars`, else `~/.config/rankscope/grammars`.
pub fn user_grammar_dir() -> Option<std::path::PathBuf> {
    if let Some(d) = std::env::var_os("RANKSCOPE_GRAMMAR_DIR") {
        return Some(d.into());
    }
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".config"))
        })?;
    Some(config.join("rankscope").join("grammars"))
}

/// The grammars a run is read with: the built-in ones, then every `*.toml` of the user
/// grammar directory (sorted by name), then the `--grammar` files. A grammar whose `id`
/// is already loaded replaces it, so a user can override a built-in one.
pub fn load_all(extra: &[std::path::PathBuf]) -> Result<Vec<Grammar>, GrammarError> {
    let mut list = GrammarSet::builtin_grammars()?;
    let mut paths: Vec<std::path::PathBuf> = Vec::new();
    if let Some(dir) = user_grammar_dir() {
        if let Ok(entries) = std::fs::read_dir(&dir) {
            let mut found: Vec<_> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                .collect();
            found.sort();
            paths.extend(found);
        }
    }
    paths.extend(extra.iter().cloned());
    let count = |list: &[Grammar]| {
        (
            list.iter().map(|g| g.spec.event.len()).sum::<usize>(),
            list.iter().map(|g| g.spec.prefix.len()).sum::<usize>(),
        )
    };
    for p in paths {
        let g = Grammar::from_path(&p)?;
        let (events, prefixes) = count(&list);
        check_counts(
            &g.origin,
            events + g.spec.event.len(),
            prefixes + g.spec.prefix.len(),
        )?;
        match list.iter().position(|x| x.spec.id == g.spec.id) {
            Some(i) => list[i] = g,
            None => list.push(g),
        }
    }
    Ok(list)
}

/// What a record's prefix says about it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PrefixInfo {
    pub ts: Option<NaiveDateTime>,
    /// The date was not printed (time-only or yearless stamps).
    pub date_inferred: bool,
    /// Not even month and day were printed (`[HH:MM:SS TP0]`): the date is a stand-in
    /// until the loader infers it.
    pub time_only: bool,
    pub rank: Option<Rank>,
    pub pid: Option<u32>,
    /// The process name a vLLM-style prefix gives (`Worker_TP3`, `EngineCore_DP0`).
    pub process: Option<String>,
    /// The host NCCL's `host:pid:tid` prefix names.
    pub host: Option<String>,
    /// Byte offset in the line where the event's regex starts: the prefix's end, or the
    /// event's literal when that begins inside the prefix (c10's `]:[W` warning marker).
    pub message_start: usize,
    /// Byte offset in the line where the prefix ends: what the event shows as its message
    /// starts here even when its regex had to start earlier.
    pub prefix_end: usize,
    /// Byte offset in the line where the prefix starts (a record may be glued to a bar).
    pub prefix_start: usize,
    /// The prefix captured a date or time that its format does not read (`grammars
    /// check` reports it; the scan leaves the line without a time, and a note says so).
    pub stamp_error: Option<String>,
    /// The prefix names a rank by a number too large to be one (`TP4294967296`): the
    /// scan keeps no event of the line, and a note says so.
    pub rank_error: Option<String>,
}

/// A matched event, before it is placed in a run.
#[derive(Clone, Debug, PartialEq)]
pub struct LineMatch {
    pub grammar: usize,
    pub kind: String,
    pub fields: BTreeMap<String, FieldValue>,
    pub prefix: Option<PrefixInfo>,
    pub message: String,
    pub traceback: bool,
    /// Captures dropped because they ran to the end of a cut line.
    pub cut_fields: Vec<String>,
}

/// All grammars of a run, compiled into the scanners the hot loop uses.
pub struct GrammarSet {
    pub grammars: Vec<Grammar>,
    /// Every event literal, in groups small enough for aho-corasick's SIMD (Teddy)
    /// prefilter, which stops being used past about 64 patterns and is several times
    /// faster than the automaton alone; `.1` is the group's first index in `literal_owner`.
    literal_groups: Vec<(AhoCorasick, usize)>,
    /// What the buffer scan looks for first: short fragments, every event literal
    /// containing one (`prefilter_fragments`), in as few SIMD-prefiltered automata as
    /// fit them. A line with a hit is then checked against `literal_groups`.
    prefilter: Vec<AhoCorasick>,
    /// `literal_owner[i]` lists the (grammar, event) pairs literal `i` serves.
    literal_owner: Vec<Vec<(usize, usize)>>,
    /// Anchored: does a line begin like a record of some family?
    start_ac: AhoCorasick,
    /// Unanchored: does a line hold a known noise marker (tqdm, NCCL INFO, uvicorn …)?
    noise_ac: Option<AhoCorasick>,
    /// Reference date for stamps that print no date (file mtime or today).
    pub reference_date: Option<NaiveDate>,
    /// The grammars' frame tables and outcome wordings, gathered once.
    knowledge: Knowledge,
    /// Every grammar's prefix regexes as one set, and the grammar of each (`prefix_set`):
    /// `detect` runs it on the first lines of every file and `find_prefix` on every event
    /// line, one pass where there was one per prefix (a tenth of loading 1,024 small
    /// files). Built on first use, so commands that read no log do not compile it; `None`
    /// if the set does not compile (then each regex is tried in turn).
    prefix_set: std::sync::OnceLock<Option<(regex::RegexSet, Vec<usize>)>>,
}

impl GrammarSet {
    pub fn builtin() -> Result<GrammarSet, GrammarError> {
        GrammarSet::new(Self::builtin_grammars()?)
    }

    /// Event kinds some loaded grammar marks `barrier_exit`: printed by every rank as it
    /// leaves a collective, the events node clocks are aligned on.
    pub fn barrier_exit_kinds(&self) -> std::collections::BTreeSet<String> {
        self.grammars
            .iter()
            .flat_map(|g| g.spec.event.iter())
            .filter(|e| e.barrier_exit)
            .map(|e| e.kind.clone())
            .collect()
    }

    /// The built-in grammars in load order: by `priority`, then file name.
    pub fn builtin_grammars() -> Result<Vec<Grammar>, GrammarError> {
        let mut list = BUILTIN
            .iter()
            .map(|(id, text)| Grammar::from_toml(text, &format!("builtin:{id}")))
            .collect::<Result<Vec<_>, _>>()?;
        list.sort_by_key(|g| g.spec.priority);
        Ok(list)
    }

    pub fn new(grammars: Vec<Grammar>) -> Result<GrammarSet, GrammarError> {
        let mut literals: Vec<String> = Vec::new();
        let mut literal_owner: Vec<Vec<(usize, usize)>> = Vec::new();
        let mut starts: Vec<String> = Vec::new();
        let mut noise: Vec<String> = Vec::new();
        for (gi, g) in grammars.iter().enumerate() {
            for (ei, ev) in g.spec.event.iter().enumerate() {
                for lit in &ev.literals {
                    match literals.iter().position(|l| l == lit) {
                        Some(p) => literal_owner[p].push((gi, ei)),
                        None => {
                            literals.push(lit.clone());
                            literal_owner.push(vec![(gi, ei)]);
                        }
                    }
                }
            }
            for p in &g.spec.prefix {
                starts.extend(p.starts_with.iter().cloned());
            }
            for n in &g.spec.noise {
                noise.extend(n.literals.iter().cloned());
            }
        }
        let mut literal_groups = Vec::new();
        for (i, group) in literals.chunks(LITERALS_PER_GROUP).enumerate() {
            let ac = AhoCorasickBuilder::new()
                .match_kind(MatchKind::LeftmostLongest)
                .build(group)
                .map_err(|e| GrammarError::Matcher(e.to_string()))?;
            literal_groups.push((ac, i * LITERALS_PER_GROUP));
        }
        let ordinary: Vec<&str> = starts.iter().chain(&noise).map(String::as_str).collect();
        let mut prefilter = Vec::new();
        for group in prefilter_fragments(&literals, &ordinary).chunks(LITERALS_PER_GROUP) {
            prefilter.push(
                AhoCorasickBuilder::new()
                    .match_kind(MatchKind::LeftmostLongest)
                    .build(group)
                    .map_err(|e| GrammarError::Matcher(e.to_string()))?,
            );
        }
        starts.retain(|s| !s.is_empty());
        let start_ac = AhoCorasickBuilder::new()
            .start_kind(StartKind::Anchored)
            .build(&starts)
            .map_err(|e| GrammarError::Matcher(e.to_string()))?;
        noise.retain(|s| !s.is_empty());
        let noise_ac = if noise.is_empty() {
            None
        } else {
            Some(AhoCorasick::new(&noise).map_err(|e| GrammarError::Matcher(e.to_string()))?)
        };
        let mut knowledge = Knowledge::empty();
        for g in &grammars {
            knowledge.add(&g.spec.id, &g.frames, &g.outcomes, &g.know);
            knowledge
                .remedy
                .suspects
                .extend(g.remedy.suspects.iter().cloned());
            knowledge
                .remedy
                .levers
                .extend(g.remedy.levers.iter().cloned());
        }
        Ok(GrammarSet {
            grammars,
            literal_groups,
            prefilter,
            literal_owner,
            start_ac,
            noise_ac,
            reference_date: None,
            knowledge,
            prefix_set: std::sync::OnceLock::new(),
        })
    }

    /// The frame tables and outcome wordings of all grammars, in load order.
    pub fn knowledge(&self) -> &Knowledge {
        &self.knowledge
    }

    /// Start offsets, in order, of prefilter fragments in a buffer: every line that holds
    /// an event literal holds one of them (within the literal, so on the same line).
    pub fn literal_hits(&self, buf: &[u8]) -> Vec<usize> {
        let mut hits: Vec<usize> = Vec::new();
        for ac in &self.prefilter {
            hits.extend(ac.find_iter(buf).map(|m| m.start()));
        }
        if self.prefilter.len() > 1 {
            hits.sort_unstable();
            hits.dedup();
        }
        hits
    }

    /// The (grammar, event, literal offset) candidates a line's literals point at, in
    /// grammar and event order: the order events are tried in.
    pub fn candidates(&self, text: &str) -> Vec<(usize, usize, usize)> {
        let mut out = Vec::new();
        for (ac, base) in &self.literal_groups {
            for m in ac.find_iter(text) {
                for &(g, e) in self.owners(base + m.pattern().as_usize()) {
                    out.push((g, e, m.start()));
                }
            }
        }
        out.sort_by_key(|c| (c.0, c.1));
        out.dedup_by_key(|c| (c.0, c.1));
        out
    }

    pub fn owners(&self, pattern: usize) -> &[(usize, usize)] {
        self.literal_owner
            .get(pattern)
            .map_or(&[], |v| v.as_slice())
    }

    /// Cheap test on a line's first bytes: does it start like a record of a known family?
    /// This is the per-line work of the scan, so it is one anchored automaton step, not a
    /// regex: a line that starts with `[` is taken as an SGLang-family record here and is
    /// only parsed for real when it carries an event.
    pub fn starts_record(&self, line: &[u8]) -> bool {
        let head = &line[..line.len().min(64)];
        self.start_ac
            .find(Input::new(head).anchored(Anchored::Yes))
            .is_some()
    }

    /// Which grammars' prefixes the first lines of a source show: its family (or families,
    /// for a mixed stream), as detection reports it.
    pub fn detect(&self, head: &[u8]) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let set = self.prefix_set();
        let mut matched = vec![false; self.grammars.len()];
        for line in head.split(|&b| b == b'\n').take(64) {
            let text = crate::base::text::clean_line(line);
            if let Some((set, owner)) = set {
                matched.iter_mut().for_each(|m| *m = false);
                for i in set.matches(&text).iter() {
                    if let Some(m) = owner.get(i).and_then(|&g| matched.get_mut(g)) {
                        *m = true;
                    }
                }
                // In grammar order within a line, as the loop below finds them.
                for (g, _) in self.grammars.iter().zip(&matched).filter(|(_, &m)| m) {
                    if !out.contains(&g.spec.id) {
                        out.push(g.spec.id.clone());
                    }
                }
                if out.len() == self.grammars.len() {
                    break;
                }
                continue;
            }
            for g in &self.grammars {
                if !out.contains(&g.spec.id) && g.prefixes.iter().any(|p| p.regex.is_match(&text)) {
                    out.push(g.spec.id.clone());
                }
            }
        }
        out
    }

    /// Every grammar's prefix regexes as one set, pattern `i` being the `i`-th prefix in
    /// grammar then file order, with the grammar of each.
    fn prefix_set(&self) -> Option<&(regex::RegexSet, Vec<usize>)> {
        self.prefix_set
            .get_or_init(|| {
                let mut owner = Vec::new();
                let mut patterns = Vec::new();
                for (gi, g) in self.grammars.iter().enumerate() {
                    for p in &g.prefixes {
                        owner.push(gi);
                        patterns.push(p.regex.as_str());
                    }
                }
                regex::RegexSet::new(patterns).ok().map(|set| (set, owner))
            })
            .as_ref()
    }

    pub fn is_noise(&self, line: &[u8]) -> bool {
        self.noise_ac.as_ref().is_some_and(|ac| ac.is_match(line))
    }

    /// Finds the record prefix that governs the text at `before` in `line`: the last
    /// prefix match of any grammar that ends at or before it.
    pub fn find_prefix(&self, line: &str, before: usize) -> Option<PrefixInfo> {
        // The governing prefix is the one that ends nearest the event (a record glued to a
        // progress bar, a wrapper in front); of those ending at the same place, the longest
        // (a vLLM process prefix plus its logger prefix beats the logger prefix alone).
        // A literal may also begin inside the prefix (`NCCL WARN`): then the prefix that
        // starts last before it governs, and the message starts at the literal.
        let mut best: Option<(usize, usize, &CompiledPrefix)> = None;
        let mut straddling: Option<(usize, usize, &CompiledPrefix)> = None;
        // One pass of the set says which prefixes occur in the line at all; only those
        // are searched one by one (each prefix's own pass over every event line was a
        // tenth of loading 8,192 files).
        let present = self.prefix_set().map(|(set, _)| set.matches(line));
        let mut index = 0;
        for g in &self.grammars {
            for p in &g.prefixes {
                let i = index;
                index += 1;
                if present.as_ref().is_some_and(|m| !m.matched(i)) {
                    continue;
                }
                for m in p.regex.find_iter(line) {
                    if m.start() > before {
                        break;
                    }
                    if m.end() <= before {
                        let better = match best {
                            None => true,
                            Some((start, end, _)) => {
                                m.end() > end || (m.end() == end && m.start() < start)
                            }
                        };
                        if better {
                            best = Some((m.start(), m.end(), p));
                        }
                    } else if m.start() < before && straddling.is_none_or(|s| m.start() > s.0) {
                        straddling = Some((m.start(), m.end(), p));
                    }
                }
            }
        }
        if let Some((start, _, p)) = best {
            let caps = p.regex.captures_at(line, start)?;
            return Some(self.prefix_info(p, &caps, start));
        }
        let (start, _, p) = straddling?;
        let caps = p.regex.captures_at(line, start)?;
        let mut info = self.prefix_info(p, &caps, start);
        info.message_start = before;
        Some(info)
    }

    fn prefix_info(
        &self,
        p: &CompiledPrefix,
        caps: &regex::Captures<'_>,
        start: usize,
    ) -> PrefixInfo {
        let whole = caps.get(0).map_or(start..start, |m| m.range());
        let mut stamp_error = None;
        let mut bad = |what: &str, text: &str, format: &str| {
            stamp_error.get_or_insert(format!("{what} `{text}` does not parse with `{format}`"));
        };
        let time = caps.name("time").and_then(|m| {
            let t = NaiveTime::parse_from_str(m.as_str(), &p.time_format).ok();
            if t.is_none() {
                bad("time", m.as_str(), &p.time_format);
            }
            t
        });
        let stamp = match (caps.name("stamp"), &p.stamp_format) {
            (Some(m), Some(f)) => {
                let s = NaiveDateTime::parse_from_str(m.as_str(), f).ok();
                if s.is_none() {
                    bad("stamp", m.as_str(), f);
                }
                s
            }
            _ => None,
        };
        let mut date_inferred = false;
        let date = match caps.name("date") {
            Some(d) => {
                let date = NaiveDate::parse_from_str(d.as_str(), &p.date_format).ok();
                if date.is_none() {
                    bad("date", d.as_str(), &p.date_format);
                }
                date
            }
            None => {
                date_inferred = true;
                match caps.name("md") {
                    Some(md) => {
                        // A leap year, so `02-29` parses; the loader sets the real year.
                        let year = self
                            .reference_date
                            .map_or(2000, |d| chrono::Datelike::year(&d));
                        NaiveDate::parse_from_str(&format!("{year}-{}", md.as_str()), "%Y-%m-%d")
                            .ok()
                    }
                    None => Some(self.reference_date.unwrap_or(PLACEHOLDER_DATE)),
                }
            }
        };
        let has_stamp = caps.name("stamp").is_some();
        let ts = if has_stamp {
            date_inferred = false;
            stamp
        } else {
            match (date, time) {
                (Some(d), Some(t)) => Some(d.and_time(t)),
                _ => None,
            }
        };
        let process = caps.name("proc").map(|p| p.as_str().to_string());
        let rank = knowledge::rank_of_captures(caps).or_else(|| {
            let info = self.knowledge.process(process.as_deref()?)?;
            (info.role == ProcessRole::Worker)
                .then_some(info.tags)
                .flatten()
        });
        let rank_error = if rank.is_none() {
            knowledge::rank_number_too_large(caps)
        } else {
            None
        };
        let pid = caps.name("pid").and_then(|p| p.as_str().parse().ok());
        let time_only = !has_stamp && caps.name("date").is_none() && caps.name("md").is_none();
        PrefixInfo {
            ts,
            date_inferred: date_inferred && ts.is_some(),
            time_only: time_only && ts.is_some(),
            rank,
            pid,
            process,
            host: caps.name("host").map(|h| h.as_str().to_string()),
            message_start: whole.end,
            prefix_end: whole.end,
            prefix_start: whole.start,
            stamp_error,
            rank_error,
        }
    }

    /// Matches one clean line against the candidate events whose literals it hit.
    /// `cut` says the line is the truncated end of a file: captures that run to its end
    /// may be missing digits and are dropped, never read as a shorter number.
    pub fn match_line(
        &self,
        line: &str,
        candidates: &[(usize, usize, usize)],
        cut: bool,
    ) -> Option<LineMatch> {
        let mut found = candidates
            .iter()
            .filter_map(|&(gi, ei, at)| self.try_event(line, gi, ei, at, cut));
        let first = found.next()?;
        // An OOM message inside another failure's wording (`Capture cuda graph failed:
        // CUDA out of memory …`, `Worker failed with error 'CUDA out of memory …'`) is
        // read as the OOM: it says more.
        if first.kind == crate::base::event::kind::ERROR {
            if let Some(oom) = found.find(|m| m.kind == crate::base::event::kind::OOM) {
                return Some(oom);
            }
        }
        Some(first)
    }

    fn try_event(
        &self,
        line: &str,
        gi: usize,
        ei: usize,
        at: usize,
        cut: bool,
    ) -> Option<LineMatch> {
        let ev = self.grammars.get(gi).and_then(|g| g.events.get(ei))?;
        let prefix = self.find_prefix(line, at);
        // A line no prefix governs is read after its wrappers (`web-1  | ValueError: …`,
        // `[pod/x/c] E1124 …`), so anchored wordings hold behind them too.
        let msg_start = prefix.as_ref().map_or_else(
            || line.len() - crate::base::text::peel_transport(line.as_bytes()).len(),
            |p| p.message_start,
        );
        let message = line.get(msg_start..).unwrap_or("");
        let caps = ev.regex.get()?.captures(message)?;
        // A literal inside the prefix made the regex start there; the reader is shown the
        // text after the prefix, not a remnant of it (`]:[W1130 09:24:29.99… file.cpp:1] …`).
        let shown = prefix
            .as_ref()
            .filter(|p| p.prefix_end > msg_start)
            .and_then(|p| line.get(p.prefix_end..))
            .unwrap_or(message);
        let mut fields: BTreeMap<String, FieldValue> = ev
            .set
            .iter()
            .map(|(k, v)| (k.clone(), FieldValue::Text(v.clone())))
            .collect();
        let mut cut_fields = Vec::new();
        for name in ev.regex.capture_names() {
            let Some(m) = caps.name(name) else { continue };
            if cut && m.end() == message.len() {
                cut_fields.push(name.to_string());
                continue;
            }
            let unit = ev.units.get(name).copied().unwrap_or(Unit::Text);
            if let Some(v) = convert(m.as_str(), unit) {
                fields.insert(name.to_string(), v);
            }
        }
        Some(LineMatch {
            grammar: gi,
            kind: ev.kind.clone(),
            fields,
            prefix,
            message: bounded(
                shown.trim_end(),
                if ev.kind == crate::base::event::kind::SERVER_ARGS {
                    MAX_CONFIG_MESSAGE
                } else {
                    MAX_MESSAGE
                },
            ),
            traceback: ev.traceback,
            cut_fields,
        })
    }

    /// Matches a line the way the scanner does, from scratch (for samples and tests).
    pub fn match_text(&self, line: &str) -> Option<LineMatch> {
        self.match_line(line, &self.candidates(line), false)
    }
}

/// The most of a record's message an event keeps (configuration dumps run to a few KB;
/// a hostile or flattened line can be megabytes, and every event holds its message).
pub const MAX_MESSAGE: usize = 16 << 10;

/// The most of a configuration line (`server_args`) an event keeps: the configuration is
/// read from it, and a cut there loses the settings a diff compares. Real dumps run to
/// about 20 KiB (SGLang with every option printed); the run's text budget bounds the sum.
pub const MAX_CONFIG_MESSAGE: usize = 1 << 20;

/// What `bounded` appends to a message it cut: `… [N more bytes]`.
const CUT_MARK_OPEN: &str = "… [";
const CUT_MARK_CLOSE: &str = " more bytes]";

fn bounded(message: &str, limit: usize) -> String {
    if message.len() <= limit {
        return message.to_string();
    }
    let mut end = limit;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}{CUT_MARK_OPEN}{}{CUT_MARK_CLOSE}",
        &message[..end],
        message.len() - end
    )
}

/// A message without the mark `bounded` put at its end, and whether it had one: the
/// text before the mark is what the line said, read as a line cut short.
pub fn strip_cut_mark(message: &str) -> (&str, bool) {
    if let Some(head) = message.strip_suffix(CUT_MARK_CLOSE) {
        if let Some(at) = head.rfind(CUT_MARK_OPEN) {
            let count = &head[at + CUT_MARK_OPEN.len()..];
            if !count.is_empty() && count.bytes().all(|b| b.is_ascii_digit()) {
                return (&message[..at], true);
            }
        }
    }
    (message, false)
}

/// Converts a captured text into the field's canonical unit.
pub fn convert(text: &str, unit: Unit) -> Option<FieldValue> {
    let t = text.trim();
    match unit {
        Unit::Text => Some(FieldValue::Text(t.to_string())),
        Unit::Int => t.replace(',', "").parse().ok().map(FieldValue::Int),
        Unit::Float | Unit::Seconds => units::parse_decimal(t).map(|(v, _)| FieldValue::Float(v)),
        Unit::Size => {
            units::parse_size(t).map(|(bytes, resolution)| FieldValue::Bytes { bytes, resolution })
        }
        Unit::Bytes
        | Unit::KiB
        | Unit::MiB
        | Unit::GiB
        | Unit::MbMeaningMiB
        | Unit::GbMeaningGiB => {
            // The printed unit is declared by the grammar; `GB` and `MB` are read as the
            // binary units the servers compute them in.
            let name = match unit {
                Unit::Bytes => "B",
                Unit::KiB => "KiB",
                Unit::MiB | Unit::MbMeaningMiB => "MiB",
                _ => "GiB",
            };
            units::to_bytes(t, name)
                .map(|(bytes, resolution)| FieldValue::Bytes { bytes, resolution })
        }
    }
}

/// Checks every sample of a grammar: the line must give the stated kind and fields.
/// Returns one message per failing sample.
pub fn check_samples(set: &GrammarSet, grammar: usize) -> Vec<String> {
    let Some(g) = set.grammars.get(grammar) else {
        return Vec::new();
    };
    let mut failures: Vec<String> = g
        .spec
        .sample
        .iter()
        .enumerate()
        .map(|(i, sample)| check_sample(set, g, i, sample))
        .filter(|problems| !problems.is_empty())
        .map(|problems| problems.join("\n"))
        .collect();
    failures.extend(
        g.spec
            .frame_phase
            .iter()
            .enumerate()
            .filter_map(|(i, f)| check_frame_sample(set, g, i, f)),
    );
    failures
}

/// How many samples `check_samples` checks for a grammar: its line samples and the
/// samples of its frame → phase entries.
pub fn sample_count(g: &Grammar) -> usize {
    g.spec.sample.len()
        + g.spec
            .frame_phase
            .iter()
            .filter(|f| f.sample.is_some())
            .count()
}

/// What is wrong with a `[[frame_phase]]` entry's sample (nothing when it passes, or when
/// the entry has none): the frame, read as a traceback by every loaded grammar's tables,
/// must give the entry's phase.
fn check_frame_sample(
    set: &GrammarSet,
    g: &Grammar,
    i: usize,
    f: &spec::FramePhaseSpec,
) -> Option<String> {
    let sample = f.sample.as_ref()?;
    let label = format!(
        "{} frame_phase {} ({:?})",
        g.origin,
        i + 1,
        crate::base::text::truncate(sample, 61)
    );
    let got = set.knowledge().phase_from_traceback(sample);
    match got {
        Some(p) if p.name() == f.phase => None,
        Some(p) => Some(format!("{label}: phase `{p}`, expected `{}`", f.phase)),
        None => Some(format!(
            "{label}: no frame → phase entry names this frame (expected `{}`; a frame line is `  File \"…/file.py\", line N, in function`)",
            f.phase
        )),
    }
}

/// What is wrong with one sample (nothing when it passes).
fn check_sample(set: &GrammarSet, g: &Grammar, i: usize, sample: &SampleSpec) -> Vec<String> {
    let mut failures = Vec::new();
    {
        let got = set.match_text(&sample.line);
        let label = format!(
            "{} sample {} ({:?})",
            g.origin,
            i + 1,
            crate::base::text::truncate(&sample.line, 61)
        );
        // The stamp must read with the declared formats, whether or not an event matched:
        // a format that silently gives no time would leave every line of the file untimed.
        let prefix = got
            .as_ref()
            .and_then(|m| m.prefix.clone())
            .or_else(|| set.find_prefix(&sample.line, sample.line.len()));
        if let Some(e) = prefix.as_ref().and_then(|p| p.stamp_error.as_ref()) {
            failures.push(format!("{label}: {e}"));
        }
        if let Some(want) = &sample.time {
            let have = prefix
                .as_ref()
                .and_then(|p| p.ts)
                .map(|t| t.format("%Y-%m-%d %H:%M:%S%.f").to_string())
                .unwrap_or_default();
            let want_t = NaiveDateTime::parse_from_str(want, "%Y-%m-%d %H:%M:%S%.f").ok();
            let have_t = prefix.as_ref().and_then(|p| p.ts);
            if want_t.is_none() || want_t != have_t {
                failures.push(format!("{label}: time `{have}`, expected `{want}`"));
            }
        }
        match (&sample.kind, got) {
            (None, None) => {}
            (None, Some(m)) => {
                failures.push(format!("{label}: expected no event, got `{}`", m.kind))
            }
            (Some(k), None) => failures.push(format!(
                "{label}: expected `{k}`, nothing matched\n{}",
                explain_miss(set, &sample.line)
            )),
            (Some(k), Some(m)) => {
                if &m.kind != k {
                    failures.push(format!("{label}: expected `{k}`, got `{}`", m.kind));
                    return failures;
                }
                if let Some(r) = &sample.rank {
                    let got_rank = m
                        .prefix
                        .as_ref()
                        .and_then(|p| p.rank.clone())
                        .or_else(|| {
                            set.knowledge()
                                .line_rank(g.id(), &m.kind, &m.fields, &m.message)
                        })
                        .map(|r| r.to_string())
                        .unwrap_or_default();
                    if &got_rank != r {
                        failures.push(format!("{label}: rank `{got_rank}`, expected `{r}`"));
                    }
                }
                for (name, want) in &sample.fields {
                    let have = m.fields.get(name);
                    let ok = match (want, have) {
                        (toml::Value::Integer(w), Some(v)) => v.as_i64() == Some(*w),
                        (toml::Value::Float(w), Some(v)) => v
                            .as_f64()
                            .is_some_and(|h| (h - w).abs() <= 1e-9 * w.abs().max(1.0)),
                        (toml::Value::String(w), Some(FieldValue::Text(h))) => w == h,
                        _ => false,
                    };
                    if !ok {
                        failures.push(format!(
                            "{label}: field `{name}` = {have:?}, expected {want}"
                        ));
                    }
                }
            }
        }
    }
    failures
}

/// For a line no event matched: how far each candidate pattern got, as lnav does — the
/// longest leading part of the regex (cut at a top-level boundary) that still matches.
pub fn explain_miss(set: &GrammarSet, line: &str) -> String {
    let mut out = String::new();
    for g in &set.grammars {
        // `events` are compiled from `spec.event` in order.
        for (spec, ev) in g.spec.event.iter().zip(&g.events) {
            if !spec.literals.iter().any(|l| line.contains(l.as_str())) {
                continue;
            }
            let pattern = ev.regex.as_str();
            let mut best = 0;
            for cut in pattern_cut_points(pattern) {
                if Regex::new(&pattern[..cut]).is_ok_and(|r| r.is_match(line)) {
                    best = cut;
                }
            }
            out.push_str(&format!(
                "  {}:{}: matched `{}`, failed at `{}`\n",
                g.spec.id,
                ev.kind,
                &pattern[..best],
                crate::base::text::truncate(&pattern[best..], 41)
            ));
        }
    }
    if out.is_empty() {
        out.push_str("  no event literal occurs in the line\n");
    }
    out
}

/// Byte offsets in a regex where cutting it leaves a valid pattern prefix: after each
/// top-level atom (a char, an escape, a group or class, with its quantifier).
fn pattern_cut_points(p: &str) -> Vec<usize> {
    let b = p.as_bytes();
    let mut cuts = Vec::new();
    let mut i = 0;
    let mut depth = 0i32;
    let mut in_class = false;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'[' if !in_class => {
                in_class = true;
                i += 1
            }
            b']' if in_class => {
                in_class = false;
                i += 1
            }
            b'(' if !in_class => {
                depth += 1;
                i += 1
            }
            b')' if !in_class => {
                depth -= 1;
                i += 1
            }
            _ => i += 1,
        }
        while i < b.len() && !in_class && matches!(b[i], b'?' | b'*' | b'+') {
            i += 1;
        }
        if depth == 0 && !in_class && i <= b.len() && p.is_char_boundary(i.min(b.len())) {
            cuts.push(i.min(b.len()));
        }
    }
    cuts
}

#[cfg(test)]
mod prefilter_tests {
    use super::*;

    #[test]
    fn shared_fragment_first_and_plain_literals_whole() {
        let lits: Vec<String> = ["CUDA out of memory", "CUDA error", "graph begin"]
            .map(String::from)
            .to_vec();
        // By hand: "CUDA " (5 bytes) is the longest window both CUDA literals hold, so it
        // covers two at once; "graph begin" is lower-case letters and spaces only, so it
        // has no usable fragment and is looked for whole (those come first).
        let got = prefilter_fragments(&lits, &["INFO "]);
        assert_eq!(got, vec![b"graph begin".to_vec(), b"CUDA ".to_vec()]);
    }

    #[test]
    fn ordinary_text_is_never_a_fragment() {
        // "NCCL INFO x" holds "INFO " like the record start given as ordinary, so that
        // fragment is refused; "NCCL" (uncovered by anything ordinary) is taken instead,
        // and since both literals hold "NCCL " it stands for both.
        let lits: Vec<String> = ["NCCL INFO x", "NCCL WARN"].map(String::from).to_vec();
        let got = prefilter_fragments(&lits, &["INFO "]);
        assert_eq!(got, vec![b"NCCL ".to_vec()]);
    }

    #[test]
    fn every_builtin_frame_phase_entry_is_proved_by_its_sample() {
        // Each `[[frame_phase]]` entry of every built-in grammar carries a frame line, and
        // `grammars check` reads that line to the entry's phase.
        let gs = GrammarSet::builtin().unwrap();
        let mut n = 0;
        for (i, g) in gs.grammars.iter().enumerate() {
            for f in &g.spec.frame_phase {
                assert!(
                    f.sample.is_some(),
                    "{}: frame_phase {:?}/{:?} has no sample",
                    g.origin,
                    f.function,
                    f.file
                );
                n += 1;
            }
            assert_eq!(check_samples(&gs, i), Vec::<String>::new(), "{}", g.origin);
        }
        assert!(n > 40, "{n} frame_phase entries");
    }

    #[test]
    fn a_frame_sample_of_the_wrong_phase_fails_the_check() {
        let toml = r#"
id = "fx"
name = "frame sample check"
[[frame_phase]]
function = "warm_the_pool"
phase = "kv_cache"
sample = '  File "/x/pool.py", line 3, in warm_the_pool'
[[frame_phase]]
function = "fill_the_pool"
phase = "cuda_graph"
sample = '  File "/x/pool.py", line 9, in warm_the_pool'
[[frame_phase]]
function = "drain"
phase = "ready"
sample = 'not a frame line'
"#;
        let g = Grammar::from_toml(toml, "fx.toml").unwrap();
        let gs = GrammarSet::new(vec![g]).unwrap();
        let failures = check_samples(&gs, 0);
        assert_eq!(failures.len(), 2, "{failures:?}");
        assert!(failures[0].contains("phase `kv_cache`, expected `cuda_graph`"));
        assert!(failures[1].contains("no frame → phase entry names this frame"));
    }

    #[test]
    fn every_builtin_event_regex_compiles() {
        // Built-in event regexes are compiled on first use; this is where one that parses
        // but does not compile (too large) would be found.
        let gs = GrammarSet::builtin().unwrap();
        let mut n = 0;
        for g in &gs.grammars {
            for e in &g.events {
                assert!(e.regex.get().is_some(), "{}: {}", g.origin, e.kind);
                n += 1;
            }
        }
        assert!(n > 100, "{n} built-in events");
    }

    #[test]
    fn a_user_regex_too_large_to_compile_is_a_load_error() {
        let toml = r#"
id = "big"
name = "Big"
description = "one event regex over the size limit"
[[event]]
kind = "weights_loaded"
literals = ["Loaded"]
regex = '(?:\w{100}){200}Loaded'
"#;
        let lazy = EventRegex::new(r"(?:\w{100}){200}Loaded", false).unwrap();
        assert!(
            lazy.get().is_none(),
            "the pattern must exceed the size limit"
        );
        match Grammar::from_toml(toml, "/tmp/big.toml") {
            Err(GrammarError::Regex { origin, kind, .. }) => {
                assert_eq!(
                    (origin.as_str(), kind.as_str()),
                    ("/tmp/big.toml", "weights_loaded")
                )
            }
            other => panic!("expected a regex error, got {:?}", other.err()),
        }
    }

    #[test]
    fn every_builtin_literal_holds_a_fragment() {
        let gs = GrammarSet::builtin().unwrap();
        let (frags, literal_count) = {
            let mut lits = Vec::new();
            let mut ordinary = Vec::new();
            for g in &gs.grammars {
                for e in &g.spec.event {
                    lits.extend(e.literals.iter().cloned());
                }
                for p in &g.spec.prefix {
                    ordinary.extend(p.starts_with.iter().cloned());
                }
                for n in &g.spec.noise {
                    ordinary.extend(n.literals.iter().cloned());
                }
            }
            lits.dedup();
            let ordinary: Vec<&str> = ordinary.iter().map(String::as_str).collect();
            let f = prefilter_fragments(&lits, &ordinary);
            for l in &lits {
                assert!(
                    f.iter()
                        .any(|x| memchr::memmem::find(l.as_bytes(), x).is_some()),
                    "{l} holds no fragment"
                );
            }
            (f, lits.len())
        };
        // Fewer automata than the literals need: the point of the fragments.
        assert!(
            frags.len().div_ceil(LITERALS_PER_GROUP) < literal_count.div_ceil(LITERALS_PER_GROUP),
            "{} fragments for {literal_count} literals",
            frags.len()
        );
        // And every literal, written on a line of its own, is a hit of the prefilter.
        for g in &gs.grammars {
            for e in &g.spec.event {
                for l in &e.literals {
                    let line = format!("x {l} y\n");
                    assert!(!gs.literal_hits(line.as_bytes()).is_empty(), "{l}");
                }
            }
        }
    }
}
