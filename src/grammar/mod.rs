//! Grammars: a server's log wording as data (`grammars/*.toml`), compiled into one matcher.
//!
//! A grammar has three layers. *Prefixes* say how a record starts and what it tells about
//! time, rank and process; they are shared by all grammars, because one stream often mixes
//! families (SGLang stamps in front of vendored vLLM lines, NCCL lines between them).
//! *Events* are a literal (what the buffer scan looks for) plus a regex with named captures
//! applied only to lines that hit the literal. *Noise* literals mark lines that are known
//! and deliberately ignored, so "lines not understood" means what it says.

mod any_literal;
mod block_prefilter;
// Written by a test (`block_prefilter`), which compares it byte for byte.
#[rustfmt::skip]
mod block_prefilter_builtin;
mod check;
mod event_memo;
mod knowledge;
mod lazy_regex;
pub mod memory_model;
mod miss;
mod pattern_facts;
// Written by a test (`pattern_facts`), which compares it byte for byte.
#[rustfmt::skip]
mod pattern_facts_builtin;
mod per_line;
mod prefilter;
mod prefix;
mod prefix_check;
mod prefix_set;
pub(crate) mod remedy;
mod set;
mod settings_check;
mod spec;
mod stamp;
mod teddy;

use std::path::Path;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, Anchored, Input, StartKind};
use chrono::{NaiveDate, NaiveDateTime, NaiveTime};
use regex::Regex;

pub use check::*;
pub(crate) use event_memo::EventMemo;
pub(crate) use knowledge::{
    captured_failure, phase_of_stack, ConfigEscape, ConfigRule, ConfigSyntax, GrammarKnowledge,
    OutcomeRule, OutcomeWord, ProcessRole, RankEvidence,
};
pub use knowledge::{FrameRule, Knowledge};
use lazy_regex::LazyRegex;
pub(crate) use per_line::LineMemo;
pub use prefix::{stamp_step_ms, PrefixInfo};
pub(crate) use prefix::{CompiledPrefix, ReadContext, StampFormat};
use prefix_set::PrefixSet;
pub use set::*;
pub(crate) use spec::{GrammarSpec, SampleSpec, Unit};

use crate::base::event::{FieldValue, Fields, Name, Phase, Rank};
use crate::base::units;

// The grammars compiled into the binary: every `grammars/*.toml`, found by build.rs.
include!(concat!(env!("OUT_DIR"), "/builtin_grammars.rs"));

/// Why a grammar (or the set it joins) was refused.
#[derive(Debug, thiserror::Error)]
#[expect(
    missing_docs,
    reason = "the #[error] texts say what each variant and field is"
)]
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
    #[error("{origin}: event `{kind}`: units.{field} = \"{unit}\" names no capture of its regex: capture `{field}` with `(?P<{field}>…)`, or remove it from `units`")]
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

pub(crate) struct CompiledEvent {
    pub(crate) kind: Name,
    pub(crate) regex: LazyRegex,
    /// The unit of each named capture, in the order of `regex.field_names()`: read for
    /// every capture of every event line, where a lookup by name compared strings.
    pub(crate) capture_units: Box<[Unit]>,
    /// Following lines without a record start belong to this record (tracebacks).
    pub(crate) traceback: bool,
    /// The event's `set` constants, as the fields every matched line starts from (names
    /// shared, not copied).
    pub(crate) preset: crate::base::event::Fields,
}

const DEFAULT_DATE_FORMAT: &str = "%Y-%m-%d";
const DEFAULT_TIME_FORMAT: &str = "%H:%M:%S%.f";

/// A strftime-style format chrono can parse with (no unknown `%` directive), parsed.
fn read_format(
    origin: &str,
    id: &str,
    field: &str,
    format: &str,
) -> Result<StampFormat, GrammarError> {
    StampFormat::new(format).ok_or_else(|| GrammarError::Knowledge {
        origin: origin.into(),
        message: format!("prefix `{id}`: {field} `{format}` is not a strftime format chrono reads"),
    })
}

/// One grammar, parsed and checked: what one server or component prints, and how to read
/// it.
pub struct Grammar {
    /// The grammar as written (the TOML's tables), after its checks.
    pub spec: GrammarSpec,
    /// Where it came from: `builtin:sglang` or a file path.
    pub origin: String,
    pub(crate) events: Vec<CompiledEvent>,
    pub(crate) prefixes: Vec<CompiledPrefix>,
    pub(crate) frames: Vec<FrameRule>,
    pub(crate) outcomes: Vec<OutcomeRule>,
    /// What its events, processes and configuration dumps mean.
    pub(crate) know: GrammarKnowledge,
    /// Settings that explain failures, and settings that size memory.
    pub(crate) remedy: remedy::RemedyRules,
    /// `spec.id`, shared by every event the grammar reads.
    pub(crate) name: Name,
}

