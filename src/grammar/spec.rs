//! The TOML shape of a grammar file. Unknown keys are rejected, so a typo in a user's
//! grammar is an error and not a silently ignored setting.

use std::collections::BTreeMap;

use serde::Deserialize;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrammarSpec {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub(crate) description: String,
    #[serde(default)]
    pub(crate) prefix: Vec<PrefixSpec>,
    #[serde(default)]
    pub event: Vec<EventSpec>,
    #[serde(default)]
    pub(crate) noise: Vec<NoiseSpec>,
    #[serde(default)]
    pub sample: Vec<SampleSpec>,
    /// Traceback frames that say which start-up phase was running.
    #[serde(default)]
    pub(crate) frame_phase: Vec<FramePhaseSpec>,
    /// Wordings that say a failure was not a rank's own: a consequence of another rank's
    /// failure, a termination by the launcher, a stall.
    #[serde(default)]
    pub(crate) outcome: Vec<OutcomeSpec>,
    /// Load order among the built-in grammars (lower first). Events are tried in load
    /// order, so a catch-all grammar (`streams`) takes a high number. User grammars load
    /// after the built-in ones whatever their priority.
    #[serde(default = "default_priority")]
    pub(crate) priority: i32,
    /// Rank-naming text at the end of a record (`… rank=1`, as TGI's launcher prints).
    #[serde(default)]
    pub(crate) suffix: Vec<SuffixSpec>,
    /// What a process name in a prefix's `proc` capture says: a worker's rank, an engine
    /// process that reports figures but is no rank, or the launcher.
    #[serde(default)]
    pub(crate) process: Vec<ProcessSpec>,
    /// Lines of this grammar that name neither a process id nor a rank come from this
    /// process: `engine` (a driver or engine process, vLLM V0's) or `launcher` (default).
    #[serde(default)]
    pub(crate) without_pid: Option<String>,
    /// Where a configuration dump starts in a `server_args` event and how it is written.
    #[serde(default)]
    pub(crate) config: Vec<ConfigSpec>,
    /// What the grammar describes: `server` (default: an inference server, whose runs
    /// `diff` compares as the same server or not) or `component` (a library any server
    /// prints through, PyTorch or NCCL, which says nothing about which server ran).
    #[serde(default)]
    pub(crate) describes: Option<String>,
    /// What the global ranks PyTorch prints (`[rank6]:`) number: `per_replica` (default:
    /// one world per data-parallel replica, global = pp · tp_size + tp, SGLang) or
    /// `across_replicas` (one world spans the replicas: global = dp · pp_size · tp_size +
    /// pp · tp_size + tp, as vLLM offsets it by the data-parallel rank).
    #[serde(default)]
    pub(crate) world: Option<String>,
    /// Settings (configuration keys or environment variables) that can explain a failure
    /// of a kind: `diff` ranks the changes between two runs by them.
    #[serde(default)]
    pub(crate) suspect: Vec<SuspectSpec>,
    /// How the server's memory splits into categories and how it sizes its KV pool
    /// (`grammar::memory_model`); `diff`'s memory remedies are computed from it too.
    #[serde(default)]
    pub(crate) memory_model: Option<super::memory_model::MemoryModelSpec>,
    /// Figures of the grammar's own, beside the built-in ones (`kv_pages` counted in
    /// `pages`), each with its unit and the direction that is worse.
    #[serde(default)]
    pub(crate) figure: Vec<FigureSpec>,
}

/// `[[figure]] name = "kv_pages", unit = "pages", worse = "less"`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FigureSpec {
    /// Lower case, `_` between words; not a built-in figure's name.
    pub(crate) name: String,
    /// `bytes`, `seconds`, `tokens`, `count`, or a word naming what is counted (`pages`).
    pub(crate) unit: String,
    /// `more`, `less` or `neither`: which way the figure moving is worse.
    pub(crate) worse: String,
}

