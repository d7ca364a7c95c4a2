//! Typed start-up events: what a grammar turns a log record into.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use chrono::NaiveDateTime;
use serde::Serialize;

pub use super::name::Name;

// Where every layer has always found them.
pub(crate) use super::fields::{FieldName, FieldValue, Fields};

/// Start-up phases in order (DESIGN.md's canonical names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// From the first line to the process group's set-up.
    Launch,
    /// Setting up the process group and the communicators (NCCL).
    DistInit,
    /// Loading the model's weights onto the GPUs.
    WeightLoad,
    /// Sizing and allocating the KV cache.
    KvCache,
    /// Capturing CUDA graphs.
    CudaGraph,
    /// Serving: the server printed its ready line.
    Ready,
}

impl Phase {
    pub(crate) const ALL: [Phase; 6] = [
        Phase::Launch,
        Phase::DistInit,
        Phase::WeightLoad,
        Phase::KvCache,
        Phase::CudaGraph,
        Phase::Ready,
    ];
    /// The phase's canonical name (`weight_load`), as the JSON and the grammars spell it.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Launch => "launch",
            Phase::DistInit => "dist_init",
            Phase::WeightLoad => "weight_load",
            Phase::KvCache => "kv_cache",
            Phase::CudaGraph => "cuda_graph",
            Phase::Ready => "ready",
        }
    }
    /// The phase of a canonical name (`kv_cache`), as grammar files spell it.
    pub(crate) fn from_name(name: &str) -> Option<Phase> {
        Phase::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// The phases a run's server goes through, in canonical order: those its grammars declare
/// and those its lines reached, with `launch` and `ready` always. "The next phase" of a
/// completed one is the next of these, not of the fixed order: a server with no CUDA-graph
/// step goes from kv_cache to ready.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PhaseOrder(u8);

impl PhaseOrder {
    /// Every canonical phase: what a run read by no server grammar is assumed to go through.
    pub(crate) const CANONICAL: PhaseOrder = PhaseOrder((1 << Phase::ALL.len()) - 1);

    /// `launch`, `ready` and the phases given.
    pub(crate) fn of(phases: impl IntoIterator<Item = Phase>) -> PhaseOrder {
        let bit = |p: Phase| 1u8 << (p as u8);
        let base = bit(Phase::Launch) | bit(Phase::Ready);
        PhaseOrder(phases.into_iter().fold(base, |acc, p| acc | bit(p)))
    }

    pub(crate) fn has(self, p: Phase) -> bool {
        self.0 & (1 << (p as u8)) != 0
    }

    /// The phase after `p`: the next of these phases, `ready` after the last.
    pub(crate) fn next(self, p: Phase) -> Phase {
        Phase::ALL
            .into_iter()
            .find(|q| *q > p && self.has(*q))
            .unwrap_or(Phase::Ready)
    }
}

impl Default for PhaseOrder {
    fn default() -> PhaseOrder {
        PhaseOrder::CANONICAL
    }
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether an event opens its phase, closes it, or falls inside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Edge {
    Begin,
    Inside,
    End,
}

impl Edge {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Edge::Begin => "begins",
            Edge::End => "ends",
            Edge::Inside => "inside",
        }
    }
    /// As grammar files spell it: `begins`, `ends`, `inside`.
    pub(crate) fn from_name(name: &str) -> Option<Edge> {
        Some(match name {
            "begins" => Edge::Begin,
            "ends" => Edge::End,
            "inside" => Edge::Inside,
            _ => return None,
        })
    }
}

/// How a figure's values are read, checked against a capture's unit, summed and printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Measure {
    Bytes,
    Count,
    Seconds,
}

/// What a figure is counted in, as the JSON's `unit` names it: `bytes`, `seconds`,
/// `tokens`, `count`, or a word a grammar declares for what its server counts (`pages`,
/// `blocks`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum FigureUnit {
    Bytes,
    Seconds,
    Tokens,
    Count,
    /// A count of something the grammar names (`pages`): read as `int` like `count`.
    Named(String),
}

