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
    pub description: String,
    #[serde(default)]
    pub prefix: Vec<PrefixSpec>,
    #[serde(default)]
    pub event: Vec<EventSpec>,
    #[serde(default)]
    pub noise: Vec<NoiseSpec>,
    #[serde(default)]
    pub sample: Vec<SampleSpec>,
    /// Traceback frames that say which start-up phase was running.
    #[serde(default)]
    pub frame_phase: Vec<FramePhaseSpec>,
    /// Wordings that say a failure was not a rank's own: a consequence of another rank's
    /// failure, a termination by the launcher, a stall.
    #[serde(default)]
    pub outcome: Vec<OutcomeSpec>,
}

/// `File "…/model_runner.py", line N, in init_memory_pool` → `kv_cache`. A frame matches
/// by its function name, or by its file name when no function is given.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FramePhaseSpec {
    #[serde(default)]
    pub function: Option<String>,
    /// The file's base name (`cuda_graph_runner.py`).
    #[serde(default)]
    pub file: Option<String>,
    pub phase: String,
}

/// A failure wording (in the failing line or its traceback) that gives the rank's outcome.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutcomeSpec {
    /// `consequence`, `terminated` or `stalled`.
    pub state: String,
    /// Fixed text the wording contains, checked before the regex runs.
    pub literals: Vec<String>,
    /// A capture named `peer` names the rank (its number) the failure came from.
    pub regex: String,
}

/// How a record of this family starts. Named captures the scanner reads: `date`
/// (YYYY-MM-DD), `md` (MM-DD, year inferred), `time` (HH:MM:SS[.fff]), `tags` (rank tags
/// such as ` DP1 TP3`), `tp` or `gpu` (a bare number, read as a TP rank), `grank` (a global
/// rank, c10's `[rank3]:`, mapped onto the run's ranks by the model), `pid`, and
/// `proc` (a vLLM-style process name such as `Worker_TP3`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrefixSpec {
    pub id: String,
    pub regex: String,
    /// Literals a line of this family begins with; the per-line classification uses these
    /// instead of running the regex on every line.
    #[serde(default)]
    pub starts_with: Vec<String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventSpec {
    pub kind: String,
    /// Fixed text that every matching line contains; the buffer scan looks for these.
    pub literals: Vec<String>,
    /// Applied to the message (after the prefix) of lines that hit a literal.
    pub regex: String,
    /// Unit of each named capture; captures without one are kept as text.
    #[serde(default)]
    pub units: BTreeMap<String, Unit>,
    /// Following lines that start no record (a traceback) belong to this one.
    #[serde(default)]
    pub traceback: bool,
    /// Constant fields every match carries (`failure = "not_enough_memory"`).
    #[serde(default)]
    pub set: BTreeMap<String, String>,
    /// Every rank prints this line as it leaves a collective (a barrier, an all-reduce),
    /// so all ranks print it at nearly the same true instant: node clocks are aligned on
    /// these events.
    #[serde(default)]
    pub barrier_exit: bool,
}

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
pub enum Unit {
    #[serde(rename = "text")]
    Text,
    #[serde(rename = "int")]
    Int,
    #[serde(rename = "float")]
    Float,
    #[serde(rename = "s")]
    Seconds,
    /// A number followed by its own unit word: `20.00 MiB`, `0 bytes`.
    #[serde(rename = "size")]
    Size,
    #[serde(rename = "bytes")]
    Bytes,
    #[serde(rename = "KiB")]
    KiB,
    #[serde(rename = "MiB")]
    MiB,
    /// SGLang's `GB` is GiB; say `GiB` for it.
    #[serde(rename = "GiB")]
    GiB,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoiseSpec {
    pub id: String,
    pub literals: Vec<String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SampleSpec {
    pub line: String,
    /// The event kind the line must give; absent means it must give none.
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub rank: Option<String>,
    #[serde(default)]
    pub fields: BTreeMap<String, toml::Value>,
}
