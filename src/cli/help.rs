//! The help text after the options, shared by `--help` and the man pages: example
//! command lines per page, the environment variables, and the exit codes.

pub const EXIT_CODES: &str = "\
Exit codes:
  0  success; for `diff`: no meaningful difference (or only improvements); for
     `summary --exit-code`: the run reached ready
  1  `diff`: the candidate failed or regressed against the baseline (less capacity,
     more memory used, or a slower start-up beyond --time-tolerance);
     `summary --exit-code`: the run failed
  2  usage or input error (missing path, unreadable or binary file, a file with no
     start-up event, bad grammar)
  3  `diff`: the candidate's log ends before ready and nothing says why (incomplete);
     `summary --exit-code`: the same of the run";

pub const WATCH_EXIT_CODES: &str = "\
Exit codes (as `summary --exit-code`):
  0  every rank reached ready
  1  the run failed
  2  usage or input error
  3  incomplete: --timeout passed, or the input ended, before ready or a failure";

/// The environment variables rankscope reads, each with what it changes.
pub const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "NO_COLOR",
        "set and not empty: no colour under --color auto (no-color.org)",
    ),
    ("TERM", "`dumb`: no colour under --color auto"),
    (
        "COLUMNS",
        "the width of text output when --width is not given, also when stdout is not a \
         terminal (a positive whole number; anything else is ignored)",
    ),
    (
        "RANKSCOPE_GRAMMAR_DIR",
        "the user grammar directory, read after the built-in grammars; by default \
         $XDG_CONFIG_HOME/rankscope/grammars, else $HOME/.config/rankscope/grammars",
    ),
    (
        "RANKSCOPE_WATCH_POLL",
        "`1`: `watch` looks at the files every 100 ms instead of waiting for file events \
         (as --poll)",
    ),
    (
        "RAYON_NUM_THREADS",
        "how many threads read a run's files (default: one per CPU)",
    ),
];

/// Example command lines of a page (`rankscope`, `summary`, `mem-diff`, …), each with what
/// it does; the paths are the repository's samples.
pub fn examples(page: &str) -> &'static [Example] {
    match page {
        "rankscope" => RANKSCOPE_EXAMPLES,
        "summary" => SUMMARY_EXAMPLES,
        "events" => EVENTS_EXAMPLES,
        "diff" => DIFF_EXAMPLES,
        "report" => REPORT_EXAMPLES,
        "mem" => MEM_EXAMPLES,
        "mem-diff" => MEM_DIFF_EXAMPLES,
        "tui" => TUI_EXAMPLES,
        "export" => EXPORT_EXAMPLES,
        "watch" => WATCH_EXAMPLES,
        "grammars" | "grammars-list" | "grammars-check" | "grammars-show" => GRAMMARS_EXAMPLES,
        "schema" => SCHEMA_EXAMPLES,
        "completions" => COMPLETIONS_EXAMPLES,
        "man" => MAN_EXAMPLES,
        _ => &[],
    }
}

/// An example: the command line and what it does.
pub type Example = (&'static str, &'static str);

const RANKSCOPE_EXAMPLES: &[Example] = &[
    (
        "rankscope summary samples/tp8-custom-ar",
        "the verdict on one run: which rank failed first, how, in which phase",
    ),
    (
        "rankscope diff samples/tp8-baseline samples/tp8-custom-ar",
        "why a run failed where another started: the first figure that moved",
    ),
    (
        "kubectl logs POD | rankscope summary -",
        "a log read from stdin",
    ),
    (
        "rankscope summary --exit-code RUN || echo failed",
        "gate a script on a run (1 failed, 3 incomplete)",
    ),
];

const SUMMARY_EXAMPLES: &[Example] = &[
    (
        "rankscope summary samples/tp8-custom-ar",
        "phases × ranks, the root failure and its evidence",
    ),
    (
        "rankscope summary --ranks samples/tp2-nccl-fail",
        "each rank's outcome and figures, every failure quoted",
    ),
    (
        "rankscope summary samples/node2-skew",
        "a directory of node directories is one multi-node run",
    ),
    (
        "rankscope summary --attempt 1 server.log",
        "the first start-up of a log a restarted server appended to",
    ),
    (
        "rankscope summary --exit-code --json RUN > summary.json",
        "the JSON document, and an exit code a script can test",
    ),
];

const EVENTS_EXAMPLES: &[Example] = &[
    (
        "rankscope events --kind oom samples/tp8-custom-ar",
        "only the out-of-memory events",
    ),
    (
        "rankscope events --rank TP3 samples/tp8-custom-ar",
        "one rank's start-up, event by event",
    ),
    (
        "rankscope events --ndjson RUN > events.ndjson",
        "one JSON object a line, for a database",
    ),
];

const DIFF_EXAMPLES: &[Example] = &[
    (
        "rankscope diff samples/tp8-baseline samples/tp8-custom-ar",
        "the cause of the candidate's failure against the baseline",
    ),
    (
        "rankscope diff --explain samples/tp2-frag-grouped samples/tp2-frag-interleaved",
        "with the log line behind every compared figure",
    ),
    (
        "rankscope diff --baseline good/node0 --baseline good/node1 bad/node0 bad/node1",
        "runs given one path per node",
    ),
    (
        "rankscope diff --time-tolerance 50% BASELINE CANDIDATE",
        "count a phase as slower only beyond half its baseline time",
    ),
];

const REPORT_EXAMPLES: &[Example] = &[
    (
        "rankscope report samples/tp8-custom-ar --vs samples/tp8-baseline -o tp8.html",
        "one page to share: the verdict, its evidence, the timeline and memory, drawn",
    ),
    (
        "rankscope report samples/tp2-straggler -o - > straggler.html",
        "a run on its own, the page written to stdout",
    ),
];

