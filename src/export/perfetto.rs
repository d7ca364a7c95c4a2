//! Chrome trace-event JSON (the "JSON Object Format" of the Trace Event Format document),
//! which ui.perfetto.dev and chrome://tracing both open.
//!
//! One process per run; one thread per rank (the launcher, lines without a rank, is
//! thread 0). Phases are complete events (`X`), log events and failures are thread-scoped
//! instants (`i`), free and used memory are counters (`C`). Times are microseconds since
//! the run's first time stamp; SGLang prints whole seconds, so slices start and end on
//! second boundaries and a phase shorter than a second has duration 0.

use std::collections::HashMap;
use std::io::{self, Write};

use chrono::NaiveDateTime;
use serde::Serialize;
use serde_json::{json, Map, Value};

use super::Exporter;
use crate::base::event::{Event, FieldValue, Rank};
use crate::model::{Failure, RankRun, Run};
use crate::report::RunReport;

/// The run's process id in the trace; there is one run per file.
const PID: u32 = 1;
const LAUNCHER_TID: u32 = 0;

/// The Chrome/Perfetto trace format (JSON trace events): one track per rank, one slice per
/// phase.
pub struct Perfetto;

#[derive(Serialize)]
struct TraceEvent {
    name: String,
    ph: &'static str,
    /// Microseconds since the start of the run.
    ts: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<i64>,
    pid: u32,
    tid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    s: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cat: Option<&'static str>,
    #[serde(skip_serializing_if = "Map::is_empty")]
    args: Map<String, Value>,
}

impl TraceEvent {
    fn new(name: impl Into<String>, ph: &'static str, ts: i64, tid: u32) -> TraceEvent {
        TraceEvent {
            name: name.into(),
            ph,
            ts,
            dur: None,
            pid: PID,
            tid,
            s: None,
            cat: None,
            args: Map::new(),
        }
    }
}

fn micros(start: Option<NaiveDateTime>, t: NaiveDateTime) -> i64 {
    start.map_or(0, |s| (t - s).num_microseconds().unwrap_or(0).max(0))
}

fn field_json(v: &FieldValue) -> Value {
    match v {
        // The memory shape of the JSON documents (docs/json.md); trace viewers show
        // nested args as `mem_usage.bytes`. Counters (`ph: "C"`) cannot take it: their args
        // must be numbers, one series each.
        FieldValue::Bytes { bytes, resolution } => {
            json!({"bytes": bytes, "resolution_bytes": resolution})
        }
        FieldValue::Int(i) => json!(i),
        FieldValue::Float(f) => json!(f),
        FieldValue::Text(t) => json!(t),
    }
}

/// The memory series a figure belongs to: free memory (before and after each phase) is
/// one line over time, used memory another.
fn counter_series(figure: &str) -> Option<&'static str> {
    match figure {
        "avail_before" | "avail_after" => Some("avail"),
        "mem_usage" => Some("mem_usage"),
        _ => None,
    }
}

/// The whole trace as one JSON value (for tests and callers that want the document);
/// `Perfetto::write` streams the same events instead of holding them.
pub fn trace(run: &Run) -> Value {
    let mut out: Vec<TraceEvent> = Vec::new();
    let _ = each_event(run, &mut |e| {
        out.push(e);
        Ok(())
    });
    let mut doc = head(run);
    doc.insert("traceEvents".into(), json!(out));
    Value::Object(doc)
}

/// Everything of the document but its events.
fn head(run: &Run) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("displayTimeUnit".into(), json!("ms"));
    m.insert(
        "otherData".into(),
        json!({
            "generator": concat!("rankscope ", env!("CARGO_PKG_VERSION")),
            "run": run.name,
            "start": run.start.map(|t| t.format("%Y-%m-%dT%H:%M:%S%.f").to_string()),
        }),
    );
    m
}

