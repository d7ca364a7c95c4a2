//! The command line, defined once: help, completions and the man page come from here.
//!
//! This file holds the clap definitions and the parsers of their values; `help` the text
//! after the options (examples, environment, exit codes), which the man pages share;
//! `pages` the man pages and the fish completions clap's generators leave out.

mod help;
mod pages;

pub use help::{example_lines, examples, long_help, ENVIRONMENT, EXIT_CODES, WATCH_EXIT_CODES};
pub use pages::{fish_positional_values, man_page_name, man_pages};

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use rankscope::render::ColorChoice;

#[derive(Debug, Parser)]
#[command(
    name = "rankscope",
    version,
    about = "Forensics for multi-rank LLM inference server start-ups",
    long_about = "Reads the start-up logs of every rank of an SGLang or vLLM (or any grammar-described) \
server, lines up their phases, and names the cause when one run fails or regresses against another.",
    after_help = EXIT_CODES,
    after_long_help = long_help("rankscope")
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    #[command(flatten)]
    pub global: GlobalArgs,
}

#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// When to colour the output (NO_COLOR and TERM=dumb mean never under `auto`)
    #[arg(long, value_enum, default_value = "auto", global = true)]
    pub color: ColorChoice,
    /// Columns of text output; by default `COLUMNS`, else the terminal's width, else 80
    /// (text narrower than 40 columns is laid out at 40)
    #[arg(long, value_name = "N", global = true, value_parser = clap::value_parser!(u16).range(1..))]
    pub width: Option<u16>,
    /// The options of the commands that read logs, also accepted before the subcommand
    /// (`rankscope --grammar FILE summary LOG`); listed in those commands' help.
    #[command(flatten)]
    pub log: LeadingLogArgs,
}

/// `LogArgs` given before the subcommand: hidden here, shown by each command that reads a
/// log, and refused by those that do not (`mem`).
#[derive(Debug, Args)]
pub struct LeadingLogArgs {
    #[arg(long = "grammar", value_name = "FILE", hide = true)]
    pub grammars: Vec<PathBuf>,
    #[arg(long, value_name = "N", hide = true, value_parser = parse_attempt)]
    pub attempt: Option<Attempt>,
    #[arg(long, hide = true)]
    pub no_clock_align: bool,
}

impl LeadingLogArgs {
    /// The flags given, by name, for a command that takes none of them.
    pub fn given(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if !self.grammars.is_empty() {
            out.push("--grammar");
        }
        if self.attempt.is_some() {
            out.push("--attempt");
        }
        if self.no_clock_align {
            out.push("--no-clock-align");
        }
        out
    }

    /// These, with the command's own: grammars of both (these first), the command's
    /// attempt over these.
    pub fn merged(&self, own: &LogArgs) -> LogArgs {
        LogArgs {
            grammars: self.grammars.iter().chain(&own.grammars).cloned().collect(),
            attempt: own.attempt.or(self.attempt),
            no_clock_align: self.no_clock_align || own.no_clock_align,
        }
    }
}

/// `--attempt N` (1-based) or `--attempt all`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt {
    Number(u32),
    All,
}

fn parse_attempt(s: &str) -> Result<Attempt, String> {
    if s == "all" {
        return Ok(Attempt::All);
    }
    match s.parse::<u32>() {
        Ok(n) if n >= 1 => Ok(Attempt::Number(n)),
        _ => Err(format!(
            "{s:?} is neither a start-up number (1, 2, …) nor `all`"
        )),
    }
}

/// How the commands that read a log read it.
#[derive(Debug, Args, Default, Clone)]
pub struct LogArgs {
    /// Add a grammar file (TOML); one with the id of a loaded grammar replaces it; repeatable
    #[arg(long = "grammar", value_name = "FILE")]
    pub grammars: Vec<PathBuf>,
    /// Which start-up of a log that holds several (a restarted server appending to one
    /// file) to read, counting from 1; the last one by default. `all`: every start-up, one
    /// after the other (`events --ndjson` and `summary --ndjson` only)
    #[arg(long, value_name = "N|all", value_parser = parse_attempt)]
    pub attempt: Option<Attempt>,
    /// Show each node's stamps as printed: do not move them onto the reference node's
    /// clock (the offsets are still estimated and reported)
    #[arg(long)]
    pub no_clock_align: bool,
}

