//! What a server's failures mean, as grammar files state it: which traceback frames belong
//! to which phase, and which wordings say that a rank failed because of another, was
//! terminated, or stalled. The run model reads these; it knows no server's wording itself.

use regex::Regex;

use super::spec::{FramePhaseSpec, OutcomeSpec};
use super::GrammarError;
use crate::event::Phase;

/// An outcome other than a rank's own failure, as a wording reveals it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutcomeWord {
    /// Failed because another rank failed (barrier, store, collective, watchdog after a
    /// peer's death).
    Consequence,
    /// Killed or shut down by the launcher after a failure elsewhere.
    Terminated,
    /// A timeout or watchdog says the rank waited and gave up.
    Stalled,
}

impl OutcomeWord {
    pub fn from_name(s: &str) -> Option<OutcomeWord> {
        Some(match s {
            "consequence" => OutcomeWord::Consequence,
            "terminated" => OutcomeWord::Terminated,
            "stalled" => OutcomeWord::Stalled,
            _ => return None,
        })
    }
}

#[derive(Clone, Debug)]
pub struct FrameRule {
    pub function: Option<String>,
    pub file: Option<String>,
    pub phase: Phase,
}

#[derive(Clone, Debug)]
pub struct OutcomeRule {
    pub state: OutcomeWord,
    pub literals: Vec<String>,
    pub regex: Regex,
}

/// What a wording says: the outcome, and the rank number it names, if any.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutcomeMatch {
    pub state: OutcomeWord,
    pub peer: Option<u32>,
}

/// The frame tables and outcome wordings of every loaded grammar.
#[derive(Clone, Debug, Default)]
pub struct Knowledge {
    pub frames: Vec<FrameRule>,
    pub outcomes: Vec<OutcomeRule>,
}

pub(super) fn compile_frames(
    origin: &str,
    specs: &[FramePhaseSpec],
) -> Result<Vec<FrameRule>, GrammarError> {
    specs
        .iter()
        .map(|f| {
            let phase = Phase::from_name(&f.phase).ok_or_else(|| GrammarError::Knowledge {
                origin: origin.into(),
                message: format!(
                    "frame_phase: `{}` is not a phase (launch, dist_init, weight_load, kv_cache, cuda_graph, ready)",
                    f.phase
                ),
            })?;
            if f.function.is_none() && f.file.is_none() {
                return Err(GrammarError::Knowledge {
                    origin: origin.into(),
                    message: "frame_phase: give a `function` or a `file`".into(),
                });
            }
            Ok(FrameRule {
                function: f.function.clone(),
                file: f.file.clone(),
                phase,
            })
        })
        .collect()
}

pub(super) fn compile_outcomes(
    origin: &str,
    specs: &[OutcomeSpec],
) -> Result<Vec<OutcomeRule>, GrammarError> {
    specs
        .iter()
        .map(|o| {
            let state =
                OutcomeWord::from_name(&o.state).ok_or_else(|| GrammarError::Knowledge {
                    origin: origin.into(),
                    message: format!(
                        "outcome: state `{}` is not consequence, terminated or stalled",
                        o.state
                    ),
                })?;
            if o.literals.is_empty() || o.literals.iter().any(String::is_empty) {
                return Err(GrammarError::Knowledge {
                    origin: origin.into(),
                    message: format!("outcome `{}` has no literal", o.regex),
                });
            }
            let regex = Regex::new(&o.regex).map_err(|e| GrammarError::Knowledge {
                origin: origin.into(),
                message: format!("outcome regex: {e}"),
            })?;
            Ok(OutcomeRule {
                state,
                literals: o.literals.clone(),
                regex,
            })
        })
        .collect()
}

impl Knowledge {
    /// The phase a traceback ran in: its outermost frame that a table names. Frames print
    /// outermost first; the outermost recognised one is the start-up step that was running
    /// (`capture_model` → cuda_graph), where an inner one may be shared by several steps
    /// (`execute_model` runs during profiling, capture and serving).
    pub fn phase_from_traceback(&self, tb: &str) -> Option<Phase> {
        if self.frames.is_empty() {
            return None;
        }
        for line in tb.lines() {
            let Some(frame) = frame_of(line) else {
                continue;
            };
            let hit = self.frames.iter().find(|r| match (&r.function, &r.file) {
                (Some(f), _) => frame.function == f,
                (None, Some(file)) => frame.file_name == file,
                (None, None) => false,
            });
            if let Some(r) = hit {
                return Some(r.phase);
            }
        }
        None
    }

    /// The phase a single frame names (a snapshot's stack frame: function and file).
    pub fn phase_of_frame(&self, function: &str, file: &str) -> Option<Phase> {
        let base = file.rsplit(['/', '\\']).next().unwrap_or(file);
        self.frames
            .iter()
            .find(|r| match (&r.function, &r.file) {
                (Some(f), _) => function == f,
                (None, Some(x)) => base == x,
                (None, None) => false,
            })
            .map(|r| r.phase)
    }

    /// The first outcome wording found in a failure's text (its line and traceback).
    pub fn outcome_of(&self, text: &str) -> Option<OutcomeMatch> {
        self.outcomes.iter().find_map(|r| {
            if !r.literals.iter().any(|l| text.contains(l.as_str())) {
                return None;
            }
            let caps = r.regex.captures(text)?;
            Some(OutcomeMatch {
                state: r.state,
                peer: caps.name("peer").and_then(|m| m.as_str().parse().ok()),
            })
        })
    }
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
                },
                FrameRule {
                    function: Some("execute_model".into()),
                    file: None,
                    phase: Phase::Ready,
                },
                FrameRule {
                    function: None,
                    file: Some("weight_utils.py".into()),
                    phase: Phase::WeightLoad,
                },
            ],
            outcomes: vec![OutcomeRule {
                state: OutcomeWord::Consequence,
                literals: vec!["store->get(".into()],
                regex: Regex::new(r"from \[(?P<peer>\d+)\].*store->get\(").expect("regex"),
            }],
        }
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