/// Each trace event in the document's order, handed to `emit` as it is made: a
/// 100,000-rank run's events held as a JSON tree took 1.4 GB.
fn each_event(run: &Run, emit: &mut dyn FnMut(TraceEvent) -> io::Result<()>) -> io::Result<()> {
    let start = run.start;
    let tid_of: HashMap<&Rank, u32> = run
        .ranks
        .iter()
        .enumerate()
        .map(|(i, r)| (&r.rank, i as u32 + 1))
        .collect();
    let tid = |r: Option<&Rank>| {
        r.and_then(|r| tid_of.get(r).copied())
            .unwrap_or(LAUNCHER_TID)
    };

    tracks(run, &tid, emit)?;

    // Lines without a time stamp (NCCL INFO) are placed at the time of the line before
    // them, as the run model orders them.
    let mut at: HashMap<(usize, u64), i64> = HashMap::new();
    let mut last_rank_ts: HashMap<u32, i64> = HashMap::new();
    let mut prev: i64 = 0;
    for e in &run.events {
        let ts = e.ts.map_or(prev, |t| micros(start, t));
        prev = ts;
        at.insert((e.origin.source, e.origin.line), ts);
        let t = tid(e.rank.as_ref());
        last_rank_ts.insert(t, ts);
        emit(instant(run, e, ts, t))?;
    }

    for r in &run.ranks {
        let t = tid(Some(&r.rank));
        let rank_end = last_rank_ts.get(&t).copied().unwrap_or(0);
        rank_phases(start, r, t, rank_end, &at, emit)?;
    }

    let failures = run
        .ranks
        .iter()
        .filter_map(|r| r.failure.as_deref().map(|f| (Some(&r.rank), f)))
        .chain(run.launcher_failures.iter().map(|f| (None, f)));
    for (rank, f) in failures {
        let t = tid(rank);
        let ts =
            f.ts.map(|x| micros(start, x))
                .or_else(|| {
                    f.origin
                        .as_ref()
                        .and_then(|o| at.get(&(o.source, o.line)).copied())
                })
                .unwrap_or_else(|| last_rank_ts.get(&t).copied().unwrap_or(0));
        emit(failure_event(run, f, ts, t))?;
    }

    Ok(())
}

/// The trace's process and one named, ordered track per rank (its node in a multi-node
/// run) after the launcher's.
fn tracks(
    run: &Run,
    tid: &dyn Fn(Option<&Rank>) -> u32,
    emit: &mut dyn FnMut(TraceEvent) -> io::Result<()>,
) -> io::Result<()> {
    let mut meta = TraceEvent::new("process_name", "M", 0, LAUNCHER_TID);
    meta.args.insert("name".into(), json!(run.name));
    emit(meta)?;
    let mut threads = vec![(LAUNCHER_TID, "launcher".to_string())];
    // In a multi-node run a rank's lane names its node; its times are already on the
    // reference node's clock (unless `--no-clock-align`).
    threads.extend(run.ranks.iter().map(|r| {
        let name = match run.node_of(&r.rank) {
            Some(n) => format!("{} @{}", r.rank, n.name),
            None => r.rank.to_string(),
        };
        (tid(Some(&r.rank)), name)
    }));
    for (t, name) in threads {
        let mut m = TraceEvent::new("thread_name", "M", 0, t);
        m.args.insert("name".into(), json!(name));
        emit(m)?;
        let mut m = TraceEvent::new("thread_sort_index", "M", 0, t);
        m.args.insert("sort_index".into(), json!(t));
        emit(m)?;
    }

    Ok(())
}