impl FigureUnit {
    /// A unit as a grammar's `[[figure]]` spells it: one of the four above, or a
    /// lower-case word (`pages`, `kv_blocks`) naming what is counted. `None` for anything
    /// else, including the units a capture is printed in (`GiB`, `s`, `int`).
    pub(crate) fn from_name(name: &str) -> Option<FigureUnit> {
        Some(match name {
            "bytes" => FigureUnit::Bytes,
            "seconds" => FigureUnit::Seconds,
            "tokens" => FigureUnit::Tokens,
            "count" => FigureUnit::Count,
            // The capture units that are words: a figure is never counted in these.
            "s" | "int" | "float" | "text" | "size" => return None,
            w if w.starts_with(|c: char| c.is_ascii_lowercase())
                && w.chars().all(|c| c.is_ascii_lowercase() || c == '_') =>
            {
                FigureUnit::Named(w.to_string())
            }
            _ => return None,
        })
    }
    pub(crate) fn measure(&self) -> Measure {
        match self {
            FigureUnit::Bytes => Measure::Bytes,
            FigureUnit::Seconds => Measure::Seconds,
            FigureUnit::Tokens | FigureUnit::Count | FigureUnit::Named(_) => Measure::Count,
        }
    }
}

/// Which way a figure moving is bad news: `diff` calls a candidate worse on it, and only
/// a figure with a direction can be a run's first divergence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum WorseWhen {
    /// More is worse (memory used, time taken).
    More,
    /// Less is worse (memory free, KV capacity).
    Less,
    /// Neither way is worse (a setting the server reports): its deltas are shown, never
    /// counted as a regression nor taken as the first divergence.
    Neither,
}

impl WorseWhen {
    pub(crate) fn name(self) -> &'static str {
        match self {
            WorseWhen::More => "more",
            WorseWhen::Less => "less",
            WorseWhen::Neither => "neither",
        }
    }
    pub(crate) fn from_name(name: &str) -> Option<WorseWhen> {
        [WorseWhen::More, WorseWhen::Less, WorseWhen::Neither]
            .into_iter()
            .find(|w| w.name() == name)
    }
    /// Whether a change of `delta` is for the worse.
    pub(crate) fn is_worse(self, delta: f64) -> bool {
        match self {
            WorseWhen::More => delta > 0.0,
            WorseWhen::Less => delta < 0.0,
            WorseWhen::Neither => false,
        }
    }
}

/// One figure of the vocabulary: its name, its unit and which direction is worse.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FigureDef {
    pub(crate) name: std::borrow::Cow<'static, str>,
    pub(crate) unit: FigureUnit,
    pub(crate) worse: WorseWhen,
}

/// The figures analysis and every renderer know by name, declared in one table
/// (`BUILTIN_FIGURES`, indexed by this enum). Grammars extend the vocabulary with their
/// own (`[[figure]]`, a `FigureName::Declared`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BuiltinFigure {
    /// Memory the phase took (driver or allocator view, as the server says).
    MemUsage,
    /// Free memory as the phase began.
    AvailBefore,
    /// Free memory as the phase ended.
    AvailAfter,
    /// KV-cache capacity in tokens.
    Tokens,
    /// Memory the server set aside for the KV cache.
    KvAvail,
    /// Memory the KV cache took.
    KvSize,
    /// The duration the server printed for the phase.
    Elapsed,
}

const fn builtin(name: &'static str, unit: FigureUnit, worse: WorseWhen) -> FigureDef {
    FigureDef {
        name: std::borrow::Cow::Borrowed(name),
        unit,
        worse,
    }
}

/// The built-in figures, in `BuiltinFigure`'s order (docs/grammars.md lists them).
pub(crate) static BUILTIN_FIGURES: [FigureDef; 7] = [
    builtin("mem_usage", FigureUnit::Bytes, WorseWhen::More),
    builtin("avail_before", FigureUnit::Bytes, WorseWhen::Less),
    builtin("avail_after", FigureUnit::Bytes, WorseWhen::Less),
    builtin("tokens", FigureUnit::Tokens, WorseWhen::Less),
    builtin("kv_avail", FigureUnit::Bytes, WorseWhen::Less),
    builtin("kv_size", FigureUnit::Bytes, WorseWhen::Less),
    builtin("elapsed", FigureUnit::Seconds, WorseWhen::More),
];