/// Settings that can explain a failure: a change of one of them between a working and a
/// failing run is a likely trigger, the likelier when the failure's lines contain one of
/// `words`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SuspectSpec {
    /// Failure kinds (`nccl`, `exception`, `timeout`, `oom`, `not_enough_memory`).
    pub(crate) kinds: Vec<String>,
    /// Only for failures in these phases (all when empty).
    #[serde(default)]
    pub(crate) phases: Vec<String>,
    /// Configuration keys or environment variables; a trailing `*` matches a prefix
    /// (`NCCL_IB_*`).
    pub(crate) settings: Vec<String>,
    /// Text (any case) that, found in the failure's line, traceback or the run's
    /// unattributed error lines, ties the failure to these settings.
    #[serde(default)]
    pub(crate) words: Vec<String>,
}

fn default_priority() -> i32 {
    50
}

/// A rank printed at the end of a record. Captures as in a prefix: `tags`, `tp`, `grank`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SuffixSpec {
    pub(crate) id: String,
    /// Matched against the end of the record's message (anchor it with `$`).
    pub(crate) regex: String,
}

/// A process name (a prefix's `proc` capture) and what it says.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProcessSpec {
    /// Applied to the process name. Captures: `tags` (rank tags, separated by spaces or
    /// `_`: `DP0_TP2`), `global_rank` (a global rank number), `dp` (an engine's replica).
    pub(crate) name: String,
    /// `worker` (a rank), `engine` (reports figures, is no rank) or `launcher`.
    pub(crate) role: String,
}

/// `server_args=ServerArgs(…)`: the marker, and the syntax of what follows it.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ConfigSpec {
    /// Fixed text just before the configuration.
    pub(crate) marker: String,
    /// `python_call` (`Name(k=v, …)`, also `Namespace(…)`), `python_kwargs` (`k=v, …`),
    /// `python_dict` (`{'k': v, …}`) or `rust_debug` (`Args { k: v, … }`).
    pub(crate) syntax: String,
    /// `json`: the configuration is printed inside a JSON string (`"msg":"args: Args {
    /// model: \"/m\" }"`), its quotes and backslashes escaped; it is unescaped up to the
    /// string's closing quote before it is read.
    #[serde(default)]
    pub(crate) escaped: Option<String>,
}

/// Where an event reads a rank from its message.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RankFromSpec {
    /// `assignment` (captures named by lower-case tags: `dp`, `pp`, `tp`, … give the
    /// process's rank), `global` (a global rank number names the process), `communicator`
    /// (a rank within one communicator, the weakest evidence), or `line` (the number names
    /// this line's rank only, as a TP rank).
    pub(crate) evidence: String,
    /// The capture holding the number (not for `assignment`).
    #[serde(default)]
    pub(crate) capture: Option<String>,
}

/// Where a figure's value comes from: one capture, or alternatives tried in order, each
/// a capture or captures joined by ` + ` (summed: `k_size_bytes + v_size_bytes`).
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum FigureSource {
    One(String),
    Alternatives(Vec<String>),
}

/// An event's figures in the order the file writes them (the order a phase lists them).
#[derive(Clone, Debug, Default)]
pub(crate) struct Figures(pub(crate) Vec<(String, FigureSource)>);

impl<'de> Deserialize<'de> for Figures {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Figures, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Figures;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a table of figure names to captures")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<Figures, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = m.next_entry::<String, FigureSource>()? {
                    out.push((k, v));
                }
                Ok(Figures(out))
            }
        }
        d.deserialize_map(V)
    }
}

impl FigureSource {
    pub(crate) fn alternatives(&self) -> Vec<&str> {
        match self {
            FigureSource::One(s) => vec![s.as_str()],
            FigureSource::Alternatives(v) => v.iter().map(String::as_str).collect(),
        }
    }
}