/// The largest grammar file read (the largest built-in one is under 40 KB).
pub(crate) const MAX_GRAMMAR_FILE: u64 = 4 << 20;

/// Events and prefixes all loaded grammars may hold together. Each costs about 60 KiB
/// once compiled (10,000 events took 604 MiB, 10,000 prefixes 753 MiB); the built-in
/// grammars have 119 events and 14 prefixes.
pub(crate) const MAX_EVENTS: usize = 1_000;
pub(crate) const MAX_PREFIXES: usize = 256;

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

/// A user grammar's names reach the terminal (`grammars list`, the summary's "read as",
/// the events' kinds and fields): cleaned once, here, as log lines are; and its events'
/// literals are trimmed as the lines they are looked for in are.
fn clean_names(spec: &mut GrammarSpec) {
    spec.id = crate::base::text::sanitize(&spec.id);
    spec.name = crate::base::text::sanitize(&spec.name);
    spec.description = crate::base::text::sanitize(&spec.description);
    for ev in &mut spec.event {
        ev.kind = crate::base::text::sanitize(&ev.kind);
        for v in ev.set.values_mut() {
            *v = crate::base::text::sanitize(v);
        }
        // The scan reads a line with its trailing white space trimmed, so a literal's own
        // (`"ChildFailedError: "`) would miss the line that ends there; the regex still
        // decides what matches.
        for l in &mut ev.literals {
            l.truncate(l.trim_end().len());
        }
    }
}

/// Whether a grammar of this origin has its regexes compiled as it loads: a user's, so
/// that a pattern that parses but is too large to compile is an error at load, not a rule
/// that silently matches nothing. A built-in grammar's are compiled on first use, each
/// compiled by a test (`every_builtin_regex_compiles`).
pub(super) fn compiled_at_load(origin: &str) -> bool {
    !origin.starts_with("builtin:")
}

/// One `[[event]]`: its literals present, its regex parsed (and compiled now for a user's
/// grammar), every unit naming a capture of the regex.
fn compile_event(origin: &str, ev: &spec::EventSpec) -> Result<CompiledEvent, GrammarError> {
    if ev.literals.is_empty() || ev.literals.iter().any(|l| l.is_empty()) {
        return Err(GrammarError::NoLiteral {
            origin: origin.into(),
            kind: ev.kind.clone(),
        });
    }
    let regex =
        LazyRegex::new(&ev.regex, compiled_at_load(origin)).map_err(|e| GrammarError::Regex {
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
                unit: unit.name().to_string(),
            });
        }
    }
    let capture_units = (regex.field_names().iter())
        .map(|name| ev.units.get(&**name).copied().unwrap_or(Unit::Text))
        .collect();
    Ok(CompiledEvent {
        kind: Name::from(ev.kind.as_str()),
        regex,
        capture_units,
        traceback: ev.traceback,
        preset: ev
            .set
            .iter()
            .map(|(k, v)| (k.as_str(), FieldValue::Text(v.as_str().into())))
            .collect(),
    })
}

