//! What a server's lines mean, as grammar files state it: the phase each event kind opens,
//! closes or falls inside, the figures it reports, which process or rank a line names,
//! where a configuration dump starts, which traceback frames belong to which phase, and
//! which wordings say that a rank failed because of another, was terminated, or stalled.
//! The run model reads these; it knows no server's wording itself.

mod compile;
mod ignored;
mod meanings;
mod tags_memo;

pub(crate) use ignored::{captured_failure, SET_FAILURES};
pub(in crate::grammar) use ignored::{only_read_captures, PREFIX_CAPTURES};
pub(crate) use tags_memo::parse_tags_capture;

use std::collections::HashMap;

use super::lazy_regex::LazyRegex;
use super::spec::{EventSpec, FramePhaseSpec, GrammarSpec, OutcomeSpec, Unit};
use super::GrammarError;
use crate::base::event::{
    kind, BuiltinFigure, Edge, Event, FieldValue, FigureDef, FigureName, FigureUnit, Measure,
    Phase, Rank, WorseWhen,
};
pub(super) use compile::{compile_frames, compile_grammar, compile_outcomes};

/// An outcome other than a rank's own failure, as a wording reveals it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OutcomeWord {
    /// Failed because another rank failed (barrier, store, collective, watchdog after a
    /// peer's death).
    Consequence,
    /// Killed or shut down by the launcher after a failure elsewhere.
    Terminated,
    /// A timeout or watchdog says the rank waited and gave up.
    Stalled,
    /// The rank's own failure, whatever wording its line holds: an event's `set = {
    /// outcome = "failed" }` keeps the built-in wordings (PyTorch's `timed out after`)
    /// from reading a failure its grammar has classified. Not a wording's state.
    Failed,
}

impl OutcomeWord {
    pub(crate) fn from_name(s: &str) -> Option<OutcomeWord> {
        Some(match s {
            "consequence" => OutcomeWord::Consequence,
            "terminated" => OutcomeWord::Terminated,
            "stalled" => OutcomeWord::Stalled,
            "failed" => OutcomeWord::Failed,
            _ => return None,
        })
    }
}

/// A grammar's `frame_phase` rule: a stack frame that names the phase its allocations
/// belong to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameRule {
    /// The frame's function name, matched exactly; `None` matches any function.
    pub function: Option<String>,
    /// The frame's file name without its directory, matched exactly; `None` matches any
    /// file.
    pub file: Option<String>,
    /// The phase such a frame names.
    pub phase: Phase,
    /// The frame runs several steps: its phase counts only when no frame inside it is
    /// named (`FramePhaseSpec::fallback`).
    pub fallback: bool,
    /// A traceback frame line the rule must map to `phase` (checked by `grammars check`).
    pub sample: Option<String>,
}

impl FrameRule {
    /// Whether a frame (function, file base name) is one this rule names: by function, by
    /// file, or by both when both are given.
    fn names(&self, function: &str, file_name: &str) -> bool {
        match (&self.function, &self.file) {
            (Some(f), Some(x)) => function == f && file_name == x,
            (Some(f), None) => function == f,
            (None, Some(x)) => file_name == x,
            (None, None) => false,
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) struct OutcomeRule {
    pub(crate) state: OutcomeWord,
    pub(crate) literals: Vec<String>,
    pub(crate) regex: LazyRegex,
}

/// What a wording says: the outcome, and the rank number it names, if any.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OutcomeMatch {
    pub(crate) state: OutcomeWord,
    pub(crate) peer: Option<u32>,
}

/// How sure a line's word on a process's rank is; a stronger one replaces a weaker one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum RankEvidence {
    /// A rank within one communicator (NCCL's `comm … rank R nranks N`).
    Communicator,
    /// A global rank (`world_size=N rank=R`, `rank=R` in a process name).
    Global,
    /// The rank's tags spelled out (`… is assigned as DP rank 0, PP rank 0, TP rank 2`).
    Assignment,
    /// The prefix named the rank's tags (`Worker_TP3`, `[… TP3]`).
    Tags,
    /// The number names this line's rank only (`Shard 1 failed to start`).
    Line,
}

/// A rank an event's message names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RankRule {
    pub(crate) evidence: RankEvidence,
    pub(crate) capture: Option<String>,
}