/// The memory breakdown and capacity sections of `summary` and `diff`.
#[derive(Debug, Args, Default, Clone)]
pub struct MemoryArgs {
    /// Add where each rank's memory went (weights, KV pool, CUDA graphs, NCCL and what
    /// is outside PyTorch, free: each with the lines it was read from) and what the KV
    /// pool buys (tokens, bytes per token, requests that fit at once)
    #[arg(long)]
    pub memory: bool,
    /// Request lengths in tokens for the capacity, comma-separated [default: 4096,8192];
    /// implies --memory
    #[arg(long, value_name = "N,…", value_delimiter = ',', value_parser = clap::value_parser!(i64).range(1..))]
    pub tokens: Vec<i64>,
    /// The model's `config.json`: bytes per token from its layers, KV heads (per rank,
    /// replicated when fewer than the tensor-parallel ranks), head dim and dtype, checked
    /// against the log's; implies --memory
    #[arg(long, value_name = "FILE")]
    pub model_config: Option<PathBuf>,
}

impl MemoryArgs {
    pub fn shown(&self) -> bool {
        self.memory || !self.tokens.is_empty() || self.model_config.is_some()
    }
}

/// `grammars list|check`: only the grammar files matter.
#[derive(Debug, Args, Default, Clone)]
pub struct GrammarFiles {
    /// Add a grammar file (TOML); one with the id of a loaded grammar replaces it; repeatable
    #[arg(long = "grammar", value_name = "FILE", global = true)]
    pub grammars: Vec<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// One run: phases × ranks, memory, skew, where each rank stopped
    #[command(after_help = EXIT_CODES, after_long_help = long_help("summary"))]
    Summary {
        /// A log file, a run directory, or `-` for stdin; several paths (one per node, or
        /// a directory of node directories) are one multi-node run
        #[arg(required = true, value_name = "RUN")]
        run: Vec<PathBuf>,
        /// Per-rank detail: last phase, outcome and key figures of every rank
        #[arg(long)]
        ranks: bool,
        /// The whole summary as JSON
        #[arg(long, conflicts_with = "ndjson")]
        json: bool,
        /// One JSON object per line, one per rank and phase (start, end, duration,
        /// figures, outcome), each naming its run: for loading many runs into one table
        #[arg(long)]
        ndjson: bool,
        /// Exit 1 when the run failed, 3 when it is incomplete, 0 when it is ready (without
        /// it `summary` exits 0 whatever the run's state), with any output format
        #[arg(long)]
        exit_code: bool,
        #[command(flatten)]
        memory: MemoryArgs,
        #[command(flatten)]
        log: LogArgs,
    },
    /// Every start-up event, typed, with memory in bytes and time in seconds
    #[command(after_long_help = long_help("events"))]
    Events {
        /// The run: one or more paths, as for `summary`
        #[arg(required = true, value_name = "RUN")]
        run: Vec<PathBuf>,
        /// One JSON document
        #[arg(long, conflicts_with = "ndjson")]
        json: bool,
        /// One JSON object per line, `type`/`data` envelopes, written as they are found
        #[arg(long)]
        ndjson: bool,
        /// Only events of this kind (repeatable, or several joined by commas: `oom,error`)
        #[arg(long = "kind", value_delimiter = ',')]
        kinds: Vec<String>,
        /// Only events of this rank, e.g. `TP3` or `"PP1 TP2"`
        #[arg(long)]
        rank: Option<String>,
        #[command(flatten)]
        log: LogArgs,
    },
    /// Name the cause of a failing or regressed start-up against a baseline
    #[command(after_help = EXIT_CODES, after_long_help = long_help("diff"))]
    Diff {
        /// BASELINE CANDIDATE; or, with `--baseline`, the candidate's paths (a multi-node
        /// run given one path per node)
        #[arg(required = true, value_name = "PATH")]
        paths: Vec<PathBuf>,
        /// A path of the baseline run (repeatable): the positional paths are then all the
        /// candidate's
        #[arg(long = "baseline", value_name = "PATH")]
        baseline: Vec<PathBuf>,
        /// The comparison as JSON (`rankscope schema diff`); the exit code is the same
        #[arg(long)]
        json: bool,
        /// Show the log line behind every compared figure
        #[arg(long)]
        explain: bool,
        /// How much slower a phase (or the whole start-up) must be, beyond the stamps'
        /// resolution, to count: a percentage of the baseline's time (`20%`, or `20`)
        #[arg(long, value_name = "PCT", default_value = "20%", value_parser = parse_percent)]
        time_tolerance: f64,
        #[command(flatten)]
        memory: MemoryArgs,
        #[command(flatten)]
        log: LogArgs,
    },
    /// PyTorch memory snapshots: totals, peak, OOM and the top allocation sites; or
    /// `mem diff A B`, the per-site comparison of two snapshots
    #[command(args_conflicts_with_subcommands = true, after_long_help = long_help("mem"))]
    Mem {
        #[command(subcommand)]
        diff: Option<MemAction>,
        /// Snapshot files (`torch.cuda.memory._dump_snapshot()` pickles), or directories
        /// whose snapshots (`*.pickle`, `*.pkl`) are read in rank order
        snapshots: Vec<PathBuf>,
        #[command(flatten)]
        sites: SiteArgs,
        #[command(flatten)]
        output: MemOutput,
    },
    /// Interactive timeline, memory, diff and event views of a run
    #[command(after_long_help = long_help("tui"))]
    Tui {
        /// The run: one or more paths, as for `summary`
        #[arg(required = true, value_name = "RUN")]
        run: Vec<PathBuf>,
        /// A baseline run to compare against (adds the Diff view); repeatable for a
        /// baseline given one path per node
        #[arg(long)]
        vs: Vec<PathBuf>,
        /// As for `diff`: how much slower a phase must be, beyond the stamps' resolution,
        /// to count (a percentage of the baseline's time)
        #[arg(long, value_name = "PCT", default_value = "20%", value_parser = parse_percent)]
        time_tolerance: f64,
        /// Load as the TUI does, print its first screen at this size (`120x40`) as text
        /// and exit: for measuring the time to first screen without a terminal
        #[arg(long, hide = true, value_name = "WxH", value_parser = rankscope::tui::parse_size)]
        first_frame: Option<(u16, u16)>,
        #[command(flatten)]
        log: LogArgs,
    },
    /// Follow a run as it is written: phases, memory and early warnings against a
    /// baseline, until every rank is ready or the run failed
    #[command(after_help = WATCH_EXIT_CODES, after_long_help = long_help("watch"))]
    Watch {
        /// What `summary` reads: a run directory (rank files that appear later are
        /// followed too), several files or node directories, or `-` for a stream on stdin
        /// (`kubectl logs -f`)
        #[arg(required = true, value_name = "RUN")]
        run: Vec<PathBuf>,
        /// A finished baseline run: its configuration differences are listed at the start,
        /// and its figures give the early warnings (memory left after the KV pool against
        /// what its later phases took; a phase past its time); repeatable, one per node
        #[arg(long, value_name = "BASELINE")]
        vs: Vec<PathBuf>,
        /// One line per change (a phase reached, a memory figure, an outcome, a warning),
        /// no colour, even on a terminal: for CI logs (also when stdout is not a terminal)
        #[arg(long)]
        plain: bool,
        /// Stop after this long (`90s`, `10m`, `1h`, or seconds) with the run `incomplete`
        /// (exit 3) unless it is ready or failed before
        #[arg(long, value_name = "DUR", value_parser = parse_duration)]
        timeout: Option<f64>,
        /// At the end, print `summary --json`'s document instead of its text (the
        /// changes go to stderr)
        #[arg(long)]
        json: bool,
        /// As for `diff`: how much longer than the baseline's a phase must take, beyond
        /// the stamps' resolution, to be warned of (a percentage of the baseline's time)
        #[arg(long, value_name = "PCT", default_value = "20%", value_parser = parse_percent)]
        time_tolerance: f64,
        /// Look at the files every 100 ms instead of waiting for file events (network and
        /// FUSE filesystems that send none; also RANKSCOPE_WATCH_POLL=1)
        #[arg(long)]
        poll: bool,
        /// Replay a finished run at the pace of its stamps, SPEED times faster (1 when not
        /// given): its lines are read as they come, through the same path as a live run,
        /// under their files' own names (a demonstration, a test)
        #[arg(long, value_name = "SPEED", num_args = 0..=1, default_missing_value = "1",
              value_parser = parse_speed)]
        replay: Option<f64>,
        /// At the end, print to stderr how many times the run was loaded and the CPU each
        /// load took (for docs/watch.md's figures)
        #[arg(long, hide = true)]
        stats: bool,
        #[command(flatten)]
        log: LogArgs,
    },
    /// One self-contained HTML page of a run (or of a run against a baseline): the verdict
    /// with its evidence, the per-rank timeline, memory per phase and over time
    #[command(after_long_help = long_help("report"))]
    Report {
        /// The run: one or more paths, as for `summary`
        #[arg(required = true, value_name = "RUN")]
        run: Vec<PathBuf>,
        /// A baseline run to compare against (the page then holds `diff`'s verdict);
        /// repeatable for a baseline given one path per node
        #[arg(long, value_name = "BASELINE")]
        vs: Vec<PathBuf>,
        /// Where to write the page (`-`: stdout); default `rankscope-report.html`
        #[arg(short, long, value_name = "FILE.html")]
        output: Option<PathBuf>,
        /// As for `diff`: how much slower a phase must be, beyond the stamps' resolution,
        /// to count (a percentage of the baseline's time)
        #[arg(long, value_name = "PCT", default_value = "20%", value_parser = parse_percent)]
        time_tolerance: f64,
        #[command(flatten)]
        log: LogArgs,
    },
    /// Grammars: list the loaded ones, show one, or check every sample of a file
    #[command(after_long_help = long_help("grammars"))]
    Grammars {
        #[command(subcommand)]
        action: GrammarAction,
        #[command(flatten)]
        files: GrammarFiles,
    },
    /// Write a run for other tools: a Perfetto/Chrome trace, or Prometheus metrics
    #[command(
        group(clap::ArgGroup::new("format").required(true)),
        after_long_help = long_help("export")
    )]
    Export {
        /// The run: one or more paths, as for `summary`
        #[arg(required = true, value_name = "RUN")]
        run: Vec<PathBuf>,
        /// Chrome trace-event JSON for ui.perfetto.dev or chrome://tracing (`-`: stdout)
        #[arg(long, value_name = "FILE", group = "format")]
        perfetto: Option<PathBuf>,
        /// Prometheus text exposition format, to stdout
        #[arg(long, group = "format")]
        prometheus: bool,
        #[command(flatten)]
        log: LogArgs,
    },
    /// Print the JSON Schema of a JSON document rankscope writes
    #[command(after_long_help = long_help("schema"))]
    Schema {
        /// Which document
        #[arg(value_enum)]
        document: SchemaDocument,
    },
    /// Shell completions, generated from this command line
    #[command(after_long_help = long_help("completions"))]
    Completions {
        /// The shell to complete for
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// The man page (roff), generated from this command line: rankscope(1), or the page of
    /// one subcommand, e.g. `diff` for rankscope-diff(1), `mem-diff` for rankscope-mem-diff(1)
    #[command(after_long_help = long_help("man"))]
    Man {
        /// The page's subcommand path, words joined by `-`
        #[arg(value_name = "SUBCOMMAND")]
        page: Option<String>,
        /// Print the subcommand page names, one a line, instead of a page
        #[arg(long, conflicts_with = "page")]
        list: bool,
    },
}

