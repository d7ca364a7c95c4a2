//! Grammar files compiled into knowledge: frames, outcome wordings, and each grammar's
//! events, figures and process rules, checked as they are read.

use super::*;
use crate::grammar::compiled_at_load;

pub(in crate::grammar) fn compile_frames(
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
                fallback: f.fallback,
                sample: f.sample.clone(),
            })
        })
        .collect()
}

pub(in crate::grammar) fn compile_outcomes(
    origin: &str,
    specs: &[OutcomeSpec],
) -> Result<Vec<OutcomeRule>, GrammarError> {
    specs
        .iter()
        .map(|o| {
            let state = OutcomeWord::from_name(&o.state)
                .filter(|s| *s != OutcomeWord::Failed)
                .ok_or_else(|| GrammarError::Knowledge {
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
            let regex = LazyRegex::new(&o.regex, compiled_at_load(origin)).map_err(|e| {
                GrammarError::Knowledge {
                    origin: origin.into(),
                    message: format!("outcome regex: {e}"),
                }
            })?;
            let at = format!("outcome `{}`", o.regex);
            ignored::only_read_captures(
                origin,
                &at,
                regex.capture_names(),
                ignored::OUTCOME_CAPTURES,
            )?;
            Ok(OutcomeRule {
                state,
                literals: o.literals.clone(),
                regex,
            })
        })
        .collect()
}

pub(super) fn err(origin: &str, message: String) -> GrammarError {
    GrammarError::Knowledge {
        origin: origin.into(),
        message,
    }
}

/// Compiles what a grammar file says its events, processes and configuration mean, and
/// checks it: every name is one the code knows, every capture a figure or rank reads is a
/// capture of the event's regex, every figure's unit measures what the figure measures,
/// and events of one kind agree on their phase.
pub(in crate::grammar) fn compile_grammar(
    origin: &str,
    spec: &GrammarSpec,
    captures: &[Vec<&str>],
) -> Result<GrammarKnowledge, GrammarError> {
    let mut out = GrammarKnowledge::default();
    let declared = declared_figures(origin, spec)?;
    for (i, (ev, regex)) in spec.event.iter().zip(captures).enumerate() {
        let at = format!("event {} (`{}`)", i + 1, ev.kind);
        let meaning = out.kinds.entry(ev.kind.clone()).or_default();
        event_phase(origin, &at, ev, meaning)?;
        ignored::failure_edge(origin, &at, ev)?;
        ignored::event_set(origin, &at, ev, regex)?;
        event_figures(origin, &at, ev, regex, &declared, meaning)?;
        event_rank(origin, &at, ev, regex, meaning)?;
    }
    for d in &declared {
        let reported = (out.kinds.values()).any(|m| m.figures.iter().any(|(f, _)| f == d));
        if !reported {
            return Err(err(
                origin,
                format!("figure `{d}` is declared but no event's `figures` reports it"),
            ));
        }
    }
    for (kind, m) in &out.kinds {
        if !m.figures.is_empty() && m.phase.is_none() {
            return Err(err(
                origin,
                format!("events `{kind}` report figures but no phase: give them a `phase`"),
            ));
        }
    }
    out.processes = processes(origin, spec)?;
    (out.suffixes, out.field_suffixes) = suffixes(origin, spec)?;
    out.without_pid_engine = switch(
        origin,
        "without_pid",
        spec.without_pid.as_deref(),
        ("launcher", "engine"),
        "engine or launcher",
    )?;
    out.component = switch(
        origin,
        "describes",
        spec.describes.as_deref(),
        ("server", "component"),
        "server or component",
    )?;
    out.world_spans_replicas = switch(
        origin,
        "world",
        spec.world.as_deref(),
        ("per_replica", "across_replicas"),
        "per_replica or across_replicas",
    )?;
    out.configs = configs(origin, spec)?;
    Ok(out)
}

/// A grammar key with two values, `(off, on)`; absent is off.
fn switch(
    origin: &str,
    key: &str,
    value: Option<&str>,
    (off, on): (&str, &str),
    choices: &str,
) -> Result<bool, GrammarError> {
    match value {
        None => Ok(false),
        Some(v) if v == off => Ok(false),
        Some(v) if v == on => Ok(true),
        Some(other) => Err(err(origin, format!("{key}: `{other}` is not {choices}"))),
    }
}

/// An event's `phase`, `edge` and `then`, checked against what its kind said before.
fn event_phase(
    origin: &str,
    at: &str,
    ev: &EventSpec,
    meaning: &mut KindMeaning,
) -> Result<(), GrammarError> {
    if let Some(p) = &ev.phase {
        let phase = Phase::from_name(p).ok_or_else(|| {
            err(origin, format!("{at}: phase `{p}` is not a phase (launch, dist_init, weight_load, kv_cache, cuda_graph, ready)"))
        })?;
        let edge_name = ev.edge.as_deref().unwrap_or("inside");
        let edge = Edge::from_name(edge_name).ok_or_else(|| {
            err(
                origin,
                format!("{at}: edge `{edge_name}` is not begins, ends or inside"),
            )
        })?;
        match meaning.phase {
            Some(had) if had != (phase, edge) => {
                return Err(err(origin, format!(
                    "{at}: phase {p}/{edge_name}, but an earlier `{}` event of this grammar says {}/{}; events of one kind share their phase",
                    ev.kind, had.0, had.1.name()
                )))
            }
            _ => meaning.phase = Some((phase, edge)),
        }
        if let Some(t) = &ev.then {
            let then = Phase::from_name(t)
                .filter(|&n| edge == Edge::End && n > phase)
                .ok_or_else(|| {
                    err(origin, format!(
                        "{at}: then = `{t}`: `then` names the phase a line begins as it ends its own, so it needs edge = \"ends\" and a later phase than `{p}` (launch, dist_init, weight_load, kv_cache, cuda_graph, ready)"
                    ))
                })?;
            meaning.then = Some(then);
        }
    } else if ev.edge.is_some() || ev.then.is_some() {
        return Err(err(origin, format!("{at}: edge or then without a phase")));
    }
    Ok(())
}

/// The grammar's `[[figure]]` declarations: new names, each with a unit a figure can
/// be counted in and a direction.
fn declared_figures(origin: &str, spec: &GrammarSpec) -> Result<Vec<FigureName>, GrammarError> {
    let mut out: Vec<FigureName> = Vec::new();
    for (i, f) in spec.figure.iter().enumerate() {
        let at = format!("figure {} (`{}`)", i + 1, f.name);
        let word = f.name.starts_with(|c: char| c.is_ascii_lowercase())
            && (f.name.chars()).all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !word {
            return Err(err(
                origin,
                format!("{at}: name: a figure's name is lower case, digits and `_` (`kv_pages`)"),
            ));
        }
        if FigureName::builtin(&f.name).is_some() {
            return Err(err(origin, format!("{at}: `{}` is a built-in figure; map it in `figures` without declaring it, or declare a figure of another name", f.name)));
        }
        if out.iter().any(|d| *d == f.name.as_str()) {
            return Err(err(origin, format!("{at}: declared twice")));
        }
        let unit = FigureUnit::from_name(&f.unit).ok_or_else(|| {
            err(origin, format!(
                "{at}: unit `{}` is not a figure's unit: bytes, seconds, tokens, count, or a lower-case word naming what is counted (`pages`); how a capture is printed (GiB, s, int) goes in the event's `units`",
                f.unit
            ))
        })?;
        let worse = WorseWhen::from_name(&f.worse).ok_or_else(|| {
            err(
                origin,
                format!("{at}: worse `{}` is not more, less or neither", f.worse),
            )
        })?;
        out.push(FigureName::Declared(std::sync::Arc::new(FigureDef {
            name: f.name.clone().into(),
            unit,
            worse,
        })));
    }
    Ok(out)
}

/// An event's `figures`: each a built-in or declared figure whose captures hold its unit.
fn event_figures(
    origin: &str,
    at: &str,
    ev: &EventSpec,
    regex: &[&str],
    declared: &[FigureName],
    meaning: &mut KindMeaning,
) -> Result<(), GrammarError> {
    for (name, source) in &ev.figures.0 {
        let figure = (FigureName::builtin(name))
            .or_else(|| declared.iter().find(|d| *d == name.as_str()).cloned())
            .ok_or_else(|| {
                let builtin = BuiltinFigure::ALL.map(BuiltinFigure::name).join(", ");
                let own: Vec<&str> = declared.iter().map(FigureName::name).collect();
                let own = if own.is_empty() {
                    "none".to_string()
                } else {
                    own.join(", ")
                };
                err(
                    origin,
                    format!("{at}: figures.{name}: not a figure (built-in: {builtin}; declared by this grammar: {own}; a new one needs a `[[figure]]` with its name, unit and worse direction)"),
                )
            })?;
        let mut sums = Vec::new();
        for alt in source.alternatives() {
            let sum: Vec<String> = alt.split('+').map(|c| c.trim().to_string()).collect();
            for c in &sum {
                check_figure_capture(origin, at, name, &figure, c, ev, regex)?;
            }
            if sum.len() > 1 && figure.measure() != Measure::Bytes {
                return Err(err(
                    origin,
                    format!("{at}: figures.{name}: only memory figures can be summed"),
                ));
            }
            sums.push(sum);
        }
        match meaning.figures.iter_mut().find(|(f, _)| *f == figure) {
            Some((_, have)) => {
                for s in sums {
                    if !have.contains(&s) {
                        have.push(s);
                    }
                }
            }
            None => meaning.figures.push((figure, sums)),
        }
    }
    Ok(())
}

/// An event's `rank`: which evidence a number in the message is, and its capture.
fn event_rank(
    origin: &str,
    at: &str,
    ev: &EventSpec,
    regex: &[&str],
    meaning: &mut KindMeaning,
) -> Result<(), GrammarError> {
    if let Some(r) = &ev.rank {
        let evidence = match r.evidence.as_str() {
            "assignment" => RankEvidence::Assignment,
            "global" => RankEvidence::Global,
            "communicator" => RankEvidence::Communicator,
            "line" => RankEvidence::Line,
            other => {
                return Err(err(
                    origin,
                    format!(
                    "{at}: rank.evidence `{other}` is not assignment, global, communicator or line"
                ),
                ))
            }
        };
        match (&r.capture, evidence) {
            (Some(c), RankEvidence::Assignment) => {
                return Err(err(origin, format!("{at}: rank.capture `{c}`: an assignment reads the captures named by tags (dp, pp, tp, …)")))
            }
            (None, RankEvidence::Assignment) => {
                if !ASSIGNMENT_TAGS.iter().any(|(n, _)| has_capture(regex, n)) {
                    return Err(err(origin, format!("{at}: rank: an assignment needs captures named by tags (dp, pp, tp, …)")));
                }
            }
            (Some(c), _) => {
                if !has_capture(regex, c) {
                    return Err(err(origin, format!("{at}: rank.capture `{c}` {}", not_a_capture(regex))));
                }
            }
            (None, _) => return Err(err(origin, format!("{at}: rank: give the capture that holds the number"))),
        }
        let rule = RankRule {
            evidence,
            capture: r.capture.clone(),
        };
        if !meaning.rank.contains(&rule) {
            meaning.rank.push(rule);
        }
    }
    Ok(())
}

fn processes(origin: &str, spec: &GrammarSpec) -> Result<Vec<ProcessRule>, GrammarError> {
    let mut out = Vec::new();
    for (i, p) in spec.process.iter().enumerate() {
        let at = format!("process {}", i + 1);
        let role = match p.role.as_str() {
            "worker" => ProcessRole::Worker,
            "engine" => ProcessRole::Engine,
            "launcher" => ProcessRole::Launcher,
            other => {
                return Err(err(
                    origin,
                    format!("{at}: role `{other}` is not worker, engine or launcher"),
                ))
            }
        };
        let name = LazyRegex::new(&p.name, compiled_at_load(origin))
            .map_err(|e| err(origin, format!("{at}: name: bad regex: {e}")))?;
        ignored::only_read_captures(origin, &at, name.capture_names(), ignored::PROCESS_CAPTURES)?;
        out.push(ProcessRule { name, role });
    }
    Ok(out)
}

/// The `[[suffix]]` regexes: those that name a rank (by `tags`, `tp`, `gpu` or `grank`),
/// which place a record whose prefix names none, and the others, which only keep the
/// fields a record prints after its message out of the quoted message
/// (`GrammarKnowledge::field_suffixes`, applied as the grammar's events are matched).
type Suffixes = (Vec<LazyRegex>, Vec<LazyRegex>);

fn suffixes(origin: &str, spec: &GrammarSpec) -> Result<Suffixes, GrammarError> {
    let (mut ranks, mut fields) = (Vec::new(), Vec::new());
    for s in &spec.suffix {
        let r = LazyRegex::new(&s.regex, compiled_at_load(origin))
            .map_err(|e| err(origin, format!("suffix `{}`: bad regex: {e}", s.id)))?;
        let names: Vec<&str> = r.capture_names().collect();
        let at = format!("suffix `{}`", s.id);
        ignored::only_read_captures(origin, &at, r.capture_names(), ignored::SUFFIX_CAPTURES)?;
        let names_rank = ["tags", "tp", "gpu", "grank"]
            .iter()
            .any(|c| has_capture(&names, c));
        if names_rank {
            ranks.push(r);
        } else {
            fields.push(r);
        }
    }
    Ok((ranks, fields))
}

fn configs(origin: &str, spec: &GrammarSpec) -> Result<Vec<ConfigRule>, GrammarError> {
    let mut out = Vec::new();
    for (i, c) in spec.config.iter().enumerate() {
        let syntax = ConfigSyntax::from_name(&c.syntax).ok_or_else(|| {
            err(origin, format!("config {}: syntax `{}` is not python_call, python_kwargs, python_dict, rust_debug or json", i + 1, c.syntax))
        })?;
        if c.marker.is_empty() {
            return Err(err(origin, format!("config {}: marker is empty", i + 1)));
        }
        let escaped = match c.escaped.as_deref() {
            None => None,
            Some(name) => Some(ConfigEscape::from_name(name).ok_or_else(|| {
                err(
                    origin,
                    format!(
                        "config {}: escaped `{name}` is not `json` (the one escaping read: a configuration inside a JSON string)",
                        i + 1
                    ),
                )
            })?),
        };
        out.push(ConfigRule {
            grammar: spec.id.clone(),
            marker: c.marker.clone(),
            syntax,
            escaped,
        });
    }
    Ok(out)
}

/// The rest of the error for a name that is none of the regex's captures: the names it
/// has, to pick from.
fn not_a_capture(names: &[&str]) -> String {
    if names.is_empty() {
        return "is not a capture of the regex: it has no named capture (write `(?P<name>…)` \
                around the text)"
            .to_string();
    }
    let listed: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    format!(
        "is not a capture of the regex: its captures are {}",
        listed.join(", ")
    )
}

/// Whether `name` is among a regex's capture names.
pub(super) fn has_capture(names: &[&str], name: &str) -> bool {
    names.contains(&name)
}

pub(super) fn check_figure_capture(
    origin: &str,
    at: &str,
    name: &str,
    figure: &FigureName,
    capture: &str,
    ev: &EventSpec,
    regex: &[&str],
) -> Result<(), GrammarError> {
    if !has_capture(regex, capture) {
        return Err(err(
            origin,
            format!("{at}: figures.{name}: `{capture}` {}", not_a_capture(regex)),
        ));
    }
    let unit = ev.units.get(capture).copied().unwrap_or(Unit::Text);
    let fits = match figure.measure() {
        Measure::Bytes => unit.is_memory(),
        Measure::Count => matches!(unit, Unit::Int),
        Measure::Seconds => matches!(unit, Unit::Seconds | Unit::Milliseconds),
    };
    if !fits {
        let want = match figure.measure() {
            Measure::Bytes => "a memory unit as printed (GiB, MiB, GB, MB, decimal GB, decimal MB, KiB, bytes, size)",
            Measure::Count => "`int`",
            Measure::Seconds => "`s` or `ms`",
        };
        return Err(err(origin, format!(
            "{at}: figures.{name}: capture `{capture}` has unit `{}`{}; the figure needs {want} in `units`",
            unit.name(),
            if ev.units.contains_key(capture) { "" } else { " (none given in `units`)" }
        )));
    }
    Ok(())
}
