//! `grammars check`: every event's samples run through the grammar they belong to, and
//! a miss explained by the point where its pattern stops matching.

use super::*;

use chrono::Datelike;

/// What reading a `server_args` sample's configuration gave, for `grammars check`. The
/// configuration is read by `model::config`, a layer above this one, so the check is
/// handed that reader ([`ConfigReader`]) rather than importing it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigReading {
    /// Read, as a run would read it.
    Read {
        /// How many settings it gave.
        settings: usize,
        /// The line ended inside the configuration and its event takes the lines after
        /// it (`traceback = true`), where the rest is printed.
        continued: bool,
    },
    /// No `[[config]]` marker of any loaded grammar is in the message.
    NoMarker,
    /// The rule whose marker the message holds did not read what follows it.
    Unreadable {
        /// The grammar that declared the rule (another grammar's rules are tried after
        /// the line's own).
        grammar: String,
        /// The rule's `marker`.
        marker: String,
        /// The rule's `syntax`, as written.
        syntax: &'static str,
        /// The rule has `escaped = "json"`.
        escaped: bool,
        /// The reader's error; its byte offsets are the sample line's.
        error: String,
        /// The line holds an escaped quote (`\"`) where the error stands.
        at_escaped_quote: bool,
        /// The line ended before the configuration did (and no lines follow it).
        cut: bool,
    },
}

/// Reads the configuration of a matched `server_args` sample (its match, its line).
pub type ConfigReader<'a> = &'a dyn Fn(&GrammarSet, &LineMatch, &str) -> ConfigReading;

/// `grammars check` of one grammar.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SampleCheck {
    /// One message per failing sample.
    pub failures: Vec<String>,
    /// Each `server_args` sample whose configuration read.
    pub configs: Vec<ConfigSample>,
}

/// A `server_args` sample whose configuration read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConfigSample {
    /// The sample's number in its grammar, from 1.
    pub sample: usize,
    /// How many settings its line gave.
    pub settings: usize,
    /// Its line ends inside the configuration, which goes on in the lines after it.
    pub continued: bool,
}

/// Checks every sample of a grammar: the line must give the stated kind and fields, and a
/// `server_args` sample's configuration must read (with `read_config`).
pub fn check_samples(set: &GrammarSet, grammar: usize, read_config: ConfigReader) -> SampleCheck {
    let mut out = SampleCheck::default();
    let Some(g) = set.grammars.get(grammar) else {
        return out;
    };
    for (i, sample) in g.spec.sample.iter().enumerate() {
        let mut problems = check_sample(set, g, i, sample);
        if problems.is_empty() {
            match check_sample_config(set, g, i, sample, read_config) {
                Ok(Some((settings, continued))) => out.configs.push(ConfigSample {
                    sample: i + 1,
                    settings,
                    continued,
                }),
                Ok(None) => {}
                Err(e) => problems.push(e),
            }
        }
        if !problems.is_empty() {
            out.failures.push(problems.join("\n"));
        }
    }
    out.failures
        .extend(super::settings_check::unprinted_settings(set, g));
    out.failures.extend(
        g.spec
            .frame_phase
            .iter()
            .enumerate()
            .filter_map(|(i, f)| check_frame_sample(set, g, i, f)),
    );
    out
}