impl Command {
    /// Whether the output shows the run's identity (its files' content hash, computed as
    /// they are read): the JSON and NDJSON documents, the report page and `watch`. The
    /// others load without hashing (`LoadOptions::digest`); an identity asked of such a
    /// load reads the files again.
    pub fn shows_identity(&self) -> bool {
        match self {
            Command::Summary { json, ndjson, .. } | Command::Events { json, ndjson, .. } => {
                *json || *ndjson
            }
            Command::Diff { json, .. } => *json,
            Command::Report { .. } | Command::Watch { .. } => true,
            Command::Tui { .. }
            | Command::Export { .. }
            | Command::Mem { .. }
            | Command::Grammars { .. }
            | Command::Schema { .. }
            | Command::Completions { .. }
            | Command::Man { .. } => false,
        }
    }
}

/// The JSON documents with a published schema (docs/schema/).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SchemaDocument {
    /// `summary --json`
    Summary,
    /// `events --json`
    Events,
    /// `diff --json`
    Diff,
    /// One line of `events --ndjson`
    Event,
    /// One line of `summary --ndjson`
    Phase,
    /// `mem --json`
    Mem,
    /// `mem diff --json`
    MemDiff,
}

impl SchemaDocument {
    pub fn name(self) -> &'static str {
        match self {
            SchemaDocument::Summary => "summary",
            SchemaDocument::Events => "events",
            SchemaDocument::Diff => "diff",
            SchemaDocument::Mem => "mem",
            SchemaDocument::MemDiff => "mem-diff",
            SchemaDocument::Event => "event",
            SchemaDocument::Phase => "phase",
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum GrammarAction {
    /// The grammars rankscope reads with, and how many events and samples each has
    #[command(after_long_help = long_help("grammars-list"))]
    List,
    /// Verify every sample of the built-in grammars, or of FILE
    #[command(after_long_help = long_help("grammars-check"))]
    Check {
        /// A grammar file (TOML); the built-in grammars when absent
        file: Option<PathBuf>,
    },
    /// Print a loaded grammar's TOML: the wordings, frames and suspects it reads with
    #[command(after_long_help = long_help("grammars-show"))]
    Show {
        /// The grammar's id, as `grammars list` prints it (`sglang`, `tgi`, your own)
        id: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum MemAction {
    /// Per allocation site: bytes only in A, only in B, changed; segments new and gone
    #[command(after_long_help = long_help("mem-diff"))]
    Diff {
        /// The baseline snapshot (pickle)
        a: PathBuf,
        /// The snapshot compared with it (pickle)
        b: PathBuf,
        #[command(flatten)]
        sites: SiteArgs,
        #[command(flatten)]
        output: MemOutput,
    },
}

/// Output options of `mem` and `mem diff`.
#[derive(Debug, Args)]
pub struct MemOutput {
    /// How many allocation sites to list
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// The whole summary (or diff) as JSON
    #[arg(long)]
    pub json: bool,
}

/// What an allocation site is: the first frame of a stack that is Python and outside
/// PyTorch, the standard library and installed packages, unless told otherwise.
#[derive(Debug, Args)]
pub struct SiteArgs {
    /// Also skip frames whose file path contains PATTERN (repeatable), e.g. a wrapper
    /// library of your own
    #[arg(long = "skip-frames", value_name = "PATTERN")]
    pub skip_frames: Vec<String>,
    /// One site per source line rather than per function
    #[arg(long)]
    pub by_line: bool,
}

impl SiteArgs {
    pub fn rule(&self) -> rankscope::snapshot::inspect::SiteRule {
        let mut rule = rankscope::snapshot::inspect::SiteRule::default();
        rule.skip.extend(self.skip_frames.iter().cloned());
        if self.by_line {
            rule.granularity = rankscope::snapshot::inspect::SiteGranularity::Line;
        }
        rule
    }
}

/// `20%` or `20` as the fraction 0.2; a percentage from 0 to 1,000.
pub fn parse_percent(s: &str) -> Result<f64, String> {
    let n = s.trim().trim_end_matches('%').trim();
    match n.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=1000.0).contains(&v) => Ok(v / 100.0),
        _ => Err(format!(
            "expected a percentage from 0 to 1000 like 20% or 20, got {s:?}"
        )),
    }
}

/// `--replay`'s speed: a positive number (`20`, `0.5`), optionally with an `x` (`20x`).
pub fn parse_speed(s: &str) -> Result<f64, String> {
    match s.trim().trim_end_matches(['x', 'X']).parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!(
            "expected a positive speed like 20 or 0.5, got {s:?}"
        )),
    }
}