impl BuiltinFigure {
    pub(crate) const ALL: [BuiltinFigure; 7] = [
        BuiltinFigure::MemUsage,
        BuiltinFigure::AvailBefore,
        BuiltinFigure::AvailAfter,
        BuiltinFigure::Tokens,
        BuiltinFigure::KvAvail,
        BuiltinFigure::KvSize,
        BuiltinFigure::Elapsed,
    ];
    pub(crate) fn def(self) -> &'static FigureDef {
        &BUILTIN_FIGURES[self as usize]
    }
    pub(crate) fn name(self) -> &'static str {
        match &self.def().name {
            std::borrow::Cow::Borrowed(n) => n,
            std::borrow::Cow::Owned(_) => "",
        }
    }
    pub(crate) fn from_name(name: &str) -> Option<BuiltinFigure> {
        BuiltinFigure::ALL.into_iter().find(|f| f.name() == name)
    }
}

/// A figure's name as the model carries it: a built-in one, or one a grammar declared
/// (which brings its unit and direction along, so no table is looked up downstream).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum FigureName {
    /// A figure the tool knows by name (`BUILTIN_FIGURES`).
    Builtin(BuiltinFigure),
    /// A figure a grammar's `[[figure]]` declared.
    Declared(std::sync::Arc<FigureDef>),
}

impl FigureName {
    pub(crate) fn def(&self) -> &FigureDef {
        match self {
            FigureName::Builtin(b) => b.def(),
            FigureName::Declared(d) => d,
        }
    }
    /// The figure's name, as grammars and the JSON spell it.
    pub fn name(&self) -> &str {
        &self.def().name
    }
    pub(crate) fn unit(&self) -> &FigureUnit {
        &self.def().unit
    }
    pub(crate) fn measure(&self) -> Measure {
        self.unit().measure()
    }
    pub(crate) fn worse(&self) -> WorseWhen {
        self.def().worse
    }
    /// The built-in figure of this name (grammars cannot declare one of these names).
    pub(crate) fn builtin(name: &str) -> Option<FigureName> {
        BuiltinFigure::from_name(name).map(FigureName::Builtin)
    }
}

impl PartialEq<str> for FigureName {
    fn eq(&self, other: &str) -> bool {
        self.name() == other
    }
}

impl PartialEq<&str> for FigureName {
    fn eq(&self, other: &&str) -> bool {
        self.name() == *other
    }
}

impl fmt::Display for FigureName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The parallelism dimensions SGLang and vLLM name a rank by, in display order.
pub(crate) const TAG_ORDER: [&str; 6] = ["DP", "PP", "ATTN_CP", "MOE_DP", "TP", "EP"];

/// A rank is the set of its tags (`DP1 PP0 TP3`), parsed in any order and kept in
/// `TAG_ORDER` so that ranks compare and sort the same whatever order a server printed.
#[derive(Clone, Debug, Default)]
pub struct Rank {
    /// (index into TAG_ORDER or 255 for an unknown tag, tag name, number). Shared: a
    /// rank is made for each of its events and kept in every map keyed by rank, and the
    /// scan gives a file's consecutive events of one rank the same list
    /// (`ingest::scan::merge`'s `Shared`).
    tags: Arc<[(u8, TagName, u32)]>,
}

/// `DP0_PP1_TP2` as `DP0`, `PP1`, `TP2`: an underscore after a digit separates tags, one
/// inside a name (`ATTN_CP1`) does not.
fn split_after_digits(word: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(word);
    std::iter::from_fn(move || {
        let w = rest?;
        let cut = (w.as_bytes().windows(2)).position(|p| p[0].is_ascii_digit() && p[1] == b'_');
        match cut {
            Some(i) => {
                rest = w.get(i + 2..).filter(|r| !r.is_empty());
                w.get(..=i)
            }
            None => rest.take(),
        }
    })
}

/// A tag's name: a known one (`TAG_ORDER`, `engine`, `rank`) is the constant itself, so
/// that a rank, made for every event and cloned into every map keyed by rank, costs one
/// allocation (its tag list) and not one more per tag.
type TagName = Cow<'static, str>;