/// A `server_args` sample (one that passed) must carry a configuration that reads: the
/// number of settings and whether it continues on the lines after, `None` for another
/// kind, or what is wrong and how to fix it.
fn check_sample_config(
    set: &GrammarSet,
    g: &Grammar,
    i: usize,
    sample: &SampleSpec,
    read_config: ConfigReader,
) -> Result<Option<(usize, bool)>, String> {
    if sample.kind.as_deref() != Some(crate::base::event::kind::SERVER_ARGS) {
        return Ok(None);
    }
    let Some(m) = set.match_text(&sample.line) else {
        return Ok(None);
    };
    let label = format!(
        "{} sample {} ({:?})",
        g.origin,
        i + 1,
        crate::base::text::truncate(&sample.line, 61)
    );
    match read_config(set, &m, &sample.line) {
        ConfigReading::Read {
            settings,
            continued,
        } => Ok(Some((settings, continued))),
        ConfigReading::NoMarker => {
            let markers: Vec<String> = (g.know.configs.iter())
                .map(|c| format!("`{}` ({})", c.marker, c.syntax.name()))
                .collect();
            Err(if markers.is_empty() {
                format!(
                    "{label}: a `server_args` line, but this grammar has no `[[config]]`: add one \
                     whose `marker` is the text printed just before the configuration, with its `syntax`"
                )
            } else {
                format!(
                    "{label}: no `[[config]]` marker is in the message (this grammar's: {}): \
                     a marker is the text printed just before the configuration, as printed",
                    markers.join(", ")
                )
            })
        }
        ConfigReading::Unreadable {
            grammar,
            marker,
            syntax,
            escaped,
            error,
            at_escaped_quote,
            cut,
        } => {
            let whose = if grammar == g.spec.id {
                String::new()
            } else {
                format!(
                    " of grammar `{grammar}` (no marker of this grammar is in the message; \
                     every grammar's rules are tried after the line's own)"
                )
            };
            Err(format!(
                "{label}: configuration not read by the `[[config]]`{whose} with marker \
                 `{marker}`, syntax `{syntax}`{}: {error}; {}",
                if escaped { ", escaped `json`" } else { "" },
                config_fix(syntax, escaped, at_escaped_quote, cut)
            ))
        }
    }
}

/// How to make an unreadable configuration read.
fn config_fix(syntax: &str, escaped: bool, at_escaped_quote: bool, cut: bool) -> String {
    if at_escaped_quote && !escaped {
        return "the configuration is inside a JSON string (its quotes print as `\\\"`): add \
                `escaped = \"json\"` to this `[[config]]`"
            .to_string();
    }
    if cut {
        return "the line ends before the configuration does: give the whole line as the \
                sample (a configuration printed over several lines needs `traceback = true` \
                on its event)"
            .to_string();
    }
    let shape = match syntax {
        "python_call" => "`Name(k=v, …)`",
        "python_kwargs" => "`k=v, …` to the end of the line",
        "python_dict" => "`{'k': v, …}`",
        "json" => "`{\"k\": v, …}`",
        _ => "`Args { k: v, … }`",
    };
    format!(
        "syntax `{syntax}` expects {shape} right after the marker: is that what the server \
         prints there (else python_call `Name(k=v, …)`, python_kwargs `k=v, …`, python_dict \
         `{{'k': v, …}}`, rust_debug `Args {{ k: v, … }}`, json `{{\"k\": v, …}}`), and does \
         the marker end just before it?"
    )
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
pub(super) fn check_frame_sample(
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
            "{label}: no frame → phase entry names this frame (expected `{}`; frames are read \
             from Python's traceback lines alone, `  File \"…/file.py\", line N, in function`: \
             another language's stack, C++'s `#3 0x… in f() at f.cc:12`, is kept with its \
             failure but never read — place such a failure with `set = {{ phase = … }}` on its \
             event instead)",
            f.phase
        )),
    }
}

