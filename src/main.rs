//! The `rankscope` binary: argument parsing and wiring. The work is in the library.

use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;
use rankscope::analysis::{attribute, diff};
use rankscope::cli::{Cli, Command, GrammarAction, MemAction};
use rankscope::grammar::{self, Grammar, GrammarSet};
use rankscope::load::{self, LoadOptions};
use rankscope::model::Run;
use rankscope::render::{self, json, Style};
use rankscope::snapshot;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            if is_broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            // Typed errors often print their source already; say each thing once.
            let mut msg = String::new();
            for cause in e.chain() {
                let c = cause.to_string();
                if !msg.contains(&c) {
                    if !msg.is_empty() {
                        msg.push_str(": ");
                    }
                    msg.push_str(&c);
                }
            }
            eprintln!("rankscope: {}", rankscope::text::sanitize(&msg));
            ExitCode::from(2)
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain()
        .filter_map(|c| c.downcast_ref::<io::Error>())
        .any(|io| io.kind() == io::ErrorKind::BrokenPipe)
}

fn grammars(cli: &Cli) -> Result<GrammarSet> {
    let mut list = GrammarSet::builtin_grammars()?;
    for path in &cli.global.grammars {
        list.push(Grammar::from_path(path)?);
    }
    Ok(GrammarSet::new(list)?)
}

fn load(gs: &GrammarSet, path: &std::path::Path) -> Result<Run> {
    Ok(load_full(gs, path)?.run)
}

fn load_full(gs: &GrammarSet, path: &std::path::Path) -> Result<load::Loaded> {
    Ok(load::load_run(gs, path, &LoadOptions::default(), &|_| {})?)
}

fn out(text: &str) -> Result<()> {
    let mut stdout = io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()?;
    Ok(())
}

fn out_json<T: serde::Serialize>(doc: &T) -> Result<()> {
    let mut s = serde_json::to_string_pretty(doc)?;
    s.push('\n');
    out(&s)
}