/// A tag's place in `TAG_ORDER` (255 for any other) and its name.
fn tag(name: &str) -> (u8, TagName) {
    if let Some((p, known)) = TAG_ORDER.iter().enumerate().find(|(_, t)| **t == name) {
        return (p as u8, Cow::Borrowed(known));
    }
    match [ENGINE, GLOBAL].into_iter().find(|t| *t == name) {
        Some(known) => (255, Cow::Borrowed(known)),
        None => (255, Cow::Owned(name.to_string())),
    }
}

impl Rank {
    pub(crate) fn from_pairs<S: AsRef<str>, I: IntoIterator<Item = (S, u32)>>(pairs: I) -> Rank {
        let mut tags: Vec<(u8, TagName, u32)> = pairs
            .into_iter()
            .map(|(name, n)| {
                let (order, name) = tag(name.as_ref());
                (order, name, n)
            })
            .collect();
        tags.sort();
        tags.dedup();
        Rank { tags: tags.into() }
    }

    /// Parses `" DP1 TP3"`-style tag lists; `None` when the text holds no tag. Tags may
    /// also be joined by `_` (`DP0_PP1_TP2`, a process name): an underscore after a digit
    /// separates, one inside a name (`ATTN_CP1`) does not.
    pub fn parse_tags(text: &str) -> Option<Rank> {
        let mut pairs = Vec::new();
        for word in text.split_whitespace().flat_map(split_after_digits) {
            let split = word.find(|c: char| c.is_ascii_digit())?;
            let (name, num) = word.split_at(split);
            // Tags are upper-case names (`TP`, `ATTN_CP`); `rank=2` is not one.
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_uppercase() || c == '_') {
                return None;
            }
            pairs.push((name, num.parse().ok()?));
        }
        if pairs.is_empty() {
            None
        } else {
            Some(Rank::from_pairs(pairs))
        }
    }

    /// The engine / driver process of a server that is not itself a numbered rank
    /// (vLLM's engine core, a V0 driver with no prefix): it still reports figures.
    pub(crate) fn engine() -> Rank {
        Rank::from_pairs([(ENGINE, 0)])
    }

    /// The engine process of one data-parallel replica (a grammar's engine process rule
    /// names it by a `dp` capture): each replica has its own, and they must not merge
    /// into one row.
    pub(crate) fn engine_of(dp: Option<u32>) -> Rank {
        match dp {
            Some(n) => Rank::from_pairs([(ENGINE, 0), ("DP", n)]),
            None => Rank::engine(),
        }
    }

    /// An engine or API process, not a numbered rank.
    pub fn is_engine(&self) -> bool {
        self.tags.iter().any(|t| t.1 == ENGINE)
    }

    /// A process's global rank when that is all a line says (c10's `[rank3]:`): the model
    /// maps it onto the run's ranks where the layout makes that certain.
    pub(crate) fn global(n: u32) -> Rank {
        Rank::from_pairs([(GLOBAL, n)])
    }

    /// The one tag of a rank named by a single tag (`TP3` → `("TP", 3)`).
    pub(crate) fn single(&self) -> Option<(&str, u32)> {
        match &*self.tags {
            [(_, name, n)] => Some((&**name, *n)),
            _ => None,
        }
    }

    /// The global rank number, for a rank that is only that.
    pub(crate) fn as_global(&self) -> Option<u32> {
        match &*self.tags {
            [(_, name, n)] if name == GLOBAL => Some(*n),
            _ => None,
        }
    }

    /// The names of the rank's tags (`PP`, `TP`).
    pub(crate) fn tag_names(&self) -> impl Iterator<Item = &str> {
        self.tags.iter().map(|t| &*t.1)
    }

    /// Tensor-parallel rank `n` (`TP3`), alone.
    pub fn tp(n: u32) -> Rank {
        Rank::from_pairs([("TP", n)])
    }

    /// This rank with tag `name` set to `n` (`TP3` with DP 1: `DP1 TP3`).
    pub(crate) fn with_tag(&self, name: &str, n: u32) -> Rank {
        let kept = (self.tags.iter())
            .filter(|t| t.1 != name)
            .map(|t| (&*t.1, t.2));
        Rank::from_pairs(kept.chain([(name, n)]))
    }

    pub(crate) fn get(&self, tag: &str) -> Option<u32> {
        self.tags.iter().find(|t| t.1 == tag).map(|t| t.2)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.tags.is_empty()
    }

    /// The two hold one list of tags (the scan's sharing), not two equal ones.
    pub(crate) fn shares_tags_with(&self, other: &Rank) -> bool {
        Arc::ptr_eq(&self.tags, &other.tags)
    }

    /// Where the list of tags is: the same for ranks that share one (`shares_tags_with`),
    /// different for lists alive at once. A key cheaper than the rank for a map that meets
    /// one shared list again and again (a file's events of one rank) while the ranks are
    /// borrowed: hashing it reads no tags.
    pub(crate) fn tags_address(&self) -> usize {
        Arc::as_ptr(&self.tags).cast::<()>().addr()
    }
}