/// What is wrong with one sample (nothing when it passes).
pub(super) fn check_sample(
    set: &GrammarSet,
    g: &Grammar,
    i: usize,
    sample: &SampleSpec,
) -> Vec<String> {
    let mut failures = Vec::new();
    // Read as the scan reads a line: control sequences removed, trailing white space
    // trimmed.
    let line = crate::base::text::clean_line(sample.line.as_bytes());
    {
        let got = set.match_text(&line);
        let label = format!(
            "{} sample {} ({:?})",
            g.origin,
            i + 1,
            crate::base::text::truncate(&line, 61)
        );
        // The stamp must read with the declared formats, whether or not an event matched:
        // a format that silently gives no time would leave every line of the file untimed.
        let prefix = got
            .as_ref()
            .and_then(|m| m.prefix.clone())
            .or_else(|| set.find_prefix(&line, line.len()));
        if let Some(e) = prefix.as_ref().and_then(|p| p.stamp_error.as_ref()) {
            failures.push(format!("{label}: {e}"));
        }
        if let Some(t) = prefix.as_ref().and_then(|p| p.tags_unread.as_ref()) {
            failures.push(format!(
                "{label}: the prefix's `tags` capture matched `{t}` but reads no rank: tags are \
                 names of DP, PP, ATTN_CP, MOE_DP, TP, EP (any case, any order) each followed \
                 by its number, as `DP1 PP0 TP3`, `dp1_tp3`, `dp1,tp3`, `dp1|tp3`, `dp1/tp3`, \
                 `dp=1 tp=3`, `dp:1;tp:3` or JSON's `\"dp\":1,\"tp\":3`, in one span; \
                 capture only that span as `tags`, a bare TP number as `tp`, a global rank as \
                 `grank`; a rank written any other way (another tag name, text between the \
                 tags) cannot be read"
            ));
        }
        failures.extend(
            super::prefix_check::starts_with_problem(g, &line).map(|p| format!("{label}: {p}")),
        );
        failures
            .extend(super::prefix_check::pid_problem(g, &line).map(|p| format!("{label}: {p}")));
        if let Some(want) = &sample.time {
            failures
                .extend(time_problem(set, prefix.as_ref(), want).map(|p| format!("{label}: {p}")));
        }
        match (&sample.kind, got) {
            (None, None) => {
                failures.extend(kindless_problems(set, prefix.as_ref(), sample, &label));
            }
            (None, Some(m)) => failures.push(format!(
                "{label}: expected no event, got `{}`{}",
                m.kind,
                unexpected_event(set, g, &m)
            )),
            (Some(k), None) => failures.push(format!(
                "{label}: expected `{k}`, nothing matched\n{}",
                super::miss::explain_miss(set, &line)
            )),
            (Some(k), Some(m)) => {
                if &m.kind != k {
                    failures.push(format!(
                        "{label}: expected `{k}`, got `{}`{}",
                        m.kind,
                        preempted(set, k, &m, &line)
                    ));
                    return failures;
                }
                if let Some(r) = &sample.rank {
                    failures.extend(rank_problem(set, g, &m, r, &label));
                }
                // A `failure` the line captures is read as a set one is: a word that names
                // no kind would make the failure a bare `exception`.
                if let Some(v) = m.fields.get("failure").and_then(FieldValue::as_text) {
                    if super::knowledge::captured_failure(v).is_none() {
                        failures.push(format!(
                            "{label}: the `failure` capture reads `{}`, which is no failure \
                             kind ({}, or a signal's name such as `SIGKILL`, read as \
                             `signal`): the failure would read as `exception`; capture the \
                             words under another name and give `set = {{ failure = \"signal\" }}` \
                             (or the kind the line means)",
                            crate::base::text::sanitize(v),
                            super::knowledge::SET_FAILURES.join(", ")
                        ));
                    }
                }
                for (name, want) in &sample.fields {
                    if let Some(why) = field_mismatch(name, want, m.fields.get(name)) {
                        failures.push(format!("{label}: {why}"));
                    }
                }
            }
        }
    }
    failures
}

