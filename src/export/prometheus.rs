//! Prometheus text exposition format (version 0.0.4): start-up figures as gauges that a
//! textfile collector or a push gateway can take, so dashboards can track start-up time
//! and KV capacity across deployments.
//!
//! Every family is written whole (HELP, TYPE, then its samples) because the format
//! forbids interleaving families; label values are escaped as the format requires.

use std::fmt::Write as _;
use std::io::{self, Write};

use super::Exporter;
use crate::model::{Phase, Run};
use crate::report::RunReport;

/// Prometheus text exposition: the run's start-up figures as gauges, for a dashboard.
pub struct Prometheus;

/// Escapes a label value: backslash, double quote and newline.
pub(crate) fn escape_label(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s
}

/// Go's float formatting as Prometheus reads it: `+Inf`, `-Inf`, `NaN`, else a number.
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{v}")
    }
}

struct Family {
    name: &'static str,
    help: String,
    samples: Vec<(Vec<(&'static str, String)>, f64)>,
}

impl Family {
    fn new(name: &'static str, help: &str) -> Family {
        Family {
            name,
            help: help.to_string(),
            samples: Vec::new(),
        }
    }
    fn push(&mut self, labels: Vec<(&'static str, String)>, v: f64) {
        self.samples.push((labels, v));
    }
    fn render(&self, o: &mut String) {
        if self.samples.is_empty() {
            return;
        }
        let _ = writeln!(o, "# HELP {} {}", self.name, self.help);
        let _ = writeln!(o, "# TYPE {} gauge", self.name);
        for (labels, v) in &self.samples {
            let l: Vec<String> = labels
                .iter()
                .map(|(k, v)| format!("{k}=\"{}\"", escape_label(v)))
                .collect();
            let _ = writeln!(o, "{}{{{}}} {}", self.name, l.join(","), number(*v));
        }
    }
}

pub(crate) fn exposition(run: &Run, report: &RunReport) -> String {
    // The identity's name: the same series for `samples/x`, `samples/x/` and its
    // absolute path.
    let name = super::identity::normalised_name(&run.name);
    let mut duration = Family::new(
        "rankscope_phase_duration_seconds",
        "Wall time of a start-up phase on a rank, from log time stamps (SGLang prints whole seconds).",
    );
    let mut elapsed = Family::new(
        "rankscope_phase_reported_elapsed_seconds",
        "Elapsed time a phase's own log line reported, finer than the time stamps.",
    );
    let mut memory = Family::new(
        "rankscope_phase_memory_bytes",
        "Memory figure a phase reported, in bytes (SGLang's GB are GiB).",
    );
    let mut kv = Family::new(
        "rankscope_kv_tokens",
        "KV cache capacity in tokens per rank.",
    );
    let failed_help = format!(
        "1 when the rank failed (kind: {}), else 0; phase is where it stopped.",
        crate::render::json::enum_values::<crate::render::json::FailureKindName>().join(", ")
    );
    let mut failed = Family::new("rankscope_rank_failed", &failed_help);
    let mut ready = Family::new("rankscope_run_ready", "1 when the server reported ready.");
    let mut ranks = Family::new("rankscope_run_ranks", "Ranks seen in the logs.");
    let mut unknown = Family::new(
        "rankscope_unknown_lines",
        "Log lines no grammar understood.",
    );
    let mut skew = Family::new(
        "rankscope_phase_end_skew_seconds",
        "Seconds between the first and the last rank finishing a phase.",
    );

    for r in &run.ranks {
        let rank = r.rank.to_string();
        for p in &r.phases {
            let base = || {
                vec![
                    ("run", name.clone()),
                    ("rank", rank.clone()),
                    ("phase", p.phase.name().to_string()),
                ]
            };
            if let Some(d) = p.duration_s() {
                duration.push(base(), d);
            }
            for f in &p.figures {
                if f.value.as_bytes().is_some() {
                    let mut l = base();
                    l.push(("figure", f.name.to_string()));
                    if let Some(v) = f.value.as_f64() {
                        memory.push(l, v);
                    }
                } else if f.name == "elapsed" {
                    if let Some(v) = f.value.as_f64() {
                        elapsed.push(base(), v);
                    }
                } else if f.name == "tokens" && p.phase == Phase::KvCache {
                    if let Some(v) = f.value.as_f64() {
                        kv.push(vec![("run", name.clone()), ("rank", rank.clone())], v);
                    }
                }
            }
        }
        let (v, kind) = match &r.failure {
            Some(f) => (1.0, f.kind.name()),
            None => (0.0, ""),
        };
        failed.push(
            vec![
                ("run", name.clone()),
                ("rank", rank.clone()),
                ("phase", r.last_phase.name().to_string()),
                ("kind", kind.to_string()),
            ],
            v,
        );
    }
    for s in &report.phases {
        if let Some(v) = s.end_skew_s {
            skew.push(
                vec![("run", name.clone()), ("phase", s.phase.name().to_string())],
                v.get(),
            );
        }
    }
    let run_label = || vec![("run", name.clone())];
    ready.push(run_label(), if run.ready { 1.0 } else { 0.0 });
    ranks.push(run_label(), run.ranks.len() as f64);
    unknown.push(run_label(), run.counts().unknown as f64);

    let mut o = String::new();
    for f in [
        &duration, &elapsed, &memory, &kv, &failed, &ready, &ranks, &unknown, &skew,
    ] {
        f.render(&mut o);
    }
    o
}

impl Exporter for Prometheus {
    fn write(&self, run: &Run, report: &RunReport, out: &mut dyn Write) -> io::Result<()> {
        out.write_all(exposition(run, report).as_bytes())
    }
}