/// In JSON a rank is its display name (`"PP1 TP2"`).
// Equality, order and hash as derived over the tags, with two shortcuts: two ranks sharing
// one list are equal without a look at it, and a known tag's name (`TAG_ORDER`, place
// below 255) is never compared or hashed, its place saying which it is (`tag`). Ranks are
// the keys of most maps a run is built with, and comparing `"TP"` with `"TP"` byte by
// byte was most of every comparison.
impl PartialEq for Rank {
    fn eq(&self, other: &Rank) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}

impl Eq for Rank {}

impl PartialOrd for Rank {
    fn partial_cmp(&self, other: &Rank) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Rank {
    fn cmp(&self, other: &Rank) -> std::cmp::Ordering {
        if Arc::ptr_eq(&self.tags, &other.tags) {
            return std::cmp::Ordering::Equal;
        }
        let tag_order = |(pa, na, ka): &(u8, TagName, u32), (pb, nb, kb): &(u8, TagName, u32)| {
            pa.cmp(pb)
                .then_with(|| {
                    if *pa == 255 {
                        na.cmp(nb)
                    } else {
                        std::cmp::Ordering::Equal
                    }
                })
                .then(ka.cmp(kb))
        };
        (self.tags.iter().zip(other.tags.iter()))
            .map(|(a, b)| tag_order(a, b))
            .find(|o| o.is_ne())
            .unwrap_or_else(|| self.tags.len().cmp(&other.tags.len()))
    }
}

impl std::hash::Hash for Rank {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_usize(self.tags.len());
        for (place, name, n) in self.tags.iter() {
            state.write_u8(*place);
            if *place == 255 {
                name.hash(state);
            }
            state.write_u32(*n);
        }
    }
}

impl Serialize for Rank {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

const ENGINE: &str = "engine";
const GLOBAL: &str = "rank";

impl fmt::Display for Rank {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_engine() {
            f.write_str(ENGINE)?;
            if let Some(dp) = self.get("DP") {
                write!(f, " DP{dp}")?;
            }
            return Ok(());
        }
        for (i, (_, name, n)) in self.tags.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{name}{n}")?;
        }
        Ok(())
    }
}

/// Where a record came from, so every figure can be traced back to its line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    /// Index into the run's list of sources.
    pub source: usize,
    /// 1-based physical line number.
    pub line: u64,
}