/// What a sample that gives no event can state: its line's rank, which the prefix (or a
/// `[[process]]` rule on its process name) reads, since such a line still names its rank
/// to the run (a rank whose lines give no event exists). Its `fields` would be read from
/// no event: refused, as every key that would take no effect is.
fn kindless_problems(
    set: &GrammarSet,
    prefix: Option<&crate::grammar::PrefixInfo>,
    sample: &SampleSpec,
    label: &str,
) -> Vec<String> {
    let mut out = Vec::new();
    if !sample.fields.is_empty() {
        out.push(format!(
            "{label}: `fields` on a sample without `kind`: the line gives no event, so it has \
             no fields to check; state the event's `kind` if the line should give one, else \
             remove `fields`"
        ));
    }
    if let Some(r) = &sample.rank {
        let got =
            (prefix.and_then(|p| p.rank.clone())).or_else(|| worker_rank_by_process(set, prefix?));
        let want = Some(r.as_str()).filter(|r| !r.is_empty() && *r != "-");
        if !same_rank(got.as_ref(), want) {
            out.push(rank_mismatch(
                label,
                got.map(|r| r.to_string()).as_deref(),
                " (a line without an event is named by its prefix alone)",
                want,
            ));
        }
    }
    out
}

/// A worker's name a `[[process]]` rule reads (`Worker_TP3`, `VllmWorker rank=3`) names
/// every line of the process, this one included, as the summary names it. (An engine's
/// lines are the engine's or no rank's by what they report: the sample says.)
fn worker_rank_by_process(set: &GrammarSet, prefix: &crate::grammar::PrefixInfo) -> Option<Rank> {
    let info = set.knowledge().process(prefix.process.as_deref()?)?;
    (info.role == ProcessRole::Worker)
        .then(|| info.tags.or_else(|| info.global_rank.map(Rank::global)))
        .flatten()
}

/// What is wrong with a sample's stated rank `r`, as the summary would name the line's.
fn rank_problem(
    set: &GrammarSet,
    g: &Grammar,
    m: &LineMatch,
    r: &str,
    label: &str,
) -> Option<String> {
    let know = set.knowledge();
    let named = (m.prefix.as_ref())
        .and_then(|p| p.rank.clone())
        .or_else(|| know.line_rank(g.id(), &m.kind, &m.fields, &m.message))
        .or_else(|| worker_rank_by_process(set, m.prefix.as_ref()?));
    // An `assignment` line names its process's rank: the rank the run gives every line
    // of that pid, which the sample states — also over a global number in the prefix,
    // which is weaker evidence (docs/grammars.md, "Global ranks").
    let assigned = named
        .as_ref()
        .is_none_or(|n| n.as_global().is_some())
        .then(|| know.assigned_rank(g.id(), &m.kind, &m.fields))
        .flatten();
    // A line that names no rank is shown as `-` by summary and events, so a sample may
    // write it that way as well as `""`.
    let want_rank = Some(r).filter(|r| !r.is_empty() && *r != "-");
    if let (None, Some(n)) = (&assigned, named.as_ref().and_then(Rank::as_global)) {
        let source = if m.prefix.as_ref().and_then(|p| p.rank.as_ref()).is_some() {
            "the prefix's `grank`"
        } else {
            "a `[[process]]` rule's `global_rank`"
        };
        return global_rank_problem(set, g, n, want_rank, label, source).map(|mut out| {
            out.push_str(&other_prefix(set, g, m));
            out
        });
    }
    let got_rank = assigned.clone().or(named);
    if same_rank(got_rank.as_ref(), want_rank) {
        return None;
    }
    let why = if assigned.is_some() {
        " (assigned to the line's process by its `assignment` rule)"
    } else {
        ""
    };
    let mut out = rank_mismatch(
        label,
        got_rank.map(|r| r.to_string()).as_deref(),
        why,
        want_rank,
    );
    out.push_str(&other_prefix(set, g, m));
    Some(out)
}

