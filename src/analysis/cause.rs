//! The cause of a candidate's failure that is not about memory (an NCCL bootstrap error, an
//! exception while loading weights, a timeout): the root failure itself, with its line,
//! and the changes between the two runs ranked by how well they explain it — by the
//! grammars' `[[suspect]]` tables, and by the failure's own words.

use crate::base::event::{kind, Event, Rank};
use crate::grammar::remedy::SuspectRule;
use crate::model::config::ConfigDiff;
use crate::model::{Failure, FailureKind, Phase, Run};

use super::env::EnvChange;

/// A changed setting: a configuration key or an environment variable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Setting {
    /// A configuration key.
    Config(String),
    /// An environment variable.
    Env(String),
}

impl Setting {
    pub(crate) fn name(&self) -> &str {
        match self {
            Setting::Config(k) | Setting::Env(k) => k,
        }
    }
}

/// Why a change is suspected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SuspectWhy {
    /// A grammar lists it for this kind of failure, and the failure's lines hold one of
    /// its words (quoted, with where it was found).
    Named {
        /// How many of the rule's words the lines hold (the value counts as one).
        words: usize,
        /// What tied it: the first of the rule's words the lines hold, as the rule writes
        /// it, else the new value, as the candidate's server prints it.
        found: String,
        /// The first line holding one, as printed.
        said: String,
        /// The file of that line.
        source: String,
        /// Its line number.
        line: u64,
    },
    /// A grammar lists it for this kind of failure (and phase).
    Listed,
    /// No grammar ties it to this failure: another change between the runs.
    Other,
}

impl SuspectWhy {
    fn score(&self) -> (u8, usize) {
        match self {
            SuspectWhy::Named { words, .. } => (2, *words),
            SuspectWhy::Listed => (1, 0),
            SuspectWhy::Other => (0, 0),
        }
    }
}

/// A changed setting suspected of the failure, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Suspect {
    /// The setting that changed.
    pub setting: Setting,
    /// Why it is suspected.
    pub why: SuspectWhy,
}

/// A line quoted as evidence.
#[derive(Clone, Debug, PartialEq)]
pub struct Quote {
    /// The file.
    pub source: String,
    /// The line number.
    pub line: u64,
    /// The line as printed (sanitised).
    pub text: String,
}

/// A failed candidate's root failure and the changes between the runs ranked against it.
#[derive(Clone, Debug, PartialEq)]
pub struct FailureCause {
    /// The root rank.
    pub rank: Rank,
    pub(crate) kind: FailureKind,
    pub(crate) phase: Phase,
    /// The root stalled (its outcome), worded so as `summary` does: a hung rank that printed
    /// no timeout of its own did not "time out".
    pub(crate) stalled: bool,
    /// For a root whose own log says nothing of its end: who reported it dead (the
    /// quoted line is theirs).
    pub(crate) reported_by: Option<String>,
    /// The root's failure line.
    pub quote: Option<Quote>,
    /// Error lines no rank printed (NCCL's `WARN`, a launcher's) that hold a suspect's
    /// word: what the failure said in more detail.
    pub(crate) detail: Vec<Quote>,
    /// The changes between the runs, likeliest first.
    pub suspects: Vec<Suspect>,
}

/// Memory failures have their own cause (the figures, the snapshots).
pub(crate) fn is_memory(kind: FailureKind) -> bool {
    matches!(kind, FailureKind::Oom | FailureKind::NotEnoughMemory)
}