/// One log record a grammar understood: its kind, fields, rank, time and line.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// The file and line it was read from.
    pub origin: Origin,
    /// Wall-clock time as printed (1 s resolution for SGLang).
    pub ts: Option<NaiveDateTime>,
    /// The step between two stamps the line's format can print, in milliseconds (1000
    /// for whole seconds, 1 for milliseconds or finer): from the format, not the value,
    /// so a millisecond stamp that reads `.000` keeps its millisecond resolution.
    pub ts_step_ms: u32,
    /// True when the year (or the whole date) was not printed and was inferred.
    pub year_inferred: bool,
    /// Only a time of day was printed; the date was inferred.
    pub time_only: bool,
    /// The rank the record's prefix (or message) names, if any.
    pub rank: Option<Rank>,
    /// The process that wrote the record, as far as its prefix says (`pid`, `process`,
    /// `host`); `None` when it says nothing of it.
    pub writer: Option<Arc<Writer>>,
    /// Canonical kind (`dist_init_end`, `oom`, …) or a grammar's own.
    pub kind: Name,
    /// The grammar whose event matched (`sglang`, `nccl`, a file's name).
    pub grammar: Name,
    /// The values the event's pattern captured, by name, in canonical units.
    pub fields: Fields,
    /// The record's message, control sequences removed. Shared, as the fields are, by the
    /// events of a run that printed the same message (`base::interned`).
    pub message: Arc<str>,
    /// What few events carry (a wrapper's node, a traceback, a trailer), boxed: three
    /// empty strings' room in every event was a quarter of its size.
    pub extra: Option<Box<EventExtra>>,
}

/// An event of `source` at `line`, stamped at second `second` of 2026-12-04 10:00 when
/// given, of kind `k` and no fields: for tests of what orders and places events.
#[cfg(test)]
pub(crate) fn test_event(source: usize, line: u64, second: Option<u32>) -> Event {
    Event {
        origin: Origin { source, line },
        ts: second
            .and_then(|s| chrono::NaiveDate::from_ymd_opt(2026, 12, 4)?.and_hms_opt(10, 0, s)),
        ts_step_ms: 1000,
        year_inferred: false,
        time_only: false,
        rank: None,
        writer: None,
        kind: "k".into(),
        grammar: "g".into(),
        fields: Default::default(),
        message: "".into(),
        extra: None,
    }
}

/// Who wrote a record, as far as its prefix says. Shared (`Arc`) by the events of one
/// process in a file: three optional names in every event were a fifth of its size, and
/// most events name the same writer as the one before.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Writer {
    /// The process id the prefix printed, if any.
    pub pid: Option<u32>,
    /// The process name a prefix gave (vLLM: `Worker_TP3`, `EngineCore_DP0`, `APIServer`).
    pub process: Option<Name>,
    /// The host a prefix named (NCCL's `host:pid:tid`): which machine wrote the line,
    /// whatever file or directory it was collected into.
    pub host: Option<Name>,
}

impl Writer {
    /// The writer of a record that names these; `None` when it names none of them.
    pub(crate) fn of(
        pid: Option<u32>,
        process: Option<Name>,
        host: Option<Name>,
    ) -> Option<Arc<Writer>> {
        (pid.is_some() || process.is_some() || host.is_some())
            .then(|| Arc::new(Writer { pid, process, host }))
    }
}

/// The parts of an event that most events lack.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EventExtra {
    /// The node a wrapper in front of the line named: kubectl's `[pod/NAME/CONTAINER] `, a
    /// docker compose service's `NAME  | `, journald's host. In one stream that interleaves
    /// several (`kubectl logs --prefix` over a LeaderWorkerSet's pods), the one that
    /// wrote the line.
    pub node: Option<String>,
    /// Continuation lines (a traceback) that belong to this record.
    pub detail: Option<String>,
    /// The text a rank-less `[[suffix]]` cut from the end of the message (the record's
    /// trailing fields: `" err="…" bs=512`); searched with the message for a failure's
    /// words, never quoted as the message. `None` when no suffix cut the line.
    pub trailer: Option<String>,
}

impl Event {
    /// The process id the prefix printed (`Writer::pid`).
    pub fn pid(&self) -> Option<u32> {
        self.writer.as_ref()?.pid
    }
    /// The process name a prefix gave (`Writer::process`).
    pub fn process(&self) -> Option<&str> {
        self.writer.as_ref()?.process.as_deref()
    }
    /// The host a prefix named (`Writer::host`).
    pub fn host(&self) -> Option<&str> {
        self.writer.as_ref()?.host.as_deref()
    }
    /// The node a wrapper named (`EventExtra::node`).
    pub fn node(&self) -> Option<&str> {
        self.extra.as_ref()?.node.as_deref()
    }
    /// The record's traceback (`EventExtra::detail`).
    pub fn detail(&self) -> Option<&str> {
        self.extra.as_ref()?.detail.as_deref()
    }
    /// What a rank-less suffix cut from the message (`EventExtra::trailer`).
    pub fn trailer(&self) -> Option<&str> {
        self.extra.as_ref()?.trailer.as_deref()
    }
    /// The extra parts, made when the first is set.
    pub fn extra_mut(&mut self) -> &mut EventExtra {
        self.extra.get_or_insert_with(Default::default)
    }
    /// The captured value `name`, if the pattern captured it.
    pub fn field(&self, name: &str) -> Option<&FieldValue> {
        self.fields.get(name)
    }
    /// The captured value `name` in bytes, if it is a memory value.
    pub fn bytes(&self, name: &str) -> Option<i64> {
        self.field(name).and_then(FieldValue::as_bytes)
    }
}