fn run(cli: Cli) -> Result<u8> {
    let style = Style::decide(cli.global.color);
    let gs = grammars(&cli)?;
    match &cli.command {
        Command::Summary { run, ranks, json } => {
            let r = load(&gs, run)?;
            if *json {
                out_json(&json::summary_doc(&r))?;
            } else {
                out(&render::summary_text::summary(&r, *ranks, style))?;
            }
            Ok(0)
        }
        Command::Events {
            run,
            json: as_json,
            ndjson,
            kinds,
            rank,
        } => {
            let r = load(&gs, run)?;
            let keep = |e: &rankscope::event::Event| {
                (kinds.is_empty() || kinds.contains(&e.kind))
                    && rank.as_ref().is_none_or(|want| {
                        e.rank.as_ref().map(|x| x.to_string()).as_deref() == Some(want.as_str())
                    })
            };
            if *ndjson {
                let mut stdout = io::stdout().lock();
                for e in r.events.iter().filter(|e| keep(e)) {
                    let env = json::Envelope {
                        kind: "event",
                        schema_version: json::SCHEMA_VERSION,
                        data: json::event_doc(&r, e),
                    };
                    serde_json::to_writer(&mut stdout, &env)?;
                    stdout.write_all(b"\n")?;
                }
                let env = json::Envelope {
                    kind: "summary",
                    schema_version: json::SCHEMA_VERSION,
                    data: r.counts(),
                };
                serde_json::to_writer(&mut stdout, &env)?;
                stdout.write_all(b"\n")?;
                stdout.flush()?;
            } else if *as_json {
                let mut doc = json::events_doc(&r);
                doc.events.retain(|e| {
                    (kinds.is_empty() || kinds.contains(&e.kind))
                        && rank
                            .as_ref()
                            .is_none_or(|w| e.rank.as_deref() == Some(w.as_str()))
                });
                out_json(&doc)?;
            } else {
                out(&render::events_text(&r, &keep, style))?;
            }
            Ok(0)
        }
        Command::Diff {
            baseline,
            candidate,
            json: as_json,
            explain,
        } => {
            let (b, c) = rayon::join(|| load_full(&gs, baseline), || load_full(&gs, candidate));
            let b = b.with_context(|| format!("baseline {}", baseline.display()))?;
            let c = c.with_context(|| format!("candidate {}", candidate.display()))?;
            let d = diff::diff(&b.run, &c.run);
            let ((bs, be), (cs, ce)) = rayon::join(
                || load::load_snapshots(&b.run, &b.files),
                || load::load_snapshots(&c.run, &c.files),
            );
            let attribution = attribute::attribute(&b.run, &c.run, &d, &bs, &cs);
            let mut notes: Vec<String> = be.into_iter().chain(ce).collect();
            if attribution.is_none()
                && d.first_divergence.is_some()
                && (bs.is_empty() || cs.is_empty())
            {
                notes.push("no snapshots in one of the runs: the divergence is not attributed to allocation sites".into());
            }
            let code = d.status.exit_code() as u8;
            if *as_json {
                let attr = serde_json::to_value(&attribution)?;
                out_json(&json::diff_doc(&b.run, &c.run, &d, attr))?;
            } else {
                let extra = render::diff_text::Extra {
                    config: Vec::new(),
                    attribution: attribution
                        .as_ref()
                        .map(render::diff_text::attribution_lines)
                        .unwrap_or_default(),
                    notes,
                };
                let mut text = render::diff_text::diff(&d, &extra, style);
                if *explain {
                    text.push_str(&render::diff_text::explain(&d));
                    if let Some(a) = &attribution {
                        for c in &a.clock {
                            text.push_str(&format!("clock: {c}\n"));
                        }
                    }
                }
                out(&text)?;
            }
            Ok(code)
        }
        Command::Mem {
            diff: Some(MemAction::Diff { a, b, top, json }),
            ..
        } => {
            let rule = snapshot::analysis::SiteRule::default();
            let (sa, sb) = rayon::join(|| snapshot::read_path(a), || snapshot::read_path(b));
            let (sa, sb) = (sa?, sb?);
            let d = snapshot::analysis::diff(
                &snapshot::analysis::summarize(&sa, &rule),
                &snapshot::analysis::summarize(&sb, &rule),
            );
            if *json {
                out_json(&serde_json::json!({
                    "schema_version": json::SCHEMA_VERSION,
                    "command": "mem diff",
                    "a": a.display().to_string(),
                    "b": b.display().to_string(),
                    "diff": d,
                }))?;
            } else {
                out(&format!(
                    "A {}\nB {}\n\n{}",
                    a.display(),
                    b.display(),
                    snapshot::render::diff_text(&d, *top)
                ))?;
            }
            Ok(0)
        }
        Command::Mem {
            diff: None,
            snapshots,
            top,
            json,
        } => {
            if snapshots.is_empty() {
                anyhow::bail!("mem: give at least one snapshot file (or `mem diff A B`)");
            }
            let rule = snapshot::analysis::SiteRule::default();
            let mut docs = Vec::new();
            let mut text = String::new();
            for path in snapshots {
                let s = snapshot::read_path(path)?;
                let summary = snapshot::analysis::summarize(&s, &rule);
                if *json {
                    docs.push(
                        serde_json::json!({"path": path.display().to_string(), "summary": summary}),
                    );
                } else {
                    text.push_str(&format!(
                        "{}\n{}\n",
                        path.display(),
                        snapshot::render::summary_text(&summary, *top)
                    ));
                }
            }
            if *json {
                out_json(&serde_json::json!({
                    "schema_version": json::SCHEMA_VERSION,
                    "command": "mem",
                    "snapshots": docs,
                }))?;
            } else {
                out(&text)?;
            }
            Ok(0)
        }
        Command::Tui { run, vs } => {
            // Loads on its own thread behind a loading screen; a load error comes back
            // after the user has read it and quit, and exits 2 like any other.
            rankscope::tui::run_paths(gs, run, vs.as_deref(), style.color)?;
            Ok(0)
        }
        Command::Grammars { action } => match action {
            GrammarAction::List => {
                let mut s = String::new();
                for g in &gs.grammars {
                    s.push_str(&format!(
                        "{:<10} {:<28} {:>3} events {:>3} samples  {}\n",
                        g.spec.id,
                        g.spec.name,
                        g.spec.event.len(),
                        g.spec.sample.len(),
                        g.origin
                    ));
                }
                out(&s)?;
                Ok(0)
            }
            GrammarAction::Check { file } => {
                let set = match file {
                    Some(f) => {
                        let mut list = GrammarSet::builtin_grammars()?;
                        list.push(Grammar::from_path(f)?);
                        GrammarSet::new(list)?
                    }
                    None => gs,
                };
                let mut failures = Vec::new();
                let mut checked = 0;
                for (i, g) in set.grammars.iter().enumerate() {
                    if file.is_some()
                        && !g.origin.starts_with(
                            &*file
                                .as_ref()
                                .map(|f| f.display().to_string())
                                .unwrap_or_default(),
                        )
                    {
                        continue;
                    }
                    checked += g.spec.sample.len();
                    failures.extend(grammar::check_samples(&set, i));
                }
                let mut s = String::new();
                for f in &failures {
                    s.push_str(&rankscope::text::sanitize(f));
                    s.push('\n');
                }
                s.push_str(&format!(
                    "{} samples checked, {} failed\n",
                    checked,
                    failures.len()
                ));
                out(&s)?;
                Ok(if failures.is_empty() { 0 } else { 1 })
            }
        },
    }
}
