//! The `rankscope` binary: parses the command line and dispatches to one module per
//! command (`commands/`). The work is in the library.

mod cli;
mod commands;

use std::io;
use std::process::ExitCode;

use std::path::PathBuf;

use crate::cli::{
    Cli, Command, GrammarAction, GrammarFiles, LeadingLogArgs, LogArgs, MemAction, MemOutput,
    SiteArgs,
};
use anyhow::Result;
use clap::Parser;
use rankscope::model::EventFilter;
use rankscope::render::Style;

use commands::LogContext;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_exit(&e),
    };
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
            // Line by line: a TOML error points at its column under a copy of the line,
            // which only reads as meant on lines of its own; each is still sanitised.
            let lines: Vec<String> = msg.lines().map(rankscope::base::text::sanitize).collect();
            eprintln!("rankscope: {}", lines.join("\n"));
            ExitCode::from(2)
        }
    }
}

/// What clap would print and exit with, at the binary's edge: a usage error echoes the
/// argument it refuses, which may hold an escape sequence, so every line is cleaned; help
/// and version text that cannot be written (`--help > /dev/full`) is an error, not exit 0.
fn clap_exit(e: &clap::Error) -> ExitCode {
    use std::io::{IsTerminal, Write};
    if e.use_stderr() {
        let text = e.render().to_string();
        let mut err = io::stderr().lock();
        for line in text.lines() {
            let _ = writeln!(err, "{}", rankscope::base::text::sanitize(line));
        }
        return ExitCode::from(2);
    }
    // Help and version: the project's own text, coloured on a terminal as clap does,
    // under the rule of every other output (NO_COLOR, TERM=dumb).
    let mut stdout = io::stdout().lock();
    let rendered = e.render();
    let text = if rankscope::render::auto_color_for(stdout.is_terminal()) {
        rendered.ansi().to_string()
    } else {
        rendered.to_string()
    };
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(w) if w.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(w) => {
            eprintln!("rankscope: cannot write to standard output: {w}");
            ExitCode::from(2)
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain()
        .filter_map(|c| c.downcast_ref::<io::Error>())
        .any(|io| io.kind() == io::ErrorKind::BrokenPipe)
}

/// Parses nothing more and does no work: picks the command's module. Only commands that
/// read a log load grammars (`LogContext::new`).
fn run(cli: Cli) -> Result<u8> {
    commands::progress::set_machine_output(&cli.command);
    let style = Style::decide(cli.global.color, cli.global.width.map(usize::from));
    let leading = &cli.global.log;
    let identity = cli.command.shows_identity();
    let logs = |own: &LogArgs| {
        let cx = LogContext::new(&leading.merged(own), style)?;
        Ok::<_, anyhow::Error>(if identity { cx } else { cx.without_identity() })
    };
    match &cli.command {
        Command::Summary {
            run,
            ranks,
            json,
            ndjson,
            exit_code,
            memory,
            log,
        } => commands::summary::run(&logs(log)?, run, *ranks, *json, *ndjson, *exit_code, memory),
        Command::Events {
            run,
            json,
            ndjson,
            kinds,
            rank,
            log,
        } => commands::events::run(&logs(log)?, run, *json, *ndjson, &event_filter(kinds, rank)),
        Command::Diff {
            paths,
            baseline,
            json,
            explain,
            time_tolerance,
            memory,
            log,
        } => commands::diff::run(
            &logs(log)?,
            paths,
            baseline,
            *json,
            *explain,
            memory,
            diff_options(*time_tolerance),
        ),
        Command::Mem {
            diff,
            snapshots,
            sites,
            output,
        } => mem(diff.as_ref(), snapshots, sites, output, leading, style),
        Command::Tui {
            run,
            vs,
            first_frame,
            time_tolerance,
            log,
        } => commands::tui::run(
            logs(log)?,
            run,
            vs,
            *first_frame,
            diff_options(*time_tolerance),
        ),
        Command::Watch {
            run,
            vs,
            plain,
            timeout,
            json,
            time_tolerance,
            poll,
            replay,
            stats,
            log,
        } => commands::watch::run(
            &logs(log)?,
            commands::watch::WatchArgs {
                run,
                vs,
                plain: *plain,
                timeout: *timeout,
                json: *json,
                time_tolerance: *time_tolerance,
                poll: *poll,
                replay: *replay,
                stats: *stats,
            },
        ),
        Command::Report {
            run,
            vs,
            output,
            time_tolerance,
            log,
        } => commands::report::run(
            &logs(log)?,
            run,
            vs,
            output.as_deref(),
            diff_options(*time_tolerance),
        ),
        Command::Grammars { action, files } => grammars(action, files, leading, style),
        Command::Export {
            run,
            perfetto,
            prometheus,
            log,
        } => commands::export::run(&logs(log)?, run, perfetto.as_ref(), *prometheus),
        Command::Schema { document } => {
            without_log(leading, "schema", || commands::schema::run(*document))
        }
        Command::Completions { shell } => without_log(leading, "completions", || {
            commands::completions::run(*shell)
        }),
        Command::Man { page, list } => without_log(leading, "man", || {
            commands::man::run(page.as_deref(), *list)
        }),
    }
}

/// The options of log-reading commands, given before a command that reads no log, are
/// refused (`allowed`: those the command reads itself).
fn refuse_leading(leading: &LeadingLogArgs, command: &str, allowed: &[&str]) -> Result<()> {
    let given: Vec<&str> = leading
        .given()
        .into_iter()
        .filter(|g| !allowed.contains(g))
        .collect();
    match given.first() {
        Some(flag) => anyhow::bail!(
            "{flag} applies to the commands that read logs (summary, events, diff, tui, watch, export, report), not to `{command}`"
        ),
        None => Ok(()),
    }
}

/// A command that reads no log, run once the leading log options are refused.
fn without_log(
    leading: &LeadingLogArgs,
    command: &str,
    run: impl FnOnce() -> Result<u8>,
) -> Result<u8> {
    refuse_leading(leading, command, &[])?;
    run()
}

/// `events --kind … --rank …`.
fn event_filter(kinds: &[String], rank: &Option<String>) -> EventFilter {
    EventFilter {
        kinds: kinds.to_vec(),
        rank: rank.clone(),
    }
}

/// How `diff`, `tui --vs` and `report --vs` compare: `--time-tolerance`.
fn diff_options(time_tolerance: f64) -> rankscope::analysis::diff::DiffOptions {
    rankscope::analysis::diff::DiffOptions { time_tolerance }
}

/// `mem` and `mem diff`: the snapshots' summaries, or two snapshots compared.
fn mem(
    action: Option<&MemAction>,
    snapshots: &[PathBuf],
    sites: &SiteArgs,
    output: &MemOutput,
    leading: &LeadingLogArgs,
    style: Style,
) -> Result<u8> {
    match action {
        Some(MemAction::Diff {
            a,
            b,
            sites,
            output,
        }) => {
            refuse_leading(leading, "mem diff", &[])?;
            commands::mem::diff(a, b, sites, output, style)
        }
        None => {
            refuse_leading(leading, "mem", &[])?;
            commands::mem::summaries(snapshots, sites, output, style)
        }
    }
}

/// `grammars list` and `grammars check`, with the grammar files given before the command
/// and after it.
fn grammars(
    action: &GrammarAction,
    files: &GrammarFiles,
    leading: &LeadingLogArgs,
    style: Style,
) -> Result<u8> {
    refuse_leading(leading, "grammars", &["--grammar"])?;
    let own = LogArgs {
        grammars: files.grammars.clone(),
        ..LogArgs::default()
    };
    let all = leading.merged(&own);
    let gs = LogContext::new(&all, style)?.grammars;
    match action {
        GrammarAction::List => commands::grammars::list(&gs),
        GrammarAction::Show { id } => commands::grammars::show(&gs, id),
        GrammarAction::Check { file } => {
            commands::grammars::check(gs, &all.grammars, file.as_deref())
        }
    }
}