/// The tags an `assignment` rule reads, by capture name.
const ASSIGNMENT_TAGS: [(&str, &str); 7] = [
    ("dp", "DP"),
    ("pp", "PP"),
    ("pcp", "PCP"),
    ("attn_cp", "ATTN_CP"),
    ("moe_dp", "MOE_DP"),
    ("tp", "TP"),
    ("ep", "EP"),
];

impl RankRule {
    /// The rank the rule reads from an event's fields.
    pub(crate) fn rank(&self, e: &Event) -> Option<Rank> {
        let int = |name: &str| e.field(name).and_then(FieldValue::as_rank_number);
        match self.evidence {
            RankEvidence::Assignment => assignment_rank(&|n| int(n).map(i64::from)),
            _ => int(self.capture.as_deref()?).map(Rank::tp),
        }
    }
}

/// Tags spelled out one by one. A single-replica, single-stage run is named by its TP
/// rank alone, as SGLang names it: zero DP/PP/PCP/EP are dropped when no DP, PP or PCP
/// is above zero.
fn assignment_rank(int: &dyn Fn(&str) -> Option<i64>) -> Option<Rank> {
    let mut pairs = Vec::new();
    for (field, tag) in ASSIGNMENT_TAGS {
        if let Some(v) = int(field).and_then(|v| u32::try_from(v).ok()) {
            pairs.push((tag.to_string(), v));
        }
    }
    let only_default = |t: &str| pairs.iter().any(|(n, v)| n == t && *v == 0);
    if ["DP", "PP", "PCP"]
        .iter()
        .all(|t| only_default(t) || !pairs.iter().any(|(n, _)| n == t))
    {
        pairs.retain(|(n, v)| !(matches!(n.as_str(), "DP" | "PP" | "PCP" | "EP") && *v == 0));
    }
    (!pairs.is_empty()).then(|| Rank::from_pairs(pairs))
}

/// What one event kind of one grammar means.
#[derive(Clone, Debug, Default)]
pub(crate) struct KindMeaning {
    pub(crate) phase: Option<(Phase, Edge)>,
    /// The phase the event begins as it ends `phase` (`then` in the grammar).
    pub(crate) then: Option<Phase>,
    /// Each figure with its sources, tried in order; a source is a sum of captures.
    pub(crate) figures: Vec<(FigureName, Vec<Vec<String>>)>,
    pub(crate) rank: Vec<RankRule>,
}

impl KindMeaning {
    /// Declares nothing: no phase, figure or rank rule.
    pub(crate) fn is_empty(&self) -> bool {
        self.phase.is_none() && self.figures.is_empty() && self.rank.is_empty()
    }
}

/// What a process name says about the process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ProcessRole {
    Worker,
    Engine,
    Launcher,
}

#[derive(Clone, Debug)]
pub(crate) struct ProcessRule {
    pub(crate) name: LazyRegex,
    pub(crate) role: ProcessRole,
}

/// What a process name told: its role, and the rank or replica it names.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ProcessInfo {
    pub(crate) role: ProcessRole,
    /// From a `tags` capture.
    pub(crate) tags: Option<Rank>,
    /// From a `global_rank` capture.
    pub(crate) global_rank: Option<u32>,
    /// From a `dp` capture (an engine's replica).
    pub(crate) dp: Option<u32>,
}

/// How a configuration dump is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ConfigSyntax {
    /// `Name(k=v, …)`: SGLang's `ServerArgs(…)`, argparse's `Namespace(…)`.
    PythonCall,
    /// `k=v, …` to the end of the line.
    PythonKwargs,
    /// `{'k': v, …}`.
    PythonDict,
    /// Rust's `{:?}` of a struct: `Args { k: v, … }`.
    RustDebug,
    /// A JSON object, `{"k": v, …}` (`true`, `false`, `null`): read as `PythonDict` is,
    /// its values written back in JSON's spelling.
    Json,
}

impl ConfigSyntax {
    pub(crate) fn from_name(s: &str) -> Option<ConfigSyntax> {
        Some(match s {
            "python_call" => ConfigSyntax::PythonCall,
            "python_kwargs" => ConfigSyntax::PythonKwargs,
            "python_dict" => ConfigSyntax::PythonDict,
            "rust_debug" => ConfigSyntax::RustDebug,
            "json" => ConfigSyntax::Json,
            _ => return None,
        })
    }
    /// As a grammar writes it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            ConfigSyntax::PythonCall => "python_call",
            ConfigSyntax::PythonKwargs => "python_kwargs",
            ConfigSyntax::PythonDict => "python_dict",
            ConfigSyntax::RustDebug => "rust_debug",
            ConfigSyntax::Json => "json",
        }
    }
}