/// The canonical event kinds of DESIGN.md, in start-up order where they have one.
#[expect(
    dead_code,
    reason = "the whole DESIGN.md list, in start-up order; the code names only some kinds"
)]
pub(crate) mod kind {
    pub(crate) const SERVER_ARGS: &str = "server_args";
    /// A line that prints the server's version only (`vLLM API server version 0.11.1`).
    pub(crate) const SERVER_VERSION: &str = "server_version";
    pub(crate) const DIST_INIT_BEGIN: &str = "dist_init_begin";
    pub(crate) const DIST_INIT_END: &str = "dist_init_end";
    pub(crate) const NCCL_COMM_INIT: &str = "nccl_comm_init";
    pub(crate) const WEIGHT_LOAD_BEGIN: &str = "weight_load_begin";
    pub(crate) const WEIGHT_LOAD_END: &str = "weight_load_end";
    pub(crate) const KV_BUDGET: &str = "kv_budget";
    pub(crate) const KV_CACHE_ALLOC: &str = "kv_cache_alloc";
    pub(crate) const MEM_POOL_END: &str = "mem_pool_end";
    pub(crate) const CUDA_GRAPH_BEGIN: &str = "cuda_graph_begin";
    pub(crate) const CUDA_GRAPH_END: &str = "cuda_graph_end";
    pub(crate) const READY: &str = "ready";
    pub(crate) const OOM: &str = "oom";
    pub(crate) const ERROR: &str = "error";
    pub(crate) const WARNING: &str = "warning";

    /// Whether an event of kind `k` is a failure: an OOM or another error.
    pub(crate) fn is_failure(k: &str) -> bool {
        matches!(k, OOM | ERROR)
    }
}

/// What kind of failure ended a rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FailureKind {
    /// Out of GPU memory: the allocator refused a request.
    Oom,
    /// The server found too little memory for its budget (its own check, not the
    /// allocator).
    NotEnoughMemory,
    /// A NCCL or distributed communication error.
    Nccl,
    /// Any other exception that ended the rank.
    Exception,
    /// A timeout or watchdog fired.
    Timeout,
    /// A signal or the launcher's shutdown ended the process.
    Signal,
    /// The process ended with nothing of its own said, and another process reported it
    /// dead (vLLM's engine: `Worker proc VllmWorker-5 died unexpectedly`) without saying
    /// how.
    Died,
}