/// The candidate's root failure and the changes ranked against it; `None` when the
/// candidate has no root failure.
pub(crate) fn failure_cause(
    candidate: &Run,
    config: Option<&ConfigDiff>,
    env: &[EnvChange],
) -> Option<FailureCause> {
    let (root, failure) = candidate.root_failure()?;
    let rules: Vec<&SuspectRule> = (candidate.remedy_rules.suspects.iter())
        // A rank another process reported dead died, whatever its line says of how
        // (`killed by signal 9` makes its kind `signal`): a `died` suspect explains it too.
        .filter(|r| {
            r.applies(failure.kind, failure.phase)
                || (failure.reported_by.is_some() && r.applies(FailureKind::Died, failure.phase))
        })
        .collect();
    let quote = failure.origin.as_ref().map(|o| Quote {
        source: candidate.source_name(o).to_string(),
        line: o.line,
        text: failure.message.clone(),
    });
    let texts = failure_texts(candidate, &root.rank, failure, quote.as_ref());
    let changed = changed_settings(config, env);
    let mut detail: Vec<Quote> = Vec::new();
    let mut suspects: Vec<Suspect> = changed
        .into_iter()
        .map(|(setting, value)| {
            let mut why = SuspectWhy::Other;
            for rule in rules.iter().filter(|r| r.names(setting.name())) {
                // The value itself in the failure's lines ties it as well as a word does.
                let this = match named_in(&texts, rule, value.as_deref()) {
                    Some((words, found, said, q)) => {
                        if q.line != quote.as_ref().map_or(0, |x| x.line)
                            && !detail
                                .iter()
                                .any(|d| d.line == q.line && d.source == q.source)
                        {
                            detail.push(q.clone());
                        }
                        SuspectWhy::Named {
                            words,
                            found,
                            said,
                            source: q.source,
                            line: q.line,
                        }
                    }
                    None => SuspectWhy::Listed,
                };
                if this.score() > why.score() {
                    why = this;
                }
            }
            Suspect { setting, why }
        })
        .collect();
    // Stable: within a rank, the configuration's order, then the environment's.
    suspects.sort_by_key(|s| std::cmp::Reverse(s.why.score()));
    Some(FailureCause {
        rank: root.rank.clone(),
        kind: failure.kind,
        phase: failure.phase,
        stalled: failure.outcome == crate::model::Outcome::Stalled,
        reported_by: failure.reported_by.clone(),
        quote,
        detail,
        suspects,
    })
}

/// The text the failure's words are looked for in: its line (with the fields a
/// rank-less `[[suffix]]` cut from its message, `err="…"`) and traceback, and the error
/// lines no rank printed (NCCL's `WARN` lines have no rank unless joined by pid), or the
/// root rank printed elsewhere, each with its cut fields too.
fn failure_texts(
    candidate: &Run,
    root: &Rank,
    failure: &Failure,
    quote: Option<&Quote>,
) -> Vec<Quote> {
    let mut texts: Vec<Quote> = Vec::new();
    if let Some(q) = quote {
        texts.push(q.clone());
    }
    // The failure's own event, for its traceback's lines and what its suffix cut.
    let own =
        (failure.origin.as_ref()).and_then(|o| candidate.events.iter().find(|e| &e.origin == o));
    if let (Some(tb), Some(q)) = (&failure.traceback, quote) {
        texts.extend(traceback_quotes(
            tb,
            q,
            own.and_then(Event::detail) == Some(tb.as_str()),
        ));
    }
    let trailer = own.and_then(Event::trailer);
    if let (Some(t), Some(q)) = (trailer, quote) {
        texts.push(Quote {
            source: q.source.clone(),
            line: q.line,
            text: trailing_fields(t).to_string(),
        });
    }
    let unranked: Vec<Quote> = (candidate.events.iter())
        .filter(|e| e.rank.is_none() || e.rank.as_ref() == Some(root))
        .filter(|e| e.kind == kind::ERROR)
        .filter(|e| Some(e.origin.line) != quote.map(|q| q.line))
        .map(|e| Quote {
            source: candidate.source_name(&e.origin).to_string(),
            line: e.origin.line,
            // One line each: a word is found, and quoted, in the line that holds it.
            text: match e.trailer() {
                Some(t) => format!("{}\n{}", e.message, trailing_fields(t)),
                None => e.message.to_string(),
            },
        })
        .collect();
    texts.extend(unranked.iter().cloned());
    texts
}

/// The fields a suffix cut, as they are quoted: without the quote that closed the
/// message, the separators before the first field and a JSON record's closing brace
/// (`","err":"…"}` is quoted `"err":"…"`, logfmt's `" err="…" bs=512` `err="…" bs=512`).
fn trailing_fields(trailer: &str) -> &str {
    let t = trailer.strip_prefix('"').unwrap_or(trailer);
    let t = t.trim_start_matches(|c: char| c == ',' || c.is_whitespace());
    let t = t.trim_end();
    t.strip_suffix('}').unwrap_or(t).trim_end()
}

/// Each of the rule's words (and the setting's new value) found in the lines: how many,
/// the first found (as the rule or the server writes it) and the first line holding it. A word is found anywhere in a line, case aside; the new
/// value (three characters or more) only as a whole token, not inside a longer number or
/// name: `512` is held by `bs=512` and `(512)`, not by `5120` or `v512b`.
fn named_in(
    texts: &[Quote],
    rule: &SuspectRule,
    value: Option<&str>,
) -> Option<(usize, String, String, Quote)> {
    let value = value.filter(|v| v.len() >= 3);
    let written: Vec<&str> = (rule.words.iter().map(String::as_str))
        .chain(value)
        .collect();
    let mut first: Option<(&str, String, Quote)> = None;
    let mut n = 0;
    for (i, &shown) in written.iter().enumerate() {
        let w = shown.to_lowercase();
        let w = w.as_str();
        let is_value = i == rule.words.len();
        let hit = texts.iter().find_map(|q| {
            q.text
                .lines()
                .find(|l| {
                    let l = l.to_lowercase();
                    if is_value {
                        holds_token(&l, w)
                    } else {
                        l.contains(w)
                    }
                })
                .map(|l| (l.trim().to_string(), q.clone()))
        });
        if let Some((said, q)) = hit {
            n += 1;
            first.get_or_insert((shown, said, q));
        }
    }
    first.map(|(found, said, q)| (n, found.to_string(), said, q))
}