/// How the text after a configuration marker is escaped before its syntax can be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ConfigEscape {
    /// Inside a JSON string: `\"`, `\\`, `\/`, `\n`, `\t`, `\uXXXX` … up to the string's
    /// closing (unescaped) `"`.
    Json,
}

impl ConfigEscape {
    pub(crate) fn from_name(s: &str) -> Option<ConfigEscape> {
        match s {
            "json" => Some(ConfigEscape::Json),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ConfigRule {
    /// The grammar that declared it.
    pub(crate) grammar: String,
    pub(crate) marker: String,
    pub(crate) syntax: ConfigSyntax,
    /// `escaped = "json"`: the configuration is inside a JSON string.
    pub(crate) escaped: Option<ConfigEscape>,
}

/// Kind (or grammar id) → meaning. Looked up several times per event while a run is
/// built, so hashed with foldhash rather than SipHash (a few percent of loading 8,192
/// ranks); the keys come from grammar files, not from the logs.
pub(crate) type ByName<V> = HashMap<String, V, foldhash::fast::RandomState>;

/// One grammar's share of the knowledge, compiled from its file.
#[derive(Clone, Debug, Default)]
pub(crate) struct GrammarKnowledge {
    pub(crate) kinds: ByName<KindMeaning>,
    pub(crate) processes: Vec<ProcessRule>,
    /// The `[[suffix]]` regexes that name a rank.
    pub(crate) suffixes: Vec<LazyRegex>,
    /// The `[[suffix]]` regexes that name no rank: the fields a record prints after its
    /// message (logfmt's `" bs=512 free=…`), cut from the message of this grammar's
    /// events (not from a configuration line, which is read from its message).
    pub(crate) field_suffixes: Vec<LazyRegex>,
    pub(crate) without_pid_engine: bool,
    pub(crate) configs: Vec<ConfigRule>,
    /// The grammar describes a component (PyTorch, NCCL), not a server.
    pub(crate) component: bool,
    /// The server's one world spans its data-parallel replicas (`world = "across_replicas"`).
    pub(crate) world_spans_replicas: bool,
}

/// The meanings, frame tables and outcome wordings of every loaded grammar.
#[derive(Clone, Debug)]
pub struct Knowledge {
    pub(crate) frames: Vec<FrameRule>,
    pub(crate) outcomes: Vec<OutcomeRule>,
    /// By grammar id, then event kind.
    pub(crate) kinds: ByName<ByName<KindMeaning>>,
    /// By event kind, from the first grammar in load order that declares it: for events
    /// whose grammar is not loaded (built by hand in tests).
    by_kind: ByName<KindMeaning>,
    pub(crate) processes: Vec<ProcessRule>,
    pub(crate) suffixes: Vec<LazyRegex>,
    /// Grammars whose lines without a pid come from an engine or driver process.
    pub(crate) without_pid_engine: Vec<String>,
    pub(crate) configs: Vec<ConfigRule>,
    /// Grammars that describe a component (`describes = "component"`), not a server.
    pub(crate) components: Vec<String>,
    /// Settings that explain failures and settings that size memory, of every grammar.
    pub(crate) remedy: super::remedy::RemedyRules,
    /// `meaning_of`'s answers, built when first asked (and again after a grammar is
    /// added): `kinds` and `by_kind` change only in [`Knowledge::add`].
    meanings: std::sync::OnceLock<meanings::MeaningTable>,
    /// Servers whose one world spans their data-parallel replicas (`world =
    /// "across_replicas"`).
    pub(crate) worlds_span_replicas: Vec<String>,
}

/// The default knowledge is the built-in grammars': what a run read without user
/// grammars means.
impl Default for Knowledge {
    fn default() -> Knowledge {
        super::builtin_knowledge().clone()
    }
}

/// The phase a stack names, its frames given innermost first (a snapshot's stack): as for
/// a traceback, the outermost frame a rule names decides, a `fallback` frame only when no
/// other frame is named.
pub(crate) fn phase_of_stack<'f>(
    rules: &[FrameRule],
    innermost_first: impl DoubleEndedIterator<Item = (&'f str, &'f str)>,
) -> Option<Phase> {
    let mut fallback = None;
    for (function, file) in innermost_first.rev() {
        let base = file.rsplit(['/', '\\']).next().unwrap_or(file);
        match rules.iter().find(|r| r.names(function, base)) {
            Some(r) if !r.fallback => return Some(r.phase),
            Some(r) => {
                fallback.get_or_insert(r.phase);
            }
            None => {}
        }
    }
    fallback
}

impl Knowledge {
    /// Knowing nothing: no phases, figures, frames or wordings.
    pub(crate) fn empty() -> Knowledge {
        Knowledge {
            frames: Vec::new(),
            outcomes: Vec::new(),
            kinds: ByName::default(),
            by_kind: ByName::default(),
            processes: Vec::new(),
            suffixes: Vec::new(),
            without_pid_engine: Vec::new(),
            configs: Vec::new(),
            components: Vec::new(),
            remedy: Default::default(),
            worlds_span_replicas: Vec::new(),
            meanings: std::sync::OnceLock::new(),
        }
    }

    /// Adds a grammar's share (grammars in load order).
    pub(crate) fn add(
        &mut self,
        id: &str,
        frames: &[FrameRule],
        outcomes: &[OutcomeRule],
        g: &GrammarKnowledge,
    ) {
        self.frames.extend(frames.iter().cloned());
        self.outcomes.extend(outcomes.iter().cloned());
        for (kind, m) in g.kinds.iter().filter(|(_, m)| !m.is_empty()) {
            self.by_kind
                .entry(kind.clone())
                .or_insert_with(|| m.clone());
        }
        self.kinds.insert(id.to_string(), g.kinds.clone());
        self.processes.extend(g.processes.iter().cloned());
        self.suffixes.extend(g.suffixes.iter().cloned());
        if g.without_pid_engine {
            self.without_pid_engine.push(id.to_string());
        }
        self.configs.extend(g.configs.iter().cloned());
        if g.component {
            self.components.push(id.to_string());
        }
        if g.world_spans_replicas {
            self.worlds_span_replicas.push(id.to_string());
        }
        self.meanings = std::sync::OnceLock::new();
    }

    /// Whether the server a grammar describes numbers one world across its data-parallel
    /// replicas (vLLM), rather than one world per replica (SGLang).
    pub(crate) fn world_spans_replicas(&self, grammar: &str) -> bool {
        self.worlds_span_replicas.iter().any(|g| g == grammar)
    }

    /// Whether a grammar describes a server (the default), not a component that any
    /// server prints through (`describes = "component"`: PyTorch, NCCL).
    pub fn describes_server(&self, grammar: &str) -> bool {
        !self.components.iter().any(|g| g == grammar)
    }

    /// What an event's kind means in its grammar.
    pub(crate) fn meaning(&self, e: &Event) -> Option<&KindMeaning> {
        self.meaning_of(&e.grammar, &e.kind)
    }

    /// What `kind` means in `grammar`; where that grammar declares nothing for it (no
    /// phase, figure or rank rule), what the first grammar that does declares: a user
    /// grammar that emits a canonical kind (`dist_init_end`) gets the built-in meaning.
    pub(crate) fn meaning_of(&self, grammar: &str, kind: &str) -> Option<&KindMeaning> {
        let table = (self.meanings).get_or_init(|| {
            meanings::MeaningTable::of(&self.kinds, |g, k| self.meaning_searched(g, k))
        });
        match table.lookup(grammar, kind) {
            Some(meaning) => meaning,
            None => self.meaning_searched(grammar, kind),
        }
    }

    /// [`Knowledge::meaning_of`], looked up in the grammars' maps.
    fn meaning_searched(&self, grammar: &str, kind: &str) -> Option<&KindMeaning> {
        self.kinds
            .get(grammar)
            .and_then(|kinds| kinds.get(kind))
            .filter(|m| !m.is_empty())
            .or_else(|| self.by_kind.get(kind))
    }

    /// Where an event sits in start-up, and whether it opens or closes its phase.
    /// The phase an event that ends its own begins next, when its grammar says so.
    pub(crate) fn then_of(&self, e: &Event) -> Option<Phase> {
        self.meaning(e)?.then
    }

    /// The phases a grammar's own events are placed in or begin (`then`).
    pub(crate) fn declared_phases(&self, grammar: &str) -> impl Iterator<Item = Phase> + '_ {
        (self.kinds.get(grammar).into_iter())
            .flat_map(|kinds| kinds.values())
            .flat_map(|m| m.phase.map(|(p, _)| p).into_iter().chain(m.then))
    }

    /// A line that is part of a start-up: a phase line or a failure. A run with none is
    /// not a start-up log (`Run::has_startup_events`), and only such a file's families
    /// are sniffed (`scan::scan_whole`).
    pub(crate) fn is_startup_event(&self, e: &Event) -> bool {
        self.phase_of(e).is_some()
            || matches!(
                e.kind.as_str(),
                crate::base::event::kind::OOM | crate::base::event::kind::ERROR
            )
    }

    pub(crate) fn phase_of(&self, e: &Event) -> Option<(Phase, Edge)> {
        self.meaning(e)?.phase
    }

    /// The figures an event reports, under their canonical names (an iterator: asked of
    /// every phase line of every rank, a vector each was an allocation each).
    pub(crate) fn figures_of<'a>(
        &'a self,
        e: &'a Event,
    ) -> impl Iterator<Item = (FigureName, FieldValue)> + 'a {
        let figures = self.meaning(e).map_or(&[][..], |m| m.figures.as_slice());
        figures.iter().filter_map(move |(name, sources)| {
            // Mostly one-field figures: no vector of the parts.
            let value = sources.iter().find_map(|sum| match sum.as_slice() {
                [one] => e.field(one).cloned(),
                many => {
                    let (mut bytes, mut resolution) = (0, 0);
                    for c in many {
                        let v = e.field(c)?;
                        bytes += v.as_bytes().unwrap_or(0);
                        resolution += v.resolution();
                    }
                    Some(FieldValue::Bytes { bytes, resolution })
                }
            });
            value.map(|v| (name.clone(), v))
        })
    }

    /// What a process name says: the role of the first rule that matches it, and the
    /// rank, global rank or replica any matching rule reads from it.
    pub(crate) fn process(&self, name: &str) -> Option<ProcessInfo> {
        let mut out: Option<ProcessInfo> = None;
        for r in &self.processes {
            let Some(caps) = r.name.captures_once(name) else {
                continue;
            };
            let num = |n: &str| caps.name(n).and_then(|m| m.as_str().parse::<u32>().ok());
            let info = out.get_or_insert(ProcessInfo {
                role: r.role,
                tags: None,
                global_rank: None,
                dp: None,
            });
            if info.tags.is_none() {
                // Read as a prefix's `tags` are, in any case (`Worker_tp3`).
                info.tags = caps
                    .name("tags")
                    .and_then(|t| parse_tags_capture(t.as_str()));
            }
            info.global_rank = info.global_rank.or_else(|| num("global_rank"));
            info.dp = info.dp.or_else(|| num("dp"));
        }
        // A worker's `dp` capture names its replica beside the tags it captured
        // (`Worker_dp1_TP3` is DP1 TP3), unless those name one already.
        if let Some(info) = out.as_mut().filter(|i| i.role == ProcessRole::Worker) {
            if let (Some(t), Some(dp)) = (&info.tags, info.dp) {
                if t.get("DP").is_none() {
                    info.tags = Some(t.with_tag("DP", dp));
                }
            }
        }
        out
    }

    /// The rank a record's end names (`… rank=1`).
    pub(crate) fn suffix_rank(&self, message: &str) -> Option<Rank> {
        self.suffix_of(message).map(|(rank, _)| rank)
    }

    /// The rank a record's end names and where that suffix starts in `message`: the
    /// text from there on is the record's field, not what the server said.
    pub(crate) fn suffix_of(&self, message: &str) -> Option<(Rank, usize)> {
        self.suffixes.iter().find_map(|r| {
            let caps = r.captures_once(message)?;
            let at = caps.get(0)?.start();
            Some((rank_of_captures(&caps)?, at))
        })
    }

    /// The rank a line names by itself when its prefix names none: a suffix (`… rank=1`),
    /// else a `line` rank rule of its event (`Shard 1 failed to start`).
    pub(crate) fn line_rank(
        &self,
        grammar: &str,
        kind: &str,
        fields: &crate::base::event::Fields,
        message: &str,
    ) -> Option<Rank> {
        self.suffix_rank(message).or_else(|| {
            let m = self.meaning_of(grammar, kind)?;
            m.rank
                .iter()
                .filter(|r| r.evidence == RankEvidence::Line)
                .find_map(|r| {
                    let capture = r.capture.as_deref()?;
                    let n = fields.get(capture)?.as_rank_number()?;
                    // `grank`: a global rank (`[Rank 3] Watchdog …`), which the run's
                    // layout maps onto its ranks.
                    Some(if capture == "grank" {
                        Rank::global(n)
                    } else {
                        Rank::tp(n)
                    })
                })
        })
    }

    /// The rank an `assignment` rule of the event gives the process that printed it (the
    /// line names its process, whose other lines follow by pid); `None` without one.
    pub(crate) fn assigned_rank(
        &self,
        grammar: &str,
        kind: &str,
        fields: &crate::base::event::Fields,
    ) -> Option<Rank> {
        let m = self.meaning_of(grammar, kind)?;
        let int = |name: &str| fields.get(name).and_then(FieldValue::as_i64);
        m.rank
            .iter()
            .filter(|r| r.evidence == RankEvidence::Assignment)
            .find_map(|_| assignment_rank(&int))
    }

    /// Lines of this grammar without a pid come from an engine or driver process.
    pub(crate) fn pidless_is_engine(&self, grammar: &str) -> bool {
        self.without_pid_engine.iter().any(|g| g == grammar)
    }

    /// The configuration markers to try on an event of `grammar`: its own first, then
    /// every other grammar's.
    pub(crate) fn config_rules<'a>(
        &'a self,
        grammar: &'a str,
    ) -> impl Iterator<Item = &'a ConfigRule> {
        let own = self.configs.iter().filter(move |c| c.grammar == grammar);
        let others = self.configs.iter().filter(move |c| c.grammar != grammar);
        own.chain(others)
    }

    /// The phase a traceback ran in: its outermost frame that a table names. Frames print
    /// outermost first; the outermost recognised one is the start-up step that was running
    /// (`capture_model` → cuda_graph), where an inner one may be shared by several steps
    /// (`execute_model` runs during profiling, capture and serving). A `fallback` frame
    /// (one that runs several steps) counts only when no other frame is named.
    pub(crate) fn phase_from_traceback(&self, tb: &str) -> Option<Phase> {
        self.frame_rule_of_traceback(tb).map(|r| r.phase)
    }

    /// The rule that decides a traceback's phase (see `phase_from_traceback`).
    pub(crate) fn frame_rule_of_traceback(&self, tb: &str) -> Option<&FrameRule> {
        if self.frames.is_empty() {
            return None;
        }
        let mut fallback = None;
        for line in tb.lines() {
            let Some(frame) = frame_of(line) else {
                continue;
            };
            match self
                .frames
                .iter()
                .find(|r| r.names(frame.function, frame.file_name))
            {
                Some(r) if !r.fallback => return Some(r),
                Some(r) => {
                    fallback.get_or_insert(r);
                }
                None => {}
            }
        }
        fallback
    }

    /// The first outcome wording found in a failure's text (its line and traceback).
    pub(crate) fn outcome_of(&self, text: &str) -> Option<OutcomeMatch> {
        self.outcomes.iter().find_map(|r| {
            if !r.literals.iter().any(|l| text.contains(l.as_str())) {
                return None;
            }
            let caps = r.regex.captures_once(text)?;
            Some(OutcomeMatch {
                state: r.state,
                peer: caps.name("peer").and_then(|m| m.as_str().parse().ok()),
            })
        })
    }
}