/// One `[[prefix]]`: its regex compiled with only the captures the reader reads, each
/// date-time format one chrono reads and backed by its capture.
fn compile_prefix(origin: &str, p: &spec::PrefixSpec) -> Result<CompiledPrefix, GrammarError> {
    let regex = LazyRegex::new(&p.regex, compiled_at_load(origin)).map_err(|e| {
        GrammarError::PrefixRegex {
            origin: origin.into(),
            id: p.id.clone(),
            message: e.to_string(),
        }
    })?;
    let has = |n: &str| regex.capture_names().any(|c| c == n);
    knowledge::only_read_captures(
        origin,
        &format!("prefix `{}`", p.id),
        regex.capture_names(),
        knowledge::PREFIX_CAPTURES,
    )?;
    // Each format given, parsed (and checked) in the order written; the defaults after.
    let mut read: [Option<StampFormat>; 3] = [None, None, None];
    for ((field, format, capture), slot) in [
        ("date_format", &p.date_format, "date"),
        ("time_format", &p.time_format, "time"),
        ("stamp_format", &p.stamp_format, "stamp"),
    ]
    .into_iter()
    .zip(&mut read)
    {
        if let Some(f) = format {
            *slot = Some(read_format(origin, &p.id, field, f)?);
            if capture == "stamp" {
                stamp::check_stamp_has_year(origin, &p.id, f)?;
            }
            if !has(capture) {
                return Err(GrammarError::Knowledge {
                    origin: origin.into(),
                    message: format!(
                        "prefix `{}`: {field} given but the regex has no `{capture}` capture",
                        p.id
                    ),
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
    let [date, time, stamp] = read;
    let date = match date {
        Some(f) => f,
        None => read_format(origin, &p.id, "date_format", DEFAULT_DATE_FORMAT)?,
    };
    let time = match time {
        Some(f) => f,
        None => read_format(origin, &p.id, "time_format", DEFAULT_TIME_FORMAT)?,
    };
    Ok(CompiledPrefix::new(&p.id, regex, date, time, stamp))
}

/// An event's `set.phase` names a phase and its `set.outcome` an outcome word.
fn check_set_words(origin: &str, events: &[spec::EventSpec]) -> Result<(), GrammarError> {
    for ev in events {
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
                        "event `{}`: set.outcome `{o}` is not consequence, terminated, stalled or failed",
                        ev.kind
                    ),
                });
            }
        }
    }
    Ok(())
}

/// The TOML a built-in grammar (origin `builtin:NAME`) was compiled from, as shipped:
/// what `rankscope grammars show` prints, so a grammar's author can read the wordings a
/// built-in grammar already reads without the source tree.
pub fn builtin_text(origin: &str) -> Option<&'static str> {
    let stem = origin.strip_prefix("builtin:")?;
    BUILTIN
        .iter()
        .find(|(s, _, _)| *s == stem)
        .map(|(_, t, _)| *t)
}

impl Grammar {
    /// Every regex the grammar holds, each with what it is (its tests).
    #[cfg(test)]
    pub(crate) fn every_regex(&self) -> Vec<(String, &LazyRegex)> {
        let mut out: Vec<(String, &LazyRegex)> = Vec::new();
        out.extend((self.events.iter()).map(|e| (format!("event {}", e.kind), &e.regex)));
        out.extend((self.prefixes.iter()).map(|p| (format!("prefix {}", p.id), &p.regex)));
        out.extend((self.outcomes.iter()).map(|o| ("an outcome".to_string(), &o.regex)));
        out.extend((self.know.processes.iter()).map(|p| ("a process".to_string(), &p.name)));
        let suffixes = self.know.suffixes.iter().chain(&self.know.field_suffixes);
        out.extend(suffixes.map(|r| ("a suffix".to_string(), r)));
        out
    }

    /// Reads and checks a grammar's TOML; `origin` names it in errors (`builtin:sglang` or
    /// the file's path).
    pub fn from_toml(text: &str, origin: &str) -> Result<Grammar, GrammarError> {
        let spec: GrammarSpec = toml::from_str(text).map_err(|e| GrammarError::Toml {
            origin: origin.to_string(),
            message: match e.span().and_then(|at| table_at(text, at.start)) {
                Some(table) => format!("{table}: {}", toml_hint(e.to_string())),
                None => toml_hint(e.to_string()),
            },
        })?;
        Self::from_spec(spec, origin)
    }

    /// A built-in grammar (build.rs's `BUILTIN`: its file stem, TOML, and the same as JSON),
    /// read from its JSON; from its TOML where the JSON does not read (empty: the TOML did
    /// not parse at build time), so that its error is the one a user's grammar gets.
    pub(crate) fn from_builtin(
        stem: &str,
        toml: &str,
        json: &str,
    ) -> Result<Grammar, GrammarError> {
        let origin = format!("builtin:{stem}");
        match serde_json::from_str::<GrammarSpec>(json) {
            Ok(spec) => Self::from_spec(spec, &origin),
            Err(_) => Self::from_toml(toml, &origin),
        }
    }

