//! The `rankscope` binary: argument parsing and wiring. The work is in the library.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;
use rankscope::analysis::{attribute, diff};
use rankscope::cli::{Cli, Command, GrammarAction, MemAction, MemOutput};
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
    Ok(GrammarSet::new(grammar::load_all(&cli.global.grammars)?)?)
}

fn load(gs: &GrammarSet, paths: &[PathBuf], opts: &LoadOptions) -> Result<Run> {
    Ok(load_full(gs, paths, opts)?.run)
}

fn load_full(gs: &GrammarSet, paths: &[PathBuf], opts: &LoadOptions) -> Result<load::Loaded> {
    let bar = progress::bar_for(paths);
    let report = |source: usize, n: u64| {
        if let Some(b) = &bar {
            b.report(source, n);
        }
    };
    let loaded = load::load_paths(gs, paths, opts, &report);
    if let Some(b) = &bar {
        b.finish();
    }
    Ok(loaded?)
}

/// The progress bar for large inputs: on stderr only, only when stderr is a terminal,
/// never while a command writes JSON or an export (scripts read those).
mod progress {
    use std::collections::HashMap;
    use std::io::IsTerminal;
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Mutex, OnceLock};

    use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

    pub static MACHINE_OUTPUT: AtomicBool = AtomicBool::new(false);
    const MIN_BYTES: u64 = 100_000_000;
    const MIN_FILES: usize = 32;

    pub struct Bar {
        bar: ProgressBar,
        /// Bytes read so far per source: the callback reports running totals.
        seen: Mutex<HashMap<usize, u64>>,
    }

    impl Bar {
        pub fn report(&self, source: usize, total: u64) {
            let Ok(mut seen) = self.seen.lock() else {
                return;
            };
            let last = seen.entry(source).or_insert(0);
            self.bar.inc(total.saturating_sub(*last));
            *last = total;
        }
        pub fn finish(&self) {
            self.bar.finish_and_clear();
        }
    }

    pub fn bar_for(paths: &[PathBuf]) -> Option<Bar> {
        if MACHINE_OUTPUT.load(Ordering::Relaxed) || !std::io::stderr().is_terminal() {
            return None;
        }
        let nodes = rankscope::source::discover_nodes(paths).ok()?;
        let logs: Vec<_> = nodes
            .iter()
            .flat_map(|n| n.files.iter())
            .filter(|f| f.kind == rankscope::source::SourceKind::Log)
            .collect();
        let bytes: u64 = logs.iter().filter_map(|f| f.size).sum();
        if bytes < MIN_BYTES && logs.len() < MIN_FILES {
            return None;
        }
        static MULTI: OnceLock<MultiProgress> = OnceLock::new();
        let multi =
            MULTI.get_or_init(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()));
        let bar = multi.add(ProgressBar::new(bytes));
        let style = ProgressStyle::with_template(
            "{prefix} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} {eta}",
        )
        .map(|s| s.progress_chars("=> "))
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_prefix(
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(" + "),
        );
        Some(Bar {
            bar,
            seen: Mutex::new(HashMap::new()),
        })
    }
}

/// `--kind` and `--rank` values that can match nothing are mistakes: say so, with the
/// values that would match.
fn check_filters(gs: &GrammarSet, r: &Run, kinds: &[String], rank: Option<&str>) -> Result<()> {
    let mut known: Vec<&str> = gs
        .grammars
        .iter()
        .flat_map(|g| g.spec.event.iter().map(|e| e.kind.as_str()))
        .collect();
    known.sort_unstable();
    known.dedup();
    for k in kinds {
        if !known.contains(&k.as_str()) {
            anyhow::bail!(
                "--kind {k}: no grammar gives events of this kind; kinds: {}",
                known.join(", ")
            );
        }
    }
    if let Some(want) = rank {
        if !r.ranks.iter().any(|x| x.rank.to_string() == want) {
            let names: Vec<String> = r.ranks.iter().map(|x| x.rank.to_string()).collect();
            anyhow::bail!(
                "--rank {want}: no such rank in {}; ranks: {}",
                r.name,
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            );
        }
    }
    Ok(())
}