/// A rank from a prefix's or suffix's captures: `tags`, `tp` or `gpu` (a TP rank), `grank`
/// (a global rank the model maps).
pub(super) fn rank_of_captures(caps: &regex::Captures<'_>) -> Option<Rank> {
    let tags = caps
        .name("tags")
        .and_then(|t| parse_tags_capture(t.as_str()));
    let tp = caps.name("gpu").or_else(|| caps.name("tp"));
    let grank = caps.name("grank");
    rank_of_groups(tags, tp.map(|m| m.as_str()), grank.map(|m| m.as_str()))
}

/// The rank of a prefix's or suffix's groups: its `tags` as read (`parse_tags_capture`),
/// else its TP rank (`gpu` or `tp`), else its global rank (`grank`).
pub(in crate::grammar) fn rank_of_groups(
    tags: Option<Rank>,
    tp: Option<&str>,
    grank: Option<&str>,
) -> Option<Rank> {
    tags.or_else(|| tp.and_then(|g| g.parse().ok()).map(Rank::tp))
        .or_else(|| grank.and_then(|g| g.parse().ok()).map(Rank::global))
}

/// A `tags` capture: `DP1 PP0 TP3` in any order (`Rank::parse_tags`), or the same tags
/// in logfmt's, JSON's or any case's spelling: `dp=1 tp=3`, `dp1 tp3`, `dp:1,tp:3`,
/// `"dp":1,"tp":3` (JSON members, spaces allowed after `:` and `,`), `Dp1_Tp3`,
/// `dp1|tp3`, `dp1/tp3`.
/// The lower- or mixed-case and `=`/`:` forms take only the known tag names (DP, PP,
/// ATTN_CP, MOE_DP, TP, EP), so `rank=2` or `step=7` is never read as a tag.
/// (`parse_tags_capture` reads it through a per-thread memo.)
pub(super) fn read_tags_capture(text: &str) -> Option<Rank> {
    if let Some(r) = Rank::parse_tags(text) {
        return Some(r);
    }
    // `_` after a number separates two tags (`Dp1_Tp3`), as in `Rank::parse_tags`. JSON's
    // quoted keys (`"pp":1, "tp": 0`) lose their quotes, and spaces after `:` or `=` go,
    // so that each tag is one word.
    let mut spaced = String::with_capacity(text.len());
    let mut prev_digit = false;
    let mut after_sep = false;
    for c in text.chars() {
        if c == '"' || (after_sep && c.is_whitespace()) {
            continue;
        }
        spaced.push(if c == '_' && prev_digit { ' ' } else { c });
        prev_digit = c.is_ascii_digit();
        after_sep = c == ':' || c == '=';
    }
    let mut pairs = Vec::new();
    // `|` and `/` separate too (`dp1|tp3`, a Python f-string's; `dp1/tp3`): neither can
    // be part of a tag, and a number after `/` (`tp0/2`, "0 of 2") is no tag, so the
    // whole capture is refused rather than misread.
    for word in spaced
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '|' | '/'))
        .filter(|w| !w.is_empty())
    {
        let split = word.find(|c: char| c.is_ascii_digit())?;
        let (name, num) = word.split_at(split);
        let name = name.trim_end_matches(['=', ':']).to_ascii_uppercase();
        if !crate::base::event::TAG_ORDER.contains(&name.as_str()) {
            return None;
        }
        pairs.push((name, num.parse().ok()?));
    }
    (!pairs.is_empty()).then(|| Rank::from_pairs(pairs))
}

