//! The `rankscope` binary: argument parsing and wiring. The work is in the library.

use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;
use rankscope::analysis::diff;
use rankscope::cli::{Cli, Command, GrammarAction};
use rankscope::grammar::{self, Grammar, GrammarSet};
use rankscope::load::{self, LoadOptions};
use rankscope::model::Run;
use rankscope::render::{self, json, Style};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            if is_broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            let msg = format!("{e:#}");
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
    let loaded = load::load_run(gs, path, &LoadOptions::default(), &|_| {})?;
    Ok(loaded.run)
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
                let mut stdout = io::BufWriter::new(io::stdout().lock());
                let mut emit = |m: json::Message| -> Result<()> {
                    // Through io::Error, so that a closed pipe is seen as one and ends quietly.
                    serde_json::to_writer(&mut stdout, &json::MessageDoc::new(m))
                        .map_err(io::Error::from)?;
                    stdout.write_all(b"\n")?;
                    Ok(())
                };
                emit(json::run_message(&r))?;
                let mut written = 0u64;
                for e in r.events.iter().filter(|e| keep(e)) {
                    emit(json::Message::Event(json::event_doc(&r, e)))?;
                    written += 1;
                }
                let rank_kept =
                    |x: &rankscope::event::Rank| rank.as_ref().is_none_or(|w| x.to_string() == *w);
                for rr in r.ranks.iter().filter(|x| rank_kept(&x.rank)) {
                    emit(json::rank_message(&r, rr))?;
                }
                for rr in r.ranks.iter().filter(|x| rank_kept(&x.rank)) {
                    if let Some(f) = &rr.failure {
                        emit(json::failure_message(&r, Some(&rr.rank), f))?;
                    }
                }
                if rank.is_none() {
                    for f in &r.launcher_failures {
                        emit(json::failure_message(&r, None, f))?;
                    }
                }
                emit(json::summary_message(&r, written))?;
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
            let (b, c) = rayon::join(|| load(&gs, baseline), || load(&gs, candidate));
            let b = b.with_context(|| format!("baseline {}", baseline.display()))?;
            let c = c.with_context(|| format!("candidate {}", candidate.display()))?;
            let d = diff::diff(&b, &c);
            let code = d.status.exit_code() as u8;
            if *as_json {
                out_json(&json::diff_doc(&b, &c, &d, serde_json::Value::Null))?;
            } else {
                let extra = render::diff_text::Extra::default();
                let mut text = render::diff_text::diff(&d, &extra, style);
                if *explain {
                    text.push_str(&render::diff_text::explain(&d));
                }
                out(&text)?;
            }
            Ok(code)
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
        Command::Schema { document } => {
            let schema = json::schema(document.name())
                .with_context(|| format!("no schema named {}", document.name()))?;
            out_json(&schema)?;
            Ok(0)
        }
    }
}