/// When another grammar's `[[prefix]]` read the sample's line (the one ending nearest the
/// event governs; of two reading the same span, a user's beats a built-in one's), which
/// one: its rank is the one the line reads as, whatever the sample's own grammar captures.
fn other_prefix(set: &GrammarSet, g: &Grammar, m: &LineMatch) -> String {
    let Some((gi, pi)) = m.prefix.as_ref().and_then(|p| p.read_by) else {
        return String::new();
    };
    let Some(other) = set.grammars.get(gi).filter(|o| o.id() != g.id()) else {
        return String::new();
    };
    let prefix = other.prefixes.get(pi).map_or("", |p| p.id.as_str());
    format!(
        "; the line's prefix was read by grammar `{}`'s `[[prefix]]` `{prefix}`, not by one of \
         `{}` (the prefix ending nearest the event governs; `rankscope grammars show {}` \
         prints it): make one of yours read that span, or replace that grammar (`id = \"{}\"`)",
        other.id(),
        g.id(),
        other.id(),
        other.id()
    )
}

/// A sample whose stated rank is not the one the line reads as: both, why the line reads
/// so, and the fix — the sample's `rank` when the line is right, else the capture.
fn rank_mismatch(label: &str, got: Option<&str>, why: &str, want: Option<&str>) -> String {
    let fix = match got {
        Some(g) => format!(
            "write `rank = \"{g}\"` if that is the line's rank (the sample states the rank as \
             the summary names it), else fix what names it"
        ),
        None => "write `rank = \"-\"` if the line names no rank on its own (a worker whose \
                 rank the run learns from another of its lines, by pid, included), else give \
                 it one (a prefix's `tp`, `tags` or `grank` capture, a `rank` rule, a \
                 `[[suffix]]`, a `proc` capture that a `[[process]]` rule names)"
            .to_string(),
    };
    format!(
        "{label}: the line's rank reads as {}{why}, the sample says {}: {fix}",
        rank_words(got),
        rank_words(want)
    )
}

/// A line named by a global number alone (a `grank` capture) is named as the summary
/// names it: through the layout the sizes of the grammar's own `server_args` sample give
/// (`PP1 TP2` for 6 with `tp_size=4, pp_size=2`); with no such sample, as a run of global
/// numbers with no sizes names it (`TP6`), or as the number itself (`rank6`, what a run
/// whose layout cannot place it shows).
fn global_rank_problem(
    set: &GrammarSet,
    g: &Grammar,
    n: u32,
    want: Option<&str>,
    label: &str,
    source: &str,
) -> Option<String> {
    let sizes = sample_sizes(set, g);
    // A number past the first replica's world (vLLM's `across_replicas`) names its
    // replica too, as the run names it (`DP1 TP1` for 3 with tp_size=2); within the first,
    // the zero DP tag is optional (`same_rank`).
    let placed = sizes.and_then(|s| {
        let past_first = crate::model::layout::place_global(n, s).is_some_and(|(dp, _, _)| dp > 0);
        crate::model::layout::global_name(n, s, past_first)
    });
    if let Some(name) = placed {
        if same_rank(Some(&name), want) {
            return None;
        }
        let (tp, pp) = sizes.map_or((0, 1), |s| (s.tp.unwrap_or(0), s.pp.unwrap_or(1)));
        let why = format!(
            " (global rank {n}, {source}, placed by tp_size={tp}, pp_size={pp} of this \
             grammar's `server_args` sample)"
        );
        return Some(rank_mismatch(label, Some(&name.to_string()), &why, want));
    }
    let tp = Rank::tp(n);
    if same_rank(Some(&tp), want) || want == Some(Rank::global(n).to_string().as_str()) {
        return None;
    }
    Some(format!(
        "{label}: the line's rank reads as `{tp}` (global rank {n}, {source}: no \
         sizes known in a one-line sample, so it is named as a run with no tp_size/pp_size \
         names it), the sample says {}: write `rank = \"{tp}\"` or `rank = \"rank{n}\"`, or \
         give a `server_args` sample that prints tp_size/pp_size to check the layout's name",
        rank_words(want)
    ))
}