    /// Checks and compiles a grammar read from its file.
    fn from_spec(mut spec: GrammarSpec, origin: &str) -> Result<Grammar, GrammarError> {
        check_noise(origin, &spec.noise)?;
        // Counted before anything is compiled: compiling is what costs memory.
        check_counts(origin, spec.event.len(), spec.prefix.len())?;
        clean_names(&mut spec);
        let events = spec
            .event
            .iter()
            .map(|ev| compile_event(origin, ev))
            .collect::<Result<Vec<_>, _>>()?;
        let mut prefixes = spec
            .prefix
            .iter()
            .map(|p| compile_prefix(origin, p))
            .collect::<Result<Vec<_>, _>>()?;
        let dated =
            |p: &CompiledPrefix| p.regex.capture_names().any(|c| c == "date" || c == "stamp");
        let prints_dates = prefixes.iter().any(dated);
        for p in &mut prefixes {
            p.grammar_prints_dates = prints_dates;
        }
        let frames = knowledge::compile_frames(origin, &spec.frame_phase)?;
        let outcomes = knowledge::compile_outcomes(origin, &spec.outcome)?;
        let captures: Vec<Vec<&str>> = events
            .iter()
            .map(|e| e.regex.capture_names().collect())
            .collect();
        let know = knowledge::compile_grammar(origin, &spec, &captures)?;
        let mut remedy = remedy::compile(origin, &spec.suspect)?;
        remedy.memory_models.extend(memory_model::compile(
            origin,
            &spec.id,
            spec.memory_model.as_ref(),
        )?);
        check_set_words(origin, &spec.event)?;
        Ok(Grammar {
            name: Name::from(spec.id.as_str()),
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

    pub(crate) fn id(&self) -> &str {
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

/// Stands in for a date no stamp printed, until the loader infers the real one.
pub(crate) const PLACEHOLDER_DATE: NaiveDate = match NaiveDate::from_ymd_opt(2000, 1, 1) {
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

/// serde's message for a unit it does not know, with what the list alone does not say: a
/// count's capture (`tokens`, `count`, a declared word unit such as `blocks`) is `int`.
fn toml_hint(message: String) -> String {
    if message.contains("unknown variant") && message.contains("expected one of `text`, `int`") {
        format!(
            "{message}\n(a capture's unit is how it is printed: the capture of a `tokens`, \
             `count` or declared word-unit figure such as `blocks` is `int`)"
        )
    } else {
        message
    }
}

/// The table a TOML error stands in, as the grammar's other errors name it: `event 3
/// (`kv_cache_alloc`)`, `prefix 1 (`shard`)` — the number of that `[[…]]` header before
/// byte `at`, and its `kind` or `id` when the table gives one. `None` outside any array of
/// tables (the grammar's own keys).
fn table_at(text: &str, at: usize) -> Option<String> {
    // An error at a header (a table missing a field) stands in the table it opens.
    let before = text
        .get(..(at + 1).min(text.len()))
        .or_else(|| text.get(..at))?;
    let header_start = before
        .rfind("\n[")
        .map(|i| i + 1)
        .or_else(|| before.starts_with('[').then_some(0))?;
    let header = text.get(header_start..)?.lines().next()?;
    // A plain table (`[memory_model.pool]`) after an array's entry is that table, not the
    // entry: named as written.
    if !header.trim_start().starts_with("[[") {
        let name = header.trim().strip_prefix('[')?.split(']').next()?.trim();
        return Some(format!("`[{}]`", crate::base::text::sanitize(name)));
    }
    let name = header.trim().strip_prefix("[[")?.split("]]").next()?.trim();
    let header_text = format!("[[{name}]]");
    let number = (text.get(..header_start)?.lines())
        .filter(|l| l.trim().starts_with(&header_text))
        .count()
        + 1;
    // The table's own lines: up to the next header.
    let body = text.get(header_start + header.len()..)?;
    let body = body.split("\n[").next().unwrap_or(body);
    let label = body.lines().find_map(|l| {
        let (key, value) = l.split_once('=')?;
        matches!(key.trim(), "kind" | "id")
            .then(|| value.trim().trim_matches(['"', '\'']).to_string())
    });
    Some(match label {
        Some(l) => format!("{name} {number} (`{}`)", crate::base::text::sanitize(&l)),
        None => format!("{name} {number}"),
    })
}

/// Every `[[noise]]` entry has an `id` (the name errors about it use) and literals, none
/// empty: an empty literal would make every line noise.
fn check_noise(origin: &str, noise: &[spec::NoiseSpec]) -> Result<(), GrammarError> {
    for (i, n) in noise.iter().enumerate() {
        let message = match &n.id {
            None => format!(
                "[[noise]] entry {}: missing field `id`: the name of the entry, which errors \
                 about it use (`id = \"progress\"`)",
                i + 1
            ),
            Some(id) if n.literals.is_empty() || n.literals.iter().any(String::is_empty) => {
                format!(
                    "[[noise]] `{}`: needs literals, none empty (an empty literal would make \
                     every line noise)",
                    crate::base::text::sanitize(id)
                )
            }
            Some(_) => continue,
        };
        return Err(GrammarError::Toml {
            origin: origin.to_string(),
            message,
        });
    }
    Ok(())
}

/// A table a test writes from the built-in grammars (`file`, under `src/grammar/`): written
/// again when the environment variable `variable` is set, and compared with `source`, what
/// the grammars give now, byte for byte either way. `what` names the table in the failure,
/// `test` the test that writes it.
#[cfg(test)]
fn check_written_table(file: &str, source: &str, variable: &str, what: &str, test: &str) {
    let path = format!("{}/src/grammar/{file}", env!("CARGO_MANIFEST_DIR"));
    if std::env::var_os(variable).is_some() {
        std::fs::write(&path, source).expect("the table is written");
    }
    let kept = std::fs::read_to_string(&path).expect("the table is read");
    assert!(
        kept == source,
        "the built-in grammars now give another {what} than {path} holds: write it again \
         with `{variable}=1 cargo test --lib {test}`"
    );
}

#[cfg(test)]
mod tests {
    /// A TOML error inside an `[[event]]` names the event as the grammar's other errors
    /// do: the second `[[event]]` header, its kind.
    #[test]
    fn a_toml_error_names_its_event() {
        let text = "id = \"g\"\nname = \"g\"\n\n[[event]]\nkind = \"ready\"\nliterals = [\"up\"]\nregex = 'up'\n\n[[event]]\nkind = \"kv_x\"\nliterals = [\"kv\"]\nregex = '(?P<b>\\d+) blocks'\nunits = { b = \"blocks\" }\n";
        let e = match super::Grammar::from_toml(text, "t.toml") {
            Err(e) => e.to_string(),
            Ok(_) => panic!("an unknown unit loaded"),
        };
        assert!(
            e.starts_with(
                "t.toml: not a valid grammar: event 2 (`kv_x`): TOML parse error at line 13"
            ),
            "{e}"
        );
        assert_eq!(super::table_at(text, 3), None);
    }

    /// A plain table after an array's entry is named as written, not as that entry (a
    /// `[memory_model.pool]` error read `suspect 1`).
    #[test]
    fn an_error_in_a_plain_table_names_that_table() {
        let text = "[[suspect]]\nkinds = [\"oom\"]\n\n[memory_model.pool]\nfraction = \"f\"\n";
        let at = text.find("fraction").unwrap();
        assert_eq!(
            super::table_at(text, at).as_deref(),
            Some("`[memory_model.pool]`")
        );
        let at = text.find("kinds").unwrap();
        assert_eq!(super::table_at(text, at).as_deref(), Some("suspect 1"));
    }

    /// The JSON build.rs writes of each built-in grammar reads as the same grammar as its
    /// TOML: every field (the specs' `Debug` forms, which print each one) and what compiles
    /// from them (the events' kinds and regexes).
    #[test]
    fn each_builtin_grammar_reads_the_same_from_its_json_as_from_its_toml() {
        assert!(super::BUILTIN.len() >= 8);
        for (stem, toml, json) in super::BUILTIN {
            assert!(!json.is_empty(), "{stem}: build.rs wrote no JSON");
            let from_toml: super::GrammarSpec = toml::from_str(toml).unwrap();
            let from_json: super::GrammarSpec = serde_json::from_str(json).unwrap();
            assert_eq!(format!("{from_json:?}"), format!("{from_toml:?}"), "{stem}");
            let a = super::Grammar::from_builtin(stem, toml, json).unwrap();
            let b = super::Grammar::from_toml(toml, &format!("builtin:{stem}")).unwrap();
            let regexes = |g: &super::Grammar| {
                (g.events.iter())
                    .map(|e| format!("{} {}", e.kind, e.regex.as_str()))
                    .collect::<Vec<_>>()
            };
            assert_eq!(
                (a.origin.as_str(), regexes(&a)),
                (b.origin.as_str(), regexes(&b))
            );
            assert!(!regexes(&a).is_empty(), "{stem}");
        }
    }

    /// A built-in grammar whose TOML did not parse at build time (no JSON) is read from
    /// its TOML, and its error is the TOML parser's, naming the built-in grammar.
    #[test]
    fn a_builtin_grammar_without_json_reports_its_toml_error() {
        let e = match super::Grammar::from_builtin("broken", "id = \"b\"\nname = ", "") {
            Err(e) => e.to_string(),
            Ok(_) => panic!("a broken grammar loaded"),
        };
        assert!(e.starts_with("builtin:broken: "), "{e}");
        assert!(e.contains("TOML parse error at line 2"), "{e}");
    }
}
