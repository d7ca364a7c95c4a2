//! Every `$ rankscope …` line in a ```console block of the docs runs here, against the
//! samples, so that the docs cannot drift from the binary.
//!
//! Conventions in the docs: the lines after a command, up to the next `$` line or the end
//! of the block, are its expected output. A `...` line stands for any number of lines,
//! and a line ending in `...` matches any line that starts with the text before it. No
//! output shown means the output is not checked. A trailing `# exit N` gives the expected
//! exit code (0 otherwise). The only shell syntax understood is quoting and a final
//! `| head -N`. An output file named after `--perfetto` is written to a temporary
//! directory instead.
//!
//! `RANKSCOPE_UPDATE_DOCS=1 cargo test --test docs_examples` rewrites the expected output
//! of every example that differs from the binary's, keeping each example's elisions (a
//! leading block, `...`, a trailing block keep their line counts), so a deliberate change
//! of wording is one command and a reviewed diff of the docs.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use assert_cmd::Command;

const DOCS: [&str; 7] = [
    "README.md",
    "docs/capacity.md",
    "docs/getting-started.md",
    "docs/grammars.md",
    "docs/json.md",
    "docs/exports.md",
    "docs/inputs.md",
];

#[derive(Debug)]
struct Example {
    doc: &'static str,
    line: usize,
    command: String,
    expected: Vec<String>,
}

fn examples(doc: &'static str) -> Vec<Example> {
    let text = std::fs::read_to_string(doc).unwrap_or_else(|e| panic!("{doc}: {e}"));
    let mut out: Vec<Example> = Vec::new();
    let mut in_console = false;
    let mut current: Option<Example> = None;
    for (i, line) in text.lines().enumerate() {
        if let Some(fence) = line.strip_prefix("```") {
            if in_console {
                out.extend(current.take());
                in_console = false;
            } else {
                in_console = fence.trim() == "console";
            }
            continue;
        }
        if !in_console {
            continue;
        }
        if let Some(cmd) = line.strip_prefix("$ ") {
            out.extend(current.take());
            current = Some(Example {
                doc,
                line: i + 1,
                command: cmd.to_string(),
                expected: Vec::new(),
            });
        } else if let Some(ex) = current.as_mut() {
            ex.expected.push(line.to_string());
        }
    }
    out
}

/// Splits like a POSIX shell for the simple cases the docs use: words, '…' and "…".
fn words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    for c in s.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                any = true;
            }
            (None, c) if c.is_whitespace() => {
                if any || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                any = false;
            }
            (None, c) => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn matches(expected: &[String], actual: &[&str]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((e, rest)) if e == "..." => {
            (0..=actual.len()).any(|skip| matches(rest, &actual[skip..]))
        }
        Some((e, rest)) => match actual.split_first() {
            None => false,
            Some((a, arest)) => {
                let ok = match e.strip_suffix("...") {
                    Some(prefix) => a.starts_with(prefix),
                    None => a.trim_end() == e.trim_end(),
                };
                ok && matches(rest, arest)
            }
        },
    }
}

/// Why an example failed; `actual` is set when only the output differs.
struct Mismatch {
    message: String,
    actual: Option<Vec<String>>,
}

impl From<String> for Mismatch {
    fn from(message: String) -> Self {
        Mismatch {
            message,
            actual: None,
        }
    }
}