/// The layout sizes the grammar's own `server_args` samples print, when one does.
fn sample_sizes(set: &GrammarSet, g: &Grammar) -> Option<crate::model::layout::LayoutSizes> {
    let know = set.knowledge();
    g.spec
        .sample
        .iter()
        .filter(|s| s.kind.as_deref() == Some(crate::base::event::kind::SERVER_ARGS))
        .filter_map(|s| set.match_text(&s.line))
        .filter(|m| m.kind == crate::base::event::kind::SERVER_ARGS)
        .find_map(|m| {
            let c = crate::model::config::Config::from_message(&m.message, g.id(), know).ok()?;
            let mut sizes = crate::model::layout::LayoutSizes::from_config(Some(&c));
            sizes.across_replicas = know.world_spans_replicas(g.id());
            sizes.tp.is_some().then_some(sizes)
        })
}

/// How a captured field differs from the value a sample states, if it does.
fn field_mismatch(name: &str, want: &toml::Value, have: Option<&FieldValue>) -> Option<String> {
    // Numbers compare by value: `20` and `20.0` are the same seconds.
    let ok = match (want, have) {
        (toml::Value::Integer(w), Some(FieldValue::Float(h))) => close(*h, *w as f64),
        (toml::Value::Integer(w), Some(v)) => v.as_i64() == Some(*w),
        (toml::Value::Float(w), Some(v)) => v.as_f64().is_some_and(|h| close(h, *w)),
        (toml::Value::String(w), Some(FieldValue::Text(h))) => **w == **h,
        _ => false,
    };
    if ok {
        return None;
    }
    // A number read as text: the capture has no unit. Otherwise the value read, as the
    // sample would write it (a hand-computed byte count is easy to get wrong).
    let fix = match (want, have) {
        (toml::Value::Integer(_), Some(FieldValue::Text(_))) => {
            format!(" (add `units = {{ {name} = \"int\" }}` to the event)")
        }
        (_, Some(v)) => format!(
            ": write `fields = {{ {name} = {} }}` if that is the line's value",
            toml_value(v)
        ),
        (_, None) => String::new(),
    };
    Some(format!(
        "field `{name}` {}, expected {}{fix}",
        field_words(have),
        toml_words(want)
    ))
}

/// Which grammar read a line its sample says gives no event, and the fix: state the
/// event, or — for another grammar's — give the line an event of the sample's own
/// grammar, which is tried first (a `[[noise]]` literal does not stop another grammar's
/// event).
fn unexpected_event(set: &GrammarSet, own: &Grammar, got: &LineMatch) -> String {
    let Some(reader) = set.grammars.get(got.grammar) else {
        return String::new();
    };
    let fix = if reader.spec.id == own.spec.id {
        "or narrow that event's `literals` or `regex` so that it does not read the line"
    } else {
        "or give the line an event of your own grammar, which is tried first (a `[[noise]]` \
         literal does not stop another grammar's event)"
    };
    format!(
        " (read by grammar `{}`, {}): write `kind = \"{}\"` if the line is that event, {fix}",
        reader.spec.id, reader.origin, got.kind
    )
}