impl FailureKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            FailureKind::Oom => "oom",
            FailureKind::NotEnoughMemory => "not_enough_memory",
            FailureKind::Nccl => "nccl",
            FailureKind::Exception => "exception",
            FailureKind::Timeout => "timeout",
            FailureKind::Signal => "signal",
            FailureKind::Died => "died",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Phase, PhaseOrder, Rank};

    #[test]
    fn ranks_compare_and_hash_as_their_tag_lists_do() {
        // Known tags (TP, DP, PP), unknown ones (`X`, `Y`: compared by name), a longer
        // list beside its prefix, and one list shared by two ranks: every pair orders as
        // the (place, name, number) lists themselves do, and equal ranks hash alike.
        let texts = [
            "TP0", "TP1", "DP0 TP1", "DP1 TP0", "PP0 TP3", "X2", "Y1", "X2 TP0", "TP10",
        ];
        let mut ranks: Vec<Rank> = (texts.iter()).filter_map(|t| Rank::parse_tags(t)).collect();
        assert_eq!(ranks.len(), texts.len());
        ranks.push(ranks[2].clone());
        ranks.push(Rank::parse_tags("TP1").unwrap());
        let list = |r: &Rank| -> Vec<(u8, String, u32)> {
            r.tags
                .iter()
                .map(|(p, n, k)| (*p, n.to_string(), *k))
                .collect()
        };
        let hash = |r: &Rank| {
            use std::hash::{BuildHasher, BuildHasherDefault};
            BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default().hash_one(r)
        };
        for a in &ranks {
            for b in &ranks {
                assert_eq!(a.cmp(b), list(a).cmp(&list(b)), "{a} against {b}");
                assert_eq!(a == b, list(a) == list(b), "{a} against {b}");
                if a == b {
                    assert_eq!(hash(a), hash(b), "{a}");
                }
            }
        }
        // By hand: DP sorts before TP, a number after its tag, X's unknown tag after TP.
        let order: Vec<String> = {
            let mut r = ranks.clone();
            r.sort();
            r.dedup();
            r.iter().map(|r| r.to_string()).collect()
        };
        assert_eq!(order.first().map(String::as_str), Some("DP0 TP1"));
        assert!(order.iter().position(|r| r == "TP1") < order.iter().position(|r| r == "TP10"));
    }

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn an_event_is_136_bytes() {
        // A run holds all its events at once (852,000 on 65,536 rank files): each byte
        // here is 0.8 MiB there. It was 288 bytes with a `String` per kind and grammar
        // name and the rare parts inline; 208 with the pid, process and host inline, a
        // vector of tags per rank, a `String` message and a vector of fields.
        assert_eq!(std::mem::size_of::<super::Event>(), 136);
    }

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn a_field_value_is_24_bytes() {
        // Every event's fields and every rank's figures hold them (a `String` of text
        // made each 32).
        assert_eq!(std::mem::size_of::<super::FieldValue>(), 24);
    }

    #[test]
    fn tags_joined_by_an_underscore_after_a_number_are_separate_tags() {
        let shown = |t: &str| Rank::parse_tags(t).map(|r| r.to_string());
        assert_eq!(shown("DP0_PP1_TP2").as_deref(), Some("DP0 PP1 TP2"));
        assert_eq!(shown(" TP3 DP1").as_deref(), Some("DP1 TP3"));
        assert_eq!(shown("ATTN_CP1 TP0_").as_deref(), Some("ATTN_CP1 TP0"));
        assert_eq!(shown("XY2_TP1").as_deref(), Some("TP1 XY2"));
        // A number with no name, or a name with no number, is no tag list.
        assert_eq!(shown("TP1_2"), None);
        assert_eq!(shown("TP"), None);
        assert_eq!(shown(""), None);
        let r = Rank::parse_tags("DP1 TP3");
        assert_eq!(r.as_ref().and_then(|r| r.get("TP")), Some(3));
        assert_eq!(
            r.map(|r| r.with_tag("TP", 5).to_string()).as_deref(),
            Some("DP1 TP5")
        );
    }

    /// tarnserve's grammar declares dist_init, weight_load and kv_cache: kv_cache is
    /// followed by ready; the fixed order (SGLang, vLLM) keeps cuda_graph in between.
    #[test]
    fn the_next_phase_is_the_next_the_server_has() {
        let tarn = PhaseOrder::of([Phase::DistInit, Phase::WeightLoad, Phase::KvCache]);
        assert_eq!(tarn.next(Phase::KvCache), Phase::Ready);
        assert_eq!(tarn.next(Phase::Launch), Phase::DistInit);
        assert!(!tarn.has(Phase::CudaGraph) && tarn.has(Phase::Ready));
        let no_dist_init = PhaseOrder::of([Phase::WeightLoad, Phase::KvCache]);
        assert_eq!(no_dist_init.next(Phase::Launch), Phase::WeightLoad);
        let all = PhaseOrder::CANONICAL;
        assert_eq!(all.next(Phase::KvCache), Phase::CudaGraph);
        assert_eq!(all.next(Phase::CudaGraph), Phase::Ready);
        assert_eq!(all.next(Phase::Ready), Phase::Ready);
    }
}