const MEM_EXAMPLES: &[Example] = &[
    (
        "rankscope mem samples/tp8-baseline/snapshot_rank0.pickle",
        "totals, peak and the top allocation sites of a snapshot",
    ),
    (
        "rankscope mem --by-line --top 20 samples/tp8-baseline/snapshot_rank0.pickle",
        "sites per source line, twenty of them",
    ),
    (
        "rankscope mem samples/tp8-custom-ar",
        "every snapshot of a run directory, in rank order",
    ),
    (
        "rankscope mem diff samples/tp2-frag-grouped/snapshot_rank0.pickle samples/tp2-frag-interleaved/snapshot_rank0.pickle",
        "what changed between two snapshots, site by site",
    ),
];

const MEM_DIFF_EXAMPLES: &[Example] = &[(
    "rankscope mem diff samples/tp2-frag-grouped/snapshot_rank0.pickle samples/tp2-frag-interleaved/snapshot_rank0.pickle",
    "bytes only in one snapshot, changed sites, segments new and gone",
)];

const TUI_EXAMPLES: &[Example] = &[
    (
        "rankscope tui samples/tp2-nccl-fail",
        "the timeline, opened on the root failure",
    ),
    (
        "rankscope tui samples/tp8-custom-ar --vs samples/tp8-baseline",
        "with the Diff view against a baseline",
    ),
];

const EXPORT_EXAMPLES: &[Example] = &[
    (
        "rankscope export --perfetto trace.json samples/tp8-custom-ar",
        "a trace for ui.perfetto.dev, one track per rank",
    ),
    (
        "rankscope export --prometheus RUN > rankscope.prom",
        "metrics for a textfile collector",
    ),
];

const WATCH_EXAMPLES: &[Example] = &[
    (
        "rankscope watch --vs samples/tp8-baseline /var/log/sglang/",
        "follow a starting server, warned early from the baseline's figures",
    ),
    (
        "kubectl logs -f POD | rankscope watch --plain -",
        "a stream on stdin, one line per change",
    ),
    (
        "rankscope watch --replay 20 --vs samples/tp8-baseline samples/tp8-custom-ar",
        "a recorded run replayed 20 times faster: the OOM foreseen from the KV pool",
    ),
    (
        "rankscope watch --timeout 10m --plain RUN; echo $?",
        "in CI: 0 ready, 1 failed, 3 not done in ten minutes",
    ),
];

const GRAMMARS_EXAMPLES: &[Example] = &[
    ("rankscope grammars list", "the grammars a log is read with"),
    (
        "rankscope grammars show tgi",
        "the wordings a built-in grammar reads, its frames and suspects",
    ),
    (
        "rankscope grammars check docs/examples/lmserve.toml",
        "check every sample line of a grammar file",
    ),
];

const SCHEMA_EXAMPLES: &[Example] = &[(
    "rankscope schema summary",
    "the JSON Schema of `summary --json`",
)];

const COMPLETIONS_EXAMPLES: &[Example] = &[(
    "rankscope completions bash > ~/.local/share/bash-completion/completions/rankscope",
    "bash completions, installed for one user",
)];

const MAN_EXAMPLES: &[Example] = &[
    ("rankscope man diff | man -l -", "read rankscope-diff(1)"),
    ("rankscope man --list", "the subcommand pages"),
];

/// An example command line as the lines to print: one past 72 columns is broken at its
/// spaces with the shell's ` \` continuation, so that help text wrapped at a terminal's
/// width or a man page (no-fill) still copies and pastes as one command.
pub fn example_lines(cmd: &str) -> Vec<String> {
    const MAX: usize = 72;
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in cmd.split(' ') {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() + 2 > MAX {
            lines.push(format!("{line} \\"));
            line = format!("    {word}");
        } else {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    lines.push(line);
    lines
}

/// The examples of a page as help text.
fn examples_text(page: &str) -> String {
    let mut out = String::from("Examples:\n");
    for (cmd, what) in examples(page) {
        out.push_str(&format!("  # {what}\n"));
        for line in example_lines(cmd) {
            out.push_str(&format!("  {line}\n"));
        }
    }
    out
}

/// The environment variables as help text.
fn environment_text() -> String {
    let mut out = String::from("Environment:\n");
    for (name, what) in ENVIRONMENT {
        out.push_str(&format!("  {name}\n      {what}\n"));
    }
    out
}

/// `--help`'s text after the options (`-h` keeps only the exit codes): examples, the
/// environment, and the exit codes where the command has more than 0 and 2.
pub fn long_help(page: &str) -> String {
    let mut parts = Vec::new();
    if !examples(page).is_empty() {
        parts.push(examples_text(page));
    }
    parts.push(environment_text());
    if matches!(page, "rankscope" | "summary" | "diff") {
        parts.push(EXIT_CODES.to_string());
    }
    parts.join("\n")
}

#[cfg(test)]
mod tests {
    /// A long example is broken at spaces into lines of at most 72 columns, each but the
    /// last ending in ` \`; joined back it is the same command.
    #[test]
    fn long_examples_break_with_continuations() {
        let cmd = "rankscope mem diff samples/tp2-frag-grouped/snapshot_rank0.pickle samples/tp2-frag-interleaved/snapshot_rank0.pickle";
        let lines = super::example_lines(cmd);
        assert_eq!(
            lines,
            [
                "rankscope mem diff samples/tp2-frag-grouped/snapshot_rank0.pickle \\",
                "    samples/tp2-frag-interleaved/snapshot_rank0.pickle",
            ]
        );
        let joined = lines
            .iter()
            .map(|l| l.trim_end_matches(" \\").trim_start())
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(joined, cmd);
        assert_eq!(
            super::example_lines("rankscope man --list"),
            ["rankscope man --list"]
        );
    }
}