/// Why a sample gave another event than the one it states: the grammar that read it,
/// and, when the stated event matches the line too, how to make it the one tried first.
fn preempted(set: &GrammarSet, want: &str, got: &LineMatch, line: &str) -> String {
    let Some(other) = set.grammars.get(got.grammar) else {
        return String::new();
    };
    let mut out = format!(" (read by grammar `{}`, {})", other.spec.id, other.origin);
    // The first event of the stated kind, in any loaded grammar, that matches the line.
    let at = |ev: &spec::EventSpec| {
        (ev.literals.iter())
            .filter_map(|l| line.find(l.as_str()))
            .min()
    };
    let intended = (set.grammars.iter().enumerate()).find_map(|(gi, g)| {
        (g.spec.event.iter().enumerate())
            .filter(|(_, ev)| ev.kind == want)
            .find(|(ei, ev)| {
                at(ev).is_some_and(|a| set.try_event(line, gi, *ei, a, false).is_some())
            })
            .map(|_| gi)
    });
    let Some(gi) = intended else {
        out.push_str(&format!(
            "; no event `{want}` matches the line by itself (is one of its literals in the line? does its regex match the text after the prefix?)"
        ));
        return out;
    };
    let how = if got.grammar == gi {
        format!(
            "events of a grammar are tried in file order: put `{want}` before `{}`",
            got.kind
        )
    } else if got.kind == crate::base::event::kind::OOM {
        "an `oom` match beats an `error` match on the same line".to_string()
    } else if !set.is_builtin(got.grammar) && set.is_builtin(gi) {
        "a user's grammar is tried before the built-in ones".to_string()
    } else if set.is_builtin(gi) {
        "built-in grammars are tried by `priority` (lower first)".to_string()
    } else {
        "user grammars are tried in load order (the user directory by file name, then each `--grammar` in order): load yours first".to_string()
    };
    out.push_str(&format!(
        "; `{want}` of grammar `{}` matches the line too, but is tried later: {how}",
        set.grammars.get(gi).map_or("", |g| g.spec.id.as_str())
    ));
    out
}

/// The sample's rank is the one the line gives. A first pipeline stage read from one
/// line (`TP2`: a line cannot know the run has other stages) may be written as the run
/// names it once other stages are seen (`PP0 TP2`).
fn same_rank(got: Option<&Rank>, want: Option<&str>) -> bool {
    match (got, want) {
        (None, None) => true,
        (Some(g), Some(w)) => {
            g.to_string() == w || Rank::parse_tags(w).is_some_and(|w| same_but_zero_tags(g, &w))
        }
        _ => false,
    }
}

/// `want` is `got` with zero stage, replica, PCP or EP tags added (`DP0 TP2` for `TP2`):
/// a line that spells its rank out by itself drops them, and the run adds them back once
/// another rank names a stage or replica above zero (docs/grammars.md, "Ranks"), so a
/// sample may state the rank either way.
fn same_but_zero_tags(got: &Rank, want: &Rank) -> bool {
    let added = |t: &str| {
        matches!(t, "DP" | "PP" | "PCP" | "EP") && got.get(t).is_none() && want.get(t) == Some(0)
    };
    want.tag_names().any(added)
        && want.tag_names().filter(|t| !added(t)).eq(got.tag_names())
        && got.tag_names().all(|t| got.get(t) == want.get(t))
}

fn close(have: f64, want: f64) -> bool {
    (have - want).abs() <= 1e-9 * want.abs().max(1.0)
}

/// A rank as a grammar author writes it in a sample.
fn rank_words(rank: Option<&str>) -> String {
    match rank {
        Some(r) => format!("`{r}`"),
        None => "none (`-`: the line names no rank)".to_string(),
    }
}

/// What a capture read, in the words of a sample's `fields` (no Rust debug).
fn field_words(have: Option<&FieldValue>) -> String {
    match have {
        None => "was not captured".to_string(),
        Some(FieldValue::Bytes { bytes, .. }) => format!("read {bytes} (bytes)"),
        Some(FieldValue::Int(i)) => format!("read {i} (a whole number)"),
        Some(FieldValue::Float(f)) => format!("read {f} (a number)"),
        Some(FieldValue::Text(t)) => format!("read the text {t:?}"),
    }
}

/// A value read, as a `[[sample]]`'s `fields` writes it.
fn toml_value(v: &FieldValue) -> String {
    match v {
        FieldValue::Bytes { bytes, .. } => bytes.to_string(),
        FieldValue::Int(i) => i.to_string(),
        FieldValue::Float(f) => toml::Value::Float(*f).to_string(),
        FieldValue::Text(t) => toml::Value::String(t.to_string()).to_string(),
    }
}