/// `File "…/model_runner.py", line N, in init_memory_pool` → `kv_cache`. A frame matches
/// by its function name, its file's base name, or both when both are given.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FramePhaseSpec {
    #[serde(default)]
    pub(crate) function: Option<String>,
    /// The file's base name (`cuda_graph_runner.py`).
    #[serde(default)]
    pub(crate) file: Option<String>,
    pub(crate) phase: String,
    /// A frame that runs several start-up steps (vLLM's `_initialize_kv_caches` also
    /// captures the graphs): it names its phase only when no frame inside it is named.
    #[serde(default)]
    pub(crate) fallback: bool,
    /// A traceback frame line this entry must map to its phase (`grammars check`).
    #[serde(default)]
    pub(crate) sample: Option<String>,
}

/// A failure wording (in the failing line or its traceback) that gives the rank's outcome.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct OutcomeSpec {
    /// `consequence`, `terminated` or `stalled`.
    pub(crate) state: String,
    /// Fixed text the wording contains, checked before the regex runs.
    pub(crate) literals: Vec<String>,
    /// A capture named `peer` names the rank (its number) the failure came from.
    pub(crate) regex: String,
}

/// How a record of this family starts. Named captures the scanner reads: `date`
/// (YYYY-MM-DD unless `date_format` says otherwise), `md` (MM-DD, year inferred), `time`
/// (HH:MM:SS[.fff] unless `time_format`), `stamp` (date and time in one, read with
/// `stamp_format`), `tags` (rank tags
/// such as ` DP1 TP3`), `tp` or `gpu` (a bare number, read as a TP rank), `grank` (a global
/// rank, c10's `[rank3]:`, mapped onto the run's ranks by the model), `pid`, and
/// `proc` (a vLLM-style process name such as `Worker_TP3`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PrefixSpec {
    pub(crate) id: String,
    pub(crate) regex: String,
    /// Literals a line of this family begins with; the per-line classification uses these
    /// instead of running the regex on every line.
    #[serde(default)]
    pub(crate) starts_with: Vec<String>,
    /// strftime-style format of the `date` capture (default `%Y-%m-%d`).
    #[serde(default)]
    pub(crate) date_format: Option<String>,
    /// strftime-style format of the `time` capture (default `%H:%M:%S%.f`).
    #[serde(default)]
    pub(crate) time_format: Option<String>,
    /// strftime-style format of the `stamp` capture (`%m/%d/%Y-%H:%M:%S`); required with it.
    #[serde(default)]
    pub(crate) stamp_format: Option<String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventSpec {
    pub kind: String,
    /// Fixed text that every matching line contains; the buffer scan looks for these.
    pub(crate) literals: Vec<String>,
    /// Applied to the message (after the prefix) of lines that hit a literal.
    pub(crate) regex: String,
    /// Unit of each named capture; captures without one are kept as text.
    #[serde(default)]
    pub(crate) units: BTreeMap<String, Unit>,
    /// Following lines that start no record (a traceback) belong to this one.
    #[serde(default)]
    pub(crate) traceback: bool,
    /// Constant fields every match carries (`failure = "not_enough_memory"`).
    #[serde(default)]
    pub(crate) set: BTreeMap<String, String>,
    /// Every rank prints this line as it leaves a collective (a barrier, an all-reduce),
    /// so all ranks print it at nearly the same true instant: node clocks are aligned on
    /// these events.
    #[serde(default)]
    pub(crate) barrier_exit: bool,
    /// The start-up phase this event belongs to (`launch`, `dist_init`, `weight_load`,
    /// `kv_cache`, `cuda_graph`, `ready`); other events of the same kind in this grammar
    /// share it.
    #[serde(default)]
    pub(crate) phase: Option<String>,
    /// Whether the event `begins`, `ends` or is `inside` its phase (default `inside`).
    #[serde(default)]
    pub(crate) edge: Option<String>,
    /// With `edge = "ends"`: the phase this line begins as it ends its own, for a server
    /// that prints no begin line for the next phase (`then = "cuda_graph"` on the line
    /// that closes `kv_cache`).
    #[serde(default)]
    pub(crate) then: Option<String>,
    /// The figures the event reports, by name (the built-in `mem_usage`, `avail_before`,
    /// `avail_after`, `tokens`, `kv_avail`, `kv_size`, `elapsed`, or one the grammar
    /// declares in `[[figure]]`) → the capture(s).
    #[serde(default)]
    pub(crate) figures: Figures,
    /// A rank named in the message.
    #[serde(default)]
    pub(crate) rank: Option<RankFromSpec>,
}

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
pub(crate) enum Unit {
    #[serde(rename = "text")]
    Text,
    #[serde(rename = "int")]
    Int,
    #[serde(rename = "float")]
    Float,
    #[serde(rename = "s")]
    Seconds,
    /// A time printed in milliseconds (`took_ms=828`), read as seconds.
    #[serde(rename = "ms")]
    Milliseconds,
    /// A number followed by its own unit word: `20.00 MiB`, `0 bytes`.
    #[serde(rename = "size")]
    Size,
    #[serde(rename = "bytes")]
    Bytes,
    #[serde(rename = "KiB")]
    KiB,
    #[serde(rename = "MiB")]
    MiB,
    #[serde(rename = "GiB")]
    GiB,
    /// Printed `MB`, meaning MiB (2^20 bytes), as the servers we read use it.
    #[serde(rename = "MB")]
    MbMeaningMiB,
    /// Printed `GB`, meaning GiB (2^30 bytes): SGLang and vLLM V0 divide by 2^30.
    #[serde(rename = "GB")]
    GbMeaningGiB,
    /// Printed `MB`, meaning 10^6 bytes (NVML, `nvidia-smi --format=csv` in decimal mode).
    #[serde(rename = "decimal MB")]
    DecimalMb,
    /// Printed `GB`, meaning 10^9 bytes (NVML's `mem_total="85.52 GB"`).
    #[serde(rename = "decimal GB")]
    DecimalGb,
}