/// `value` in `line` with no letter, digit, `.` or `_` on either side.
fn holds_token(line: &str, value: &str) -> bool {
    let part = |c: char| c.is_alphanumeric() || c == '.' || c == '_';
    line.match_indices(value).any(|(at, _)| {
        !line[..at].chars().next_back().is_some_and(part)
            && !line[at + value.len()..].chars().next().is_some_and(part)
    })
}

/// The settings the candidate changed, each with its new value as the candidate's server
/// prints it: configuration keys changed, added (with their value) or removed (none),
/// then environment variables with the candidate's value.
fn changed_settings(
    config: Option<&ConfigDiff>,
    env: &[EnvChange],
) -> Vec<(Setting, Option<String>)> {
    let mut changed: Vec<(Setting, Option<String>)> = Vec::new();
    if let Some(cd) = config {
        let now = cd.spelling.1;
        // A string's value without the quotes its configuration prints around it.
        let bare = |v: String| Some(v.trim_matches(|c| c == '"' || c == '\'').to_string());
        let keys = (cd
            .changed
            .iter()
            .map(|c| (c.key.clone(), bare(c.new.spelled(now)))))
        .chain(
            cd.added
                .iter()
                .map(|(k, v)| (k.clone(), bare(v.spelled(now)))),
        )
        .chain(cd.removed.iter().map(|(k, _)| (k.clone(), None)));
        changed.extend(keys.map(|(k, v)| (Setting::Config(k), v)));
    }
    for e in env {
        // A setting the candidate never got to print explains nothing by its absence.
        if e.candidate.is_none() && !e.candidate_logged {
            continue;
        }
        changed.push((Setting::Env(e.name.clone()), e.candidate.clone()));
    }
    changed
}

/// The lines of a failure's traceback message (`message_start`), each quoted at its
/// own line where that can be told: a traceback the failure's line opened follows it line
/// by line (`own`), and one whose message begins with the failure's own line (the
/// exception line closing a traceback, SGLang's and vLLM's shape) goes on after it. Else
/// the message is one quote at the failure's line. A traceback's lines are counted as
/// consecutive lines of the file: one interleaved with another process's records may
/// shift a quote's line.
fn traceback_quotes(tb: &str, q: &Quote, own: bool) -> Vec<Quote> {
    let lines: Vec<&str> = tb.lines().collect();
    let from = message_start(&lines);
    let message = &lines[from..];
    let failure_line = q.text.lines().next().unwrap_or("").trim();
    let first_line = if own {
        Some(q.line + 1 + from as u64)
    } else if (message.first())
        .is_some_and(|l| !failure_line.is_empty() && l.trim() == failure_line)
    {
        Some(q.line)
    } else {
        None
    };
    match first_line {
        Some(first) => (message.iter().enumerate())
            .map(|(k, text)| Quote {
                source: q.source.clone(),
                line: first + k as u64,
                text: text.to_string(),
            })
            .collect(),
        None => vec![Quote {
            source: q.source.clone(),
            line: q.line,
            text: message.join("\n"),
        }],
    }
}

/// Where a traceback's message starts in its `lines`: after its last frame (and that
/// frame's source and caret lines), 0 when it has none. The message — the exception and
/// the lines it printed — is what a suspect's words are looked for in, not the frames and
/// source lines, whose function names (`eager_connect_single_device`) would match them by
/// accident.
fn message_start(lines: &[&str]) -> usize {
    let last_frame = lines
        .iter()
        .rposition(|l| l.trim_start().starts_with("File \""));
    let from = match last_frame {
        // The frame line, then its source line and any caret line.
        Some(i) => {
            let mut j = i + 1;
            while j < lines.len()
                && (lines[j].starts_with("    ")
                    || lines[j].trim().chars().all(|c| "^~ ".contains(c)))
                && !lines[j].trim().is_empty()
            {
                j += 1;
            }
            j
        }
        None => 0,
    };
    from.min(lines.len())
}