fn toml_words(want: &toml::Value) -> String {
    match want {
        toml::Value::String(s) => format!("the text {s:?}"),
        toml::Value::Integer(_) | toml::Value::Float(_) => want.to_string(),
        other => format!("{other} (write a number or a string)"),
    }
}

/// What is wrong with a sample's `time` (nothing when it is the stamp read). A stamp that
/// prints no date is compared by its time of day only (`HH:MM:SS[.fff]`, or a whole date
/// whose date is ignored), one that prints no year by month, day and time: a sample
/// reads one line, and the date such a stamp gets comes from the file it is in.
fn time_problem(set: &GrammarSet, prefix: Option<&PrefixInfo>, want: &str) -> Option<String> {
    let full = |s: &str| NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f").ok();
    let Some(p) = prefix else {
        return Some(format!(
            "no time read (no prefix matched the line), expected `{want}`"
        ));
    };
    let Some(have) = p.ts else {
        let which = (p.read_by)
            .and_then(|(gi, pi)| {
                let g = set.grammars.get(gi)?;
                Some(format!(
                    "grammar `{}`'s `[[prefix]]` `{}`",
                    g.id(),
                    g.prefixes.get(pi)?.id
                ))
            })
            .unwrap_or_else(|| "the prefix".into());
        return Some(format!(
            "no time read: the line's prefix was read by {which}, which captured no `date`, \
             `time`, `md` or `stamp` here, expected `{want}` (the prefix ending nearest the \
             event's literal governs, or the one the literal begins in: give that prefix the \
             stamp's capture, or make the literal one the stamped prefix governs)"
        ));
    };
    let shown = |with: &str| stamp_shown(have, p.ts_step_ms, with);
    if p.time_only {
        let want_t = (NaiveTime::parse_from_str(want, "%H:%M:%S%.f").ok())
            .or_else(|| full(want).map(|t| t.time()));
        return (want_t != Some(have.time())).then(|| {
            let read = shown("");
            format!(
                "time `{read}`, expected `{want}` (the stamp prints no date: only its time of \
                 day is compared, written `HH:MM:SS[.fff]`; a date written with it is \
                 ignored){}",
                write_time(&read)
            )
        });
    }
    if p.date_inferred {
        // The year a one-line reading gives is a stand-in: month, day and time are compared.
        let same = |w: NaiveDateTime| w.with_year(have.year()) == Some(have);
        let want_t = full(want).or_else(|| full(&format!("2000-{want}")));
        return (!want_t.is_some_and(same)).then(|| {
            let read = shown("%m-%d ");
            format!(
                "time `{read}`, expected `{want}` (the stamp prints no year: its month, day and \
                 time are compared, written `MM-DD HH:MM:SS[.fff]`; a year written with them is \
                 ignored){}",
                write_time(&read)
            )
        });
    }
    (full(want) != Some(have)).then(|| {
        let read = shown("%Y-%m-%d ");
        format!("time `{read}`, expected `{want}`{}", write_time(&read))
    })
}

/// The fix a time mismatch names: the time as read, every fraction digit the stamp prints
/// included (`.123456` for a microsecond stamp: they are all compared).
fn write_time(read: &str) -> String {
    format!(": write time = \"{read}\" if that is the line's time (the fraction to every digit the stamp prints)")
}

/// A read stamp at its format's resolution, as the summary shows one: a millisecond
/// stamp reading `.000` keeps its `.000`, a whole-second stamp has no fraction. `date` is
/// the strftime of its date part (empty for a stamp that prints none).
fn stamp_shown(t: NaiveDateTime, step_ms: u32, date: &str) -> String {
    if step_ms < 1000 && chrono::Timelike::nanosecond(&t).is_multiple_of(1_000_000) {
        t.format(&format!("{date}%H:%M:%S%.3f")).to_string()
    } else {
        t.format(&format!("{date}%H:%M:%S%.f")).to_string()
    }
}