fn run(ex: &Example, tmp: &Path) -> Result<(), Mismatch> {
    let mut cmd = ex.command.clone();
    let mut code = 0;
    if let Some((c, comment)) = cmd.clone().split_once("  # exit ") {
        code = comment
            .trim()
            .parse()
            .map_err(|_| "bad # exit".to_string())?;
        cmd = c.to_string();
    }
    let mut head: Option<usize> = None;
    if let Some((c, h)) = cmd.clone().split_once(" | head -") {
        head = Some(
            h.trim_start_matches("n ")
                .trim()
                .parse()
                .map_err(|_| "bad head".to_string())?,
        );
        cmd = c.to_string();
    }
    if cmd.contains(['|', '>', '<', ';', '&', '`', '$']) {
        return Err(String::from("shell syntax the docs test does not run").into());
    }
    let mut args = words(&cmd);
    if args.first().map(String::as_str) != Some("rankscope") {
        return Err(String::from("not a rankscope command").into());
    }
    args.remove(0);
    for i in 1..args.len() {
        if args[i - 1] == "--perfetto" && args[i] != "-" {
            args[i] = tmp.join(&args[i]).display().to_string();
        }
    }
    let out = Command::cargo_bin("rankscope")
        .map_err(|e| Mismatch::from(e.to_string()))?
        .env("NO_COLOR", "1")
        .env_remove("COLUMNS")
        .args(&args)
        .output()
        .map_err(|e| Mismatch::from(e.to_string()))?;
    if out.status.code() != Some(code) {
        return Err(format!(
            "exit {:?}, expected {code}; stderr: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    if ex.expected.iter().all(|l| l.trim().is_empty()) {
        return Ok(());
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut lines: Vec<&str> = stdout.lines().collect();
    if let Some(n) = head {
        lines.truncate(n);
    }
    let mut expected = ex.expected.clone();
    while expected.last().is_some_and(|l| l.trim().is_empty()) {
        expected.pop();
    }
    if matches(&expected, &lines) {
        Ok(())
    } else {
        Err(Mismatch {
            message: format!(
                "output differs.\n--- expected\n{}\n--- actual\n{}",
                expected.join("\n"),
                lines.join("\n")
            ),
            actual: Some(lines.iter().map(|l| l.trim_end().to_string()).collect()),
        })
    }
}

/// The new expected block for an example: the actual output, cut the way the old block
/// was cut (lines before the first `...`, `...`, lines after the last one).
fn updated_block(expected: &[String], actual: &[String]) -> Vec<String> {
    let content: Vec<&String> = {
        let mut v: Vec<&String> = expected.iter().collect();
        while v.last().is_some_and(|l| l.trim().is_empty()) {
            v.pop();
        }
        v
    };
    let trailing_blank = expected.len() - content.len();
    let first = content.iter().position(|l| *l == "...");
    let last = content.iter().rposition(|l| *l == "...");
    let mut out: Vec<String> = match (first, last) {
        (Some(f), Some(l)) => {
            let tail = content.len() - l - 1;
            let mut v: Vec<String> = actual.iter().take(f).cloned().collect();
            v.push("...".into());
            if tail > 0 && actual.len() > f + tail {
                v.extend(actual[actual.len() - tail..].iter().cloned());
            }
            v
        }
        _ => actual.to_vec(),
    };
    // A line that ended in `...` matched by prefix: keep it a prefix of the same length.
    for (new, old) in out.iter_mut().zip(content.iter()) {
        if let Some(prefix) = old.strip_suffix("...").filter(|p| !p.is_empty()) {
            if !new.starts_with(prefix) {
                let keep: String = new.chars().take(prefix.chars().count()).collect();
                *new = format!("{keep}...");
            } else {
                new.clone_from(old);
            }
        }
    }
    out.extend(std::iter::repeat_n(String::new(), trailing_blank));
    out
}

#[test]
fn every_console_example_in_the_docs_runs() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let update = std::env::var_os("RANKSCOPE_UPDATE_DOCS").is_some();
    let mut failures = Vec::new();
    let mut ran = 0;
    for doc in DOCS {
        // (first expected line, 0-based; how many; replacement)
        let mut edits: Vec<(usize, usize, Vec<String>)> = Vec::new();
        for ex in examples(doc) {
            if !ex.command.starts_with("rankscope ") {
                continue;
            }
            ran += 1;
            match run(&ex, tmp.path()) {
                Ok(()) => {}
                Err(Mismatch {
                    actual: Some(actual),
                    ..
                }) if update => {
                    edits.push((
                        ex.line,
                        ex.expected.len(),
                        updated_block(&ex.expected, &actual),
                    ));
                }
                Err(e) => failures.push(format!(
                    "{}:{}: $ {}\n{}",
                    ex.doc, ex.line, ex.command, e.message
                )),
            }
        }
        if !edits.is_empty() {
            let text = std::fs::read_to_string(doc).expect("doc");
            let mut lines: Vec<String> = text.lines().map(String::from).collect();
            for (start, len, new) in edits.into_iter().rev() {
                lines.splice(start..start + len, new);
            }
            std::fs::write(doc, lines.join("\n") + "\n").expect("write doc");
        }
    }
    assert!(
        ran >= 8,
        "only {ran} examples found: is the fence syntax right?"
    );
    assert!(failures.is_empty(), "\n{}", failures.join("\n\n"));
}

#[test]
fn the_matcher_understands_the_doc_conventions() {
    let e = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert!(matches(&e(&["a", "...", "d"]), &["a", "b", "c", "d"]));
    assert!(matches(&e(&["ab..."]), &["abc"]));
    assert!(!matches(&e(&["a", "d"]), &["a", "b", "d"]));
    assert!(!matches(&e(&["a"]), &["a", "b"]));
    assert_eq!(words(r#"a "b c" 'd'"#), ["a", "b c", "d"]);
}
