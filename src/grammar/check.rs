//! `grammars check`: every event's samples run through the grammar they belong to, and
//! a miss explained by the point where its pattern stops matching.

use super::*;

/// Checks every sample of a grammar: the line must give the stated kind and fields.
/// Returns one message per failing sample.
pub fn check_samples(set: &GrammarSet, grammar: usize) -> Vec<String> {
    let Some(g) = set.grammars.get(grammar) else {
        return Vec::new();
    };
    let mut failures: Vec<String> = g
        .spec
        .sample
        .iter()
        .enumerate()
        .map(|(i, sample)| check_sample(set, g, i, sample))
        .filter(|problems| !problems.is_empty())
        .map(|problems| problems.join("\n"))
        .collect();
    failures.extend(
        g.spec
            .frame_phase
            .iter()
            .enumerate()
            .filter_map(|(i, f)| check_frame_sample(set, g, i, f)),
    );
    failures
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
            "{label}: no frame → phase entry names this frame (expected `{}`; a frame line is `  File \"…/file.py\", line N, in function`)",
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
    {
        let got = set.match_text(&sample.line);
        let label = format!(
            "{} sample {} ({:?})",
            g.origin,
            i + 1,
            crate::base::text::truncate(&sample.line, 61)
        );
        // The stamp must read with the declared formats, whether or not an event matched:
        // a format that silently gives no time would leave every line of the file untimed.
        let prefix = got
            .as_ref()
            .and_then(|m| m.prefix.clone())
            .or_else(|| set.find_prefix(&sample.line, sample.line.len()));
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
        if let Some(want) = &sample.time {
            let have = prefix
                .as_ref()
                .and_then(|p| Some(stamp_shown(p.ts?, p.ts_step_ms)))
                .unwrap_or_default();
            let want_t = NaiveDateTime::parse_from_str(want, "%Y-%m-%d %H:%M:%S%.f").ok();
            let have_t = prefix.as_ref().and_then(|p| p.ts);
            if want_t.is_none() || want_t != have_t {
                failures.push(format!("{label}: time `{have}`, expected `{want}`"));
            }
        }
        match (&sample.kind, got) {
            (None, None) => {}
            (None, Some(m)) => {
                failures.push(format!("{label}: expected no event, got `{}`", m.kind))
            }
            (Some(k), None) => failures.push(format!(
                "{label}: expected `{k}`, nothing matched\n{}",
                explain_miss(set, &sample.line)
            )),
            (Some(k), Some(m)) => {
                if &m.kind != k {
                    failures.push(format!(
                        "{label}: expected `{k}`, got `{}`{}",
                        m.kind,
                        preempted(set, k, &m, &sample.line)
                    ));
                    return failures;
                }
                if let Some(r) = &sample.rank {
                    let know = set.knowledge();
                    let named = (m.prefix.as_ref())
                        .and_then(|p| p.rank.clone())
                        .or_else(|| know.line_rank(g.id(), &m.kind, &m.fields, &m.message));
                    // An `assignment` line names its process's rank: the rank the run
                    // gives every line of that pid, which the sample states.
                    let assigned = named
                        .is_none()
                        .then(|| know.assigned_rank(g.id(), &m.kind, &m.fields))
                        .flatten();
                    let got_rank = named.or(assigned.clone());
                    // A line that names no rank is shown as `-` by summary and events, so
                    // a sample may write it that way as well as `""`.
                    let want_rank = Some(r.as_str()).filter(|r| !r.is_empty() && *r != "-");
                    if !same_rank(got_rank.as_ref(), want_rank) {
                        // A global rank is mapped onto DP/PP/TP by the run's layout, which
                        // one line does not have.
                        let why = if assigned.is_some() {
                            " (assigned to the line's process by its `assignment` rule)"
                        } else if got_rank.as_ref().is_some_and(|r| r.as_global().is_some()) {
                            " (a global rank: a one-line check has no layout to map it by; \
                             state `rank = \"rankN\"` or leave `rank` out)"
                        } else {
                            ""
                        };
                        failures.push(format!(
                            "{label}: rank {}{why}, expected {}",
                            rank_words(got_rank.map(|r| r.to_string()).as_deref()),
                            rank_words(want_rank)
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

/// How a captured field differs from the value a sample states, if it does.
fn field_mismatch(name: &str, want: &toml::Value, have: Option<&FieldValue>) -> Option<String> {
    // Numbers compare by value: `20` and `20.0` are the same seconds.
    let ok = match (want, have) {
        (toml::Value::Integer(w), Some(FieldValue::Float(h))) => close(*h, *w as f64),
        (toml::Value::Integer(w), Some(v)) => v.as_i64() == Some(*w),
        (toml::Value::Float(w), Some(v)) => v.as_f64().is_some_and(|h| close(h, *w)),
        (toml::Value::String(w), Some(FieldValue::Text(h))) => w == h,
        _ => false,
    };
    if ok {
        return None;
    }
    // A number read as text: the capture has no unit.
    let fix = match (want, have) {
        (toml::Value::Integer(_), Some(FieldValue::Text(_))) => {
            format!(" (add `units = {{ {name} = \"int\" }}` to the event)")
        }
        _ => String::new(),
    };
    Some(format!(
        "field `{name}` {}, expected {}{fix}",
        field_words(have),
        toml_words(want)
    ))
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

fn toml_words(want: &toml::Value) -> String {
    match want {
        toml::Value::String(s) => format!("the text {s:?}"),
        toml::Value::Integer(_) | toml::Value::Float(_) => want.to_string(),
        other => format!("{other} (write a number or a string)"),
    }
}

/// For a line no event matched: how far each candidate pattern got, as lnav does — the
/// longest leading part of the regex (cut at a top-level boundary) that still matches.
pub(crate) fn explain_miss(set: &GrammarSet, line: &str) -> String {
    let mut out = String::new();
    for g in &set.grammars {
        // `events` are compiled from `spec.event` in order.
        for (spec, ev) in g.spec.event.iter().zip(&g.events) {
            let Some(at) = spec
                .literals
                .iter()
                .filter_map(|l| line.find(l.as_str()))
                .min()
            else {
                continue;
            };
            // The text the regex ran on, as the scan gives it: after the governing prefix
            // (or after the wrappers of a line no prefix governs).
            let prefix = set.find_prefix(line, at);
            let start = prefix.as_ref().map_or_else(
                || line.len() - crate::base::text::peel_transport(line.as_bytes()).len(),
                |p| p.prefix_end,
            );
            let text = line.get(start..).unwrap_or("");
            let pattern = ev.regex.as_str();
            let mut best = 0;
            for cut in pattern_cut_points(pattern) {
                if Regex::new(&pattern[..cut]).is_ok_and(|r| r.is_match(text)) {
                    best = cut;
                }
            }
            out.push_str(&format!(
                "  {}:{}: matched `{}`, failed at `{}`, on the text after the prefix {:?}\n",
                g.spec.id,
                ev.kind,
                &pattern[..best],
                crate::base::text::truncate(&pattern[best..], 41),
                crate::base::text::truncate(text, 61)
            ));
        }
    }
    if out.is_empty() {
        out.push_str("  no event literal occurs in the line\n");
    }
    out
}

/// Byte offsets in a regex where cutting it leaves a valid pattern prefix: after each
/// top-level atom (a char, an escape, a group or class, with its quantifier).
pub(super) fn pattern_cut_points(p: &str) -> Vec<usize> {
    let b = p.as_bytes();
    let mut cuts = Vec::new();
    let mut i = 0;
    let mut depth = 0i32;
    let mut in_class = false;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'[' if !in_class => {
                in_class = true;
                i += 1
            }
            b']' if in_class => {
                in_class = false;
                i += 1
            }
            b'(' if !in_class => {
                depth += 1;
                i += 1
            }
            b')' if !in_class => {
                depth -= 1;
                i += 1
            }
            _ => i += 1,
        }
        while i < b.len() && !in_class && matches!(b[i], b'?' | b'*' | b'+') {
            i += 1;
        }
        if depth == 0 && !in_class && i <= b.len() && p.is_char_boundary(i.min(b.len())) {
            cuts.push(i.min(b.len()));
        }
    }
    cuts
}

/// A read stamp at its format's resolution, as the summary shows one: a millisecond
/// stamp reading `.000` keeps its `.000`, a whole-second stamp has no fraction.
fn stamp_shown(t: NaiveDateTime, step_ms: u32) -> String {
    if step_ms < 1000 && chrono::Timelike::nanosecond(&t) % 1_000_000 == 0 {
        t.format("%Y-%m-%d %H:%M:%S%.3f").to_string()
    } else {
        t.format("%Y-%m-%d %H:%M:%S%.f").to_string()
    }
}
