//! Typed start-up events: what a grammar turns a log record into.

use std::fmt;
use std::sync::Arc;

use chrono::NaiveDateTime;

pub use super::name::Name;
pub use super::rank::Rank;
pub(crate) use super::rank::TAG_ORDER;

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
    pub message: Name,
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
    use super::{Phase, PhaseOrder};

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn an_event_is_96_bytes() {
        // A run holds all its events at once (852,000 on 65,536 rank files): each byte
        // here is 0.8 MiB there. It was 288 bytes with a `String` per kind and grammar
        // name and the rare parts inline; 208 with the pid, process and host inline, a
        // vector of tags per rank, a `String` message and a vector of fields; 136 with
        // the kind, grammar, message, fields and rank's tags behind fat pointers (16
        // bytes each, 8 now).
        assert_eq!(std::mem::size_of::<super::Event>(), 96);
    }

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn a_field_value_is_24_bytes() {
        // Every event's fields and every rank's figures hold them (a `String` of text
        // made each 32).
        assert_eq!(std::mem::size_of::<super::FieldValue>(), 24);
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