/// A rank's phases as slices (from their stamps, or drawn back from the end by the
/// printed duration) and their byte figures as counters. `rank_end` ends a phase that
/// never ended; `at` places a figure at its line's time.
fn rank_phases(
    start: Option<NaiveDateTime>,
    r: &RankRun,
    t: u32,
    rank_end: i64,
    at: &HashMap<(usize, u64), i64>,
    emit: &mut dyn FnMut(TraceEvent) -> io::Result<()>,
) -> io::Result<()> {
    for p in &r.phases {
        let end = p.end.map_or(rank_end, |e| micros(start, e));
        // With no begin line the slice is drawn back from the end by the duration
        // the server printed; with neither, the end line's instant is all there is.
        let began = match (p.start, p.end, p.printed_elapsed_s()) {
            (Some(s), _, _) => Some((micros(start, s), "stamp")),
            // Before the trace's 0 when the phase began before the log: the trace
            // format allows it, and clamping would shorten the printed duration.
            (None, Some(_), Some(el)) => Some((end - (el * 1e6).round() as i64, "printed")),
            _ => None,
        };
        if let Some((ts, from)) = began {
            let mut x = TraceEvent::new(p.phase.name(), "X", ts, t);
            x.dur = Some((end - ts).max(0));
            x.cat = Some("phase");
            x.args.insert("complete".into(), json!(p.complete));
            x.args.insert("start_from".into(), json!(from));
            for f in &p.figures {
                x.args.insert(f.name.to_string(), field_json(&f.value));
            }
            emit(x)?;
        }
        let ts = began.map_or(end, |b| b.0);
        for f in &p.figures {
            let (Some(series), Some(bytes)) = (counter_series(f.name.name()), f.value.as_bytes())
            else {
                continue;
            };
            let ts = at
                .get(&(f.origin.source, f.origin.line))
                .copied()
                .unwrap_or(ts);
            let mut c = TraceEvent::new(format!("{} {series}", r.rank), "C", ts, t);
            c.args.insert("bytes".into(), json!(bytes));
            emit(c)?;
        }
    }
    Ok(())
}

/// A failure's instant, with its kind, phase, fields, line and what it is a consequence
/// of.
fn failure_event(run: &Run, f: &Failure, ts: i64, t: u32) -> TraceEvent {
    let mut i = TraceEvent::new(format!("failure: {}", f.kind.name()), "i", ts, t);
    i.s = Some("t");
    i.cat = Some("failure");
    i.args.insert("message".into(), json!(f.message));
    i.args.insert("kind".into(), json!(f.kind.name()));
    i.args.insert("phase".into(), json!(f.phase.name()));
    for (k, v) in &f.fields {
        i.args.insert(k.to_string(), field_json(v));
    }
    if let Some(o) = &f.origin {
        i.args.insert("source".into(), json!(run.source_name(o)));
        i.args.insert("line".into(), json!(o.line));
    }
    if let Some(c) = &f.consequence_of {
        i.args.insert("consequence_of".into(), json!(c.to_string()));
    }
    i
}

fn instant(run: &Run, e: &Event, ts: i64, tid: u32) -> TraceEvent {
    let mut i = TraceEvent::new(e.kind.clone(), "i", ts, tid);
    i.s = Some("t");
    i.cat = Some("event");
    for (k, v) in &e.fields {
        i.args.insert(k.to_string(), field_json(v));
    }
    i.args.insert("message".into(), json!(&*e.message));
    i.args
        .insert("source".into(), json!(run.source_name(&e.origin)));
    i.args.insert("line".into(), json!(e.origin.line));
    if e.ts.is_none() {
        i.args.insert("ts_inferred".into(), json!(true));
    }
    i
}

impl Exporter for Perfetto {
    fn write(&self, run: &Run, _report: &RunReport, out: &mut dyn Write) -> io::Result<()> {
        // `{"traceEvents":[…],…}` written as the events are made, the rest of the
        // document after them.
        out.write_all(b"{\"traceEvents\":[")?;
        let mut first = true;
        each_event(run, &mut |e| {
            if !first {
                out.write_all(b",")?;
            }
            first = false;
            serde_json::to_writer(&mut *out, &e)?;
            Ok(())
        })?;
        out.write_all(b"]")?;
        for (k, v) in head(run) {
            out.write_all(b",")?;
            serde_json::to_writer(&mut *out, &k)?;
            out.write_all(b":")?;
            serde_json::to_writer(&mut *out, &v)?;
        }
        out.write_all(b"}\n")
    }
}