/// `--timeout`'s duration: `500ms`, `90s`, `10m`, `1h`, or a number of seconds.
pub fn parse_duration(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (num, unit) = match t.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => t.split_at(i),
        None => (t, "s"),
    };
    let scale = match unit.trim() {
        "ms" => 0.001,
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => {
            return Err(format!(
                "expected a duration like 90s, 10m or 1h, got {s:?}"
            ))
        }
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v * scale),
        _ => Err(format!(
            "expected a duration like 90s, 10m or 1h, got {s:?}"
        )),
    }
}

#[cfg(test)]
mod tests {
    /// Every argument a user can type, at every depth, says what it is in `--help` (clap's
    /// own `--help`/`--version` aside).
    #[test]
    fn every_argument_has_help_text() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for a in cmd.get_arguments() {
                let id = a.get_id().as_str();
                if id == "help" || id == "version" || a.is_hide_set() {
                    continue;
                }
                if a.get_help().is_none() && a.get_long_help().is_none() {
                    missing.push(format!("{path} {id}"));
                }
            }
            for sub in cmd.get_subcommands() {
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut cmd = <super::Cli as clap::CommandFactory>::command();
        cmd.build();
        let mut missing = Vec::new();
        walk(&cmd, "rankscope", &mut missing);
        assert_eq!(missing, Vec::<String>::new());
    }
}