impl Unit {
    /// The unit as a grammar writes it in `units` (what messages quote back).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Unit::Text => "text",
            Unit::Int => "int",
            Unit::Float => "float",
            Unit::Seconds => "s",
            Unit::Milliseconds => "ms",
            Unit::Size => "size",
            Unit::Bytes => "bytes",
            Unit::KiB => "KiB",
            Unit::MiB => "MiB",
            Unit::GiB => "GiB",
            Unit::MbMeaningMiB => "MB",
            Unit::GbMeaningGiB => "GB",
            Unit::DecimalMb => "decimal MB",
            Unit::DecimalGb => "decimal GB",
        }
    }

    /// A unit that reads a memory amount (into bytes).
    pub(crate) fn is_memory(self) -> bool {
        matches!(
            self,
            Unit::Size
                | Unit::Bytes
                | Unit::KiB
                | Unit::MiB
                | Unit::GiB
                | Unit::MbMeaningMiB
                | Unit::GbMeaningGiB
                | Unit::DecimalMb
                | Unit::DecimalGb
        )
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NoiseSpec {
    /// Names the entry where an error speaks of it (required: `check_noise` says so in
    /// words rather than serde's bare "missing field").
    #[serde(default)]
    pub(crate) id: Option<String>,
    pub(crate) literals: Vec<String>,
    /// The literals mark serving traffic (a scheduler's step, a request's log): a line in
    /// which one of them begins no later than every event literal is noise, whatever
    /// follows it. A request line quotes its prompt, and a prompt may say anything (`CUDA
    /// out of memory`); a step's counters are no event either.
    #[serde(default)]
    pub(crate) traffic: bool,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SampleSpec {
    pub(crate) line: String,
    /// The event kind the line must give; absent means it must give none.
    #[serde(default)]
    pub(crate) kind: Option<String>,
    #[serde(default)]
    pub(crate) rank: Option<String>,
    #[serde(default)]
    pub(crate) fields: BTreeMap<String, toml::Value>,
    /// The stamp the line's prefix must give, `YYYY-MM-DD HH:MM:SS[.fff]`.
    #[serde(default)]
    pub(crate) time: Option<String>,
}