/// A rank capture's text (`tags`, `gpu`, `tp` or `grank`) when it holds a number too large
/// to be a rank (past 2^32 − 1), cut for a note: the prefix read no rank from it, and the
/// line must not pass as rank-less.
pub(in crate::grammar) fn number_too_large(text: &str) -> Option<String> {
    let too_large = text
        .split(|c: char| !c.is_ascii_digit())
        .any(|digits| !digits.is_empty() && digits.parse::<u32>().is_err());
    too_large.then(|| crate::base::text::truncate(&crate::base::text::sanitize(text.trim()), 40))
}

struct Frame<'a> {
    file_name: &'a str,
    function: &'a str,
}

/// `  File "/x/y/model_runner.py", line 12, in load_model` (any prefix before `File`).
fn frame_of(line: &str) -> Option<Frame<'_>> {
    let at = line.find("File \"")?;
    let rest = &line[at + 6..];
    let (path, rest) = rest.split_once('"')?;
    let (_, func) = rest.rsplit_once(", in ")?;
    let file_name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    Some(Frame {
        file_name,
        function: func.trim(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn knowledge() -> Knowledge {
        Knowledge {
            frames: vec![
                FrameRule {
                    function: Some("init_cuda_graphs".into()),
                    file: None,
                    phase: Phase::CudaGraph,
                    fallback: false,
                    sample: None,
                },
                FrameRule {
                    function: Some("execute_model".into()),
                    file: None,
                    phase: Phase::Ready,
                    fallback: false,
                    sample: None,
                },
                FrameRule {
                    function: None,
                    file: Some("weight_utils.py".into()),
                    phase: Phase::WeightLoad,
                    fallback: false,
                    sample: None,
                },
                FrameRule {
                    function: Some("_initialize_kv_caches".into()),
                    file: None,
                    phase: Phase::KvCache,
                    fallback: true,
                    sample: None,
                },
                FrameRule {
                    function: Some("replay".into()),
                    file: Some("cuda_graph_runner.py".into()),
                    phase: Phase::Ready,
                    fallback: false,
                    sample: None,
                },
            ],
            outcomes: vec![OutcomeRule {
                state: OutcomeWord::Consequence,
                literals: vec!["store->get(".into()],
                regex: LazyRegex::new(r"from \[(?P<peer>\d+)\].*store->get\(", true)
                    .expect("regex"),
            }],
            ..Knowledge::empty()
        }
    }

    #[test]
    fn a_tags_capture_reads_logfmt_and_any_case() {
        let r = |t: &str| parse_tags_capture(t).map(|r| r.to_string());
        assert_eq!(r("DP1 TP3").as_deref(), Some("DP1 TP3"));
        assert_eq!(r("dp=1 tp=3").as_deref(), Some("DP1 TP3"));
        assert_eq!(r("tp:3, dp:1").as_deref(), Some("DP1 TP3"));
        assert_eq!(r("Dp1_Tp3").as_deref(), Some("DP1 TP3"));
        assert_eq!(r("attn_cp=2 tp=0").as_deref(), Some("ATTN_CP2 TP0"));
        // JSON members, with or without spaces after `:` and `,`.
        assert_eq!(r(r#""pp":1,"tp":0"#).as_deref(), Some("PP1 TP0"));
        assert_eq!(r(r#""pp": 1, "tp": 0"#).as_deref(), Some("PP1 TP0"));
        assert_eq!(r(r#""rank":2"#), None);
        // Not tags: a global rank, an unknown lower-case name, no number.
        assert_eq!(r("rank=2"), None);
        assert_eq!(r("step=7 tp=1"), None);
        assert_eq!(r("dp= tp="), None);
        // `|` and `/` join tags (a Python f-string's `[dp1|tp3]`); a bare number after
        // `/` (`tp0/2`, "0 of 2") is no tag, so nothing is read rather than TP0.
        assert_eq!(r("dp1|tp3").as_deref(), Some("DP1 TP3"));
        assert_eq!(r("DP1|TP3").as_deref(), Some("DP1 TP3"));
        assert_eq!(r("dp0/tp1").as_deref(), Some("DP0 TP1"));
        assert_eq!(r("tp0/2"), None);
    }

    #[test]
    fn the_outermost_named_frame_gives_the_phase() {
        let tb = "Traceback (most recent call last):\n  File \"/s/model_runner.py\", line 10, in init_cuda_graphs\n    self.capture()\n  File \"/s/runner.py\", line 99, in execute_model\n    x\n";
        assert_eq!(knowledge().phase_from_traceback(tb), Some(Phase::CudaGraph));
        let prefixed = "(Worker_TP1 pid=7) ERROR 01-02 03:04:05 [x.py:1]   File \"/v/weight_utils.py\", line 3, in iterate\n";
        assert_eq!(
            knowledge().phase_from_traceback(prefixed),
            Some(Phase::WeightLoad)
        );
        assert_eq!(knowledge().phase_from_traceback("no frames here"), None);
    }

    #[test]
    fn a_fallback_frame_yields_to_a_named_frame_inside_it() {
        // The engine core's KV set-up also captures the graphs: the capture inside it
        // decides; alone, it gives kv_cache.
        let tb = "  File \"/v/core.py\", line 80, in _initialize_kv_caches\n  File \"/v/abstract.py\", line 9, in collective_rpc\n  File \"/v/model_runner.py\", line 10, in init_cuda_graphs\n";
        assert_eq!(knowledge().phase_from_traceback(tb), Some(Phase::CudaGraph));
        let alone = "  File \"/v/core.py\", line 80, in _initialize_kv_caches\n  File \"/v/kv.py\", line 9, in get_kv_cache_config\n";
        assert_eq!(
            knowledge().phase_from_traceback(alone),
            Some(Phase::KvCache)
        );
    }

    #[test]
    fn a_rule_with_function_and_file_needs_both() {
        let k = knowledge();
        let replay = "  File \"/s/cuda_graph_runner.py\", line 5, in replay\n";
        assert_eq!(k.phase_from_traceback(replay), Some(Phase::Ready));
        let other = "  File \"/s/other_runner.py\", line 5, in replay\n";
        assert_eq!(k.phase_from_traceback(other), None);
    }

    #[test]
    fn an_outcome_wording_names_its_peer() {
        let text = "DistBackendError: [1] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error";
        assert_eq!(
            knowledge().outcome_of(text),
            Some(OutcomeMatch {
                state: OutcomeWord::Consequence,
                peer: Some(0)
            })
        );
        assert_eq!(knowledge().outcome_of("ValueError: bad"), None);
    }
}