fn shown(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(" + ")
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

/// Commands whose stdout a program reads: no progress bar there.
fn machine_output(c: &Command) -> bool {
    match c {
        Command::Summary { json, ndjson, .. } => *json || *ndjson,
        Command::Diff { json, .. } => *json,
        Command::Events { json, ndjson, .. } => *json || *ndjson,
        Command::Export { .. } => true,
        _ => false,
    }
}

/// `rankscope mem`: snapshot summaries and diffs.
fn run_mem(cli: &Cli, style: Style) -> Result<u8> {
    match &cli.command {
        Command::Mem {
            diff:
                Some(MemAction::Diff {
                    a,
                    b,
                    sites,
                    output: MemOutput { top, json },
                }),
            ..
        } => {
            let rule = sites.rule();
            let (sa, sb) = rayon::join(|| snapshot::read_path(a), || snapshot::read_path(b));
            let (sa, sb) = (sa?, sb?);
            let d = snapshot::analysis::diff(
                &snapshot::analysis::summarize(&sa, &rule),
                &snapshot::analysis::summarize(&sb, &rule),
            );
            if *json {
                out_json(&rankscope::render::mem_json::mem_diff_doc(
                    a.display().to_string(),
                    b.display().to_string(),
                    &d,
                ))?;
            } else {
                out(&format!(
                    "A {}\nB {}\n\n{}",
                    a.display(),
                    b.display(),
                    snapshot::render::diff_text(&d, *top, style.width)
                ))?;
            }
            Ok(0)
        }
        Command::Mem {
            diff: None,
            snapshots,
            sites,
            output: MemOutput { top, json },
        } => {
            if snapshots.is_empty() {
                anyhow::bail!("mem: give at least one snapshot file (or `mem diff A B`)");
            }
            let rule = sites.rule();
            let mut docs = Vec::new();
            let mut text = String::new();
            for path in snapshots {
                let s = snapshot::read_path(path)?;
                let summary = snapshot::analysis::summarize(&s, &rule);
                if *json {
                    docs.push((path.display().to_string(), summary));
                } else {
                    text.push_str(&format!(
                        "{}\n{}\n",
                        path.display(),
                        snapshot::render::summary_text(&summary, *top, style.width)
                    ));
                }
            }
            if *json {
                out_json(&rankscope::render::mem_json::mem_doc(
                    docs.iter().map(|(p, s)| (p.clone(), s)).collect(),
                ))?;
            } else {
                out(&text)?;
            }
            Ok(0)
        }
        // Every other command is dispatched by `run`.
        _ => Ok(0),
    }
}

fn run(cli: Cli) -> Result<u8> {
    progress::MACHINE_OUTPUT.store(
        machine_output(&cli.command),
        std::sync::atomic::Ordering::Relaxed,
    );
    let style = Style::decide(cli.global.color, cli.global.width.map(usize::from));
    // Snapshots need no log grammar: `mem` neither reads nor compiles them.
    if matches!(cli.command, Command::Mem { .. }) {
        return run_mem(&cli, style);
    }
    let gs = grammars(&cli)?;
    let opts = LoadOptions {
        attempt: cli.global.attempt.map(|a| a as usize),
        clock_align: !cli.global.no_clock_align,
        ..LoadOptions::default()
    };
    match &cli.command {
        Command::Summary {
            run,
            ranks,
            json,
            ndjson,
        } => {
            let loaded = load_full(&gs, run, &opts)?;
            let r = &loaded.run;
            if *ndjson {
                let id = json::RunIdDoc::from(&rankscope::export::identity::identity(
                    &r.name,
                    &loaded.files,
                ));
                let mut stdout = io::BufWriter::new(io::stdout().lock());
                for record in json::phase_records(r, &id) {
                    // Through io::Error, so that a closed pipe is seen as one and ends quietly.
                    serde_json::to_writer(&mut stdout, &record).map_err(io::Error::from)?;
                    stdout.write_all(b"\n")?;
                }
                stdout.flush()?;
            } else if *json {
                out_json(&json::summary_doc(r))?;
            } else {
                let mut text = render::summary_text::summary(r, *ranks, style);
                // Snapshots are read only when a rank failed: they are what names the
                // OOM's site, and reading them costs seconds on large runs.
                if r.ranks.iter().any(|x| x.failure.is_some()) {
                    let (snaps, _) = load::load_snapshots(r, &loaded.files);
                    let ev = attribute::snapshot_evidence(r, &[], &snaps);
                    text.push_str(&render::diff_text::summary_snapshot_section(&ev, style));
                }
                out(&text)?;
            }
            // The process ends here and the OS takes its memory back at once: freeing a
            // run of thousands of ranks piece by piece (glibc coalescing its small
            // blocks) was a fifth of `summary` and a third of `diff` at 8,192 ranks.
            std::mem::forget(loaded);
            Ok(0)
        }
        Command::Events {
            run,
            json: as_json,
            ndjson,
            kinds,
            rank,
        } => {
            let loaded = load_full(&gs, run, &opts)?;
            let r = loaded.run;
            check_filters(&gs, &r, kinds, rank.as_deref())?;
            let keep = |e: &rankscope::event::Event| {
                (kinds.is_empty() || kinds.contains(&e.kind))
                    && rank.as_ref().is_none_or(|want| {
                        e.rank.as_ref().map(|x| x.to_string()).as_deref() == Some(want.as_str())
                    })
            };
            if *ndjson {
                let id = json::RunIdDoc::from(&rankscope::export::identity::identity(
                    &r.name,
                    &loaded.files,
                ));
                let mut stdout = io::BufWriter::new(io::stdout().lock());
                let mut emit = |m: json::Message| -> Result<()> {
                    // Through io::Error, so that a closed pipe is seen as one and ends quietly.
                    serde_json::to_writer(&mut stdout, &json::MessageDoc::new(m, id.clone()))
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
            // Not freed piece by piece, as in `summary`.
            std::mem::forget(r);
            Ok(0)
        }
        Command::Diff {
            paths,
            baseline,
            json: as_json,
            explain,
        } => {
            let (baseline, candidate): (&[PathBuf], &[PathBuf]) = match (baseline.is_empty(), paths.as_slice()) {
                (false, _) => (baseline, paths),
                (true, [b, c]) => (std::slice::from_ref(b), std::slice::from_ref(c)),
                (true, _) => anyhow::bail!(
                    "diff: give BASELINE CANDIDATE, or --baseline PATH (repeatable) and the candidate's paths"
                ),
            };
            let (b, c) = rayon::join(
                || load_full(&gs, baseline, &opts),
                || load_full(&gs, candidate, &opts),
            );
            let b = b.with_context(|| format!("baseline {}", shown(baseline)))?;
            let c = c.with_context(|| format!("candidate {}", shown(candidate)))?;
            let d = diff::diff(&b.run, &c.run);
            let ((bs, be), (cs, ce)) = rayon::join(
                || load::load_snapshots(&b.run, &b.files),
                || load::load_snapshots(&c.run, &c.files),
            );
            let attribution = attribute::attribute(&b.run, &c.run, &d, &bs, &cs);
            let evidence = attribute::snapshot_evidence(&c.run, &bs, &cs);
            let mut notes: Vec<String> = be.into_iter().chain(ce).collect();
            for (name, run, snaps) in [("baseline", &b.run, &bs), ("candidate", &c.run, &cs)] {
                let parts: Vec<String> = attribute::rank_match_note(snaps)
                    .into_iter()
                    .chain(attribute::clock_note(run, snaps))
                    .collect();
                if !parts.is_empty() {
                    notes.push(format!("{name} snapshots {}", parts.join("; ")));
                }
            }
            if attribution.is_none()
                && d.first_divergence.is_some()
                && (bs.is_empty() || cs.is_empty())
            {
                notes.push("no snapshots in one of the runs: the divergence is not attributed to allocation sites".into());
            }
            let code = d.status.exit_code() as u8;
            if *as_json {
                out_json(&json::diff_doc(
                    &b.run,
                    &c.run,
                    &d,
                    attribution.as_ref(),
                    Some(&evidence),
                ))?;
            } else {
                let extra = render::diff_text::Extra {
                    config: render::diff_text::allocator_setting_lines(&evidence),
                    snapshot_cause: render::diff_text::fragmentation_cause_lines(
                        &evidence,
                        d.first_divergence.is_some(),
                    ),
                    oom_sites: render::diff_text::oom_site_lines(&evidence),
                    attribution: attribution
                        .as_ref()
                        .map(render::diff_text::attribution_lines)
                        .unwrap_or_default(),
                    notes,
                };
                let mut text = render::diff_text::diff(&d, &extra, style);
                if *explain {
                    text.push_str(&render::diff_text::explain(&d, style));
                    if let Some(a) = &attribution {
                        for c in &a.clock {
                            text.push_str(&format!("clock: {c}\n"));
                        }
                    }
                }
                out(&text)?;
            }
            // Not freed piece by piece, as in `summary`.
            std::mem::forget((b, c, d, bs, cs));
            Ok(code)
        }
        Command::Mem { .. } => run_mem(&cli, style),
        Command::Tui {
            run,
            vs,
            first_frame,
        } => {
            if let Some((w, h)) = first_frame {
                out(&rankscope::tui::first_frame(&gs, run, vs, &opts, (*w, *h))?)?;
                return Ok(0);
            }
            // Loads on its own thread behind a loading screen; a load error comes back
            // after the user has read it and quit, and exits 2 like any other.
            rankscope::tui::run_paths(gs, run, vs, opts.clone(), style.color)?;
            Ok(0)
        }
        Command::Grammars { action } => match action {
            GrammarAction::List => {
                let mut s = String::new();
                for g in &gs.grammars {
                    s.push_str(&format!(
                        "{:<10} {:<22} {:>3} events {:>3} samples  {}\n",
                        g.spec.id,
                        g.spec.name,
                        g.spec.event.len(),
                        g.spec.sample.len(),
                        g.origin
                    ));
                }
                if let Some(dir) = grammar::user_grammar_dir() {
                    s.push_str(&format!(
                        "user grammars: {} ({})\n",
                        dir.display(),
                        if dir.is_dir() { "found" } else { "absent" }
                    ));
                }
                out(&s)?;
                Ok(0)
            }
            GrammarAction::Check { file } => {
                // A file under check joins (or replaces, by id) the loaded grammars, so its
                // samples are matched the way a run would read them; only its own samples
                // are checked.
                let (set, only) = match file {
                    Some(f) => {
                        let g = Grammar::from_path(f)?;
                        let id = g.spec.id.clone();
                        let mut list = grammar::load_all(&cli.global.grammars)?;
                        match list.iter().position(|x| x.spec.id == id) {
                            Some(i) => list[i] = g,
                            None => list.push(g),
                        }
                        (GrammarSet::new(list)?, Some(id))
                    }
                    None => (gs, None),
                };
                let mut failures = Vec::new();
                let mut checked = 0;
                for (i, g) in set.grammars.iter().enumerate() {
                    if only.as_ref().is_some_and(|id| id != &g.spec.id) {
                        continue;
                    }
                    checked += g.spec.sample.len();
                    failures.extend(grammar::check_samples(&set, i));
                }
                let mut s = String::new();
                for f in &failures {
                    for line in f.lines() {
                        s.push_str(&rankscope::text::sanitize(line));
                        s.push('\n');
                    }
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
        Command::Export {
            run,
            perfetto,
            prometheus,
        } => {
            use rankscope::export::{perfetto::Perfetto, prometheus::Prometheus, Exporter};
            let r = load(&gs, run, &opts)?;
            let mut buf = Vec::new();
            // The `format` group makes the two flags exclusive and one of them required.
            let (exporter, dest): (&dyn Exporter, _) = if *prometheus {
                (&Prometheus, None)
            } else {
                (&Perfetto, perfetto.as_ref())
            };
            exporter.write(&r, &mut buf)?;
            match dest {
                Some(p) if p.as_os_str() != "-" => {
                    std::fs::write(p, &buf).with_context(|| format!("writing {}", p.display()))?
                }
                _ => {
                    let mut stdout = io::stdout().lock();
                    stdout.write_all(&buf)?;
                    stdout.flush()?;
                }
            }
            Ok(0)
        }
        Command::Schema { document } => {
            let schema = json::schema(document.name())
                .with_context(|| format!("no schema named {}", document.name()))?;
            out_json(&schema)?;
            Ok(0)
        }
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            let mut stdout = io::stdout().lock();
            clap_complete::generate(*shell, &mut cmd, "rankscope", &mut stdout);
            if *shell == clap_complete::Shell::Fish {
                stdout.write_all(rankscope::cli::fish_positional_values().as_bytes())?;
            }
            stdout.flush()?;
            Ok(0)
        }
        Command::Man { page, list } => {
            let pages = rankscope::cli::man_pages();
            if *list {
                let mut stdout = io::stdout().lock();
                for p in pages.iter().skip(1) {
                    let name = rankscope::cli::man_page_name(p);
                    writeln!(stdout, "{}", name.replacen("rankscope-", "", 1))?;
                }
                return Ok(0);
            }
            let want = match page {
                None => "rankscope".to_string(),
                Some(p) => format!("rankscope-{p}"),
            };
            let Some(cmd) = pages
                .iter()
                .find(|c| rankscope::cli::man_page_name(c) == want)
                .cloned()
            else {
                let names: Vec<String> = pages
                    .iter()
                    .skip(1)
                    .map(|c| rankscope::cli::man_page_name(c).replacen("rankscope-", "", 1))
                    .collect();
                anyhow::bail!(
                    "no man page {want}; the subcommand pages are: {}",
                    names.join(", ")
                );
            };
            let mut stdout = io::stdout().lock();
            clap_mangen::Man::new(cmd).render(&mut stdout)?;
            stdout.flush()?;
            Ok(0)
        }
    }
}
