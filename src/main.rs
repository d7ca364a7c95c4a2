//! The `rankscope` binary: parses the command line and dispatches to one module per
//! command (`commands/`). The work is in the library.

mod commands;

use std::io;
use std::process::ExitCode;

use anyhow::Result;
use clap::Parser;
use rankscope::cli::{Cli, Command, GrammarAction, MemAction};
use rankscope::model::EventFilter;
use rankscope::render::Style;

use commands::LogContext;

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
            // Line by line: a TOML error points at its column under a copy of the line,
            // which only reads as meant on lines of its own; each is still sanitised.
            let lines: Vec<String> = msg.lines().map(rankscope::text::sanitize).collect();
            eprintln!("rankscope: {}", lines.join("\n"));
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
    let logs = || LogContext::new(&cli.global, style);
    match &cli.command {
        Command::Summary {
            run,
            ranks,
            json,
            ndjson,
            exit_code,
        } => commands::summary::run(&logs()?, run, *ranks, *json, *ndjson, *exit_code),
        Command::Events {
            run,
            json,
            ndjson,
            kinds,
            rank,
        } => {
            let filter = EventFilter {
                kinds: kinds.clone(),
                rank: rank.clone(),
            };
            commands::events::run(&logs()?, run, *json, *ndjson, &filter)
        }
        Command::Diff {
            paths,
            baseline,
            json,
            explain,
            time_tolerance,
        } => commands::diff::run(
            &logs()?,
            paths,
            baseline,
            *json,
            *explain,
            rankscope::analysis::diff::DiffOptions {
                time_tolerance: *time_tolerance,
            },
        ),
        Command::Mem {
            diff:
                Some(MemAction::Diff {
                    a,
                    b,
                    sites,
                    output,
                }),
            ..
        } => commands::mem::diff(a, b, sites, output, style),
        Command::Mem {
            diff: None,
            snapshots,
            sites,
            output,
        } => commands::mem::summaries(snapshots, sites, output, style),
        Command::Tui {
            run,
            vs,
            first_frame,
            time_tolerance,
        } => commands::tui::run(
            logs()?,
            run,
            vs,
            *first_frame,
            rankscope::analysis::diff::DiffOptions {
                time_tolerance: *time_tolerance,
            },
        ),
        Command::Grammars { action } => {
            let gs = logs()?.grammars;
            match action {
                GrammarAction::List => commands::grammars::list(&gs),
                GrammarAction::Check { file } => {
                    commands::grammars::check(gs, &cli.global.grammars, file.as_deref())
                }
            }
        }
        Command::Export {
            run,
            perfetto,
            prometheus,
        } => commands::export::run(&logs()?, run, perfetto.as_ref(), *prometheus),
        Command::Schema { document } => commands::schema::run(*document),
        Command::Completions { shell } => commands::completions::run(*shell),
        Command::Man { page, list } => commands::man::run(page.as_deref(), *list),
    }
}
