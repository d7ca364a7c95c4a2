//! The code-shape limits of issue #28, item 3: no source file over 800 lines and no
//! function over 120 lines, tests apart. A file that outgrows them is split by job, not by
//! size (docs/architecture.md, Habits).
//!
//! What is measured, on rustfmt'd code under `src/`:
//! - a file's lines before its trailing `#[cfg(test)] mod … { … }` block (all of them when
//!   it has none); a file that its parent declares as `#[cfg(test)] mod name;` is test
//!   code and is not measured;
//! - a fn outside test modules, from its `fn` line to its closing brace: the first line
//!   that is exactly the `fn` line's indentation followed by `}`. A fn whose signature
//!   ends with `;` (a trait's declaration) has no body.

// A test that unwraps fails on its own line.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

/// Most lines a source file may have outside its trailing test module.
const MAX_FILE_LINES: usize = 800;
/// Most lines a function may have, from its `fn` line to its closing brace.
const MAX_FN_LINES: usize = 120;

/// One limit broken: where, and by how much.
#[derive(Debug, PartialEq)]
struct Breach {
    /// 1-based line: the `fn` line for a function, the 801st line for a file.
    line: usize,
    what: String,
}

/// The shape of one file's text: the limits it breaks, and the test-module files it
/// declares (`#[cfg(test)] mod name;`), which are not measured.
fn check_text(text: &str) -> (Vec<Breach>, Vec<String>) {
    let lines: Vec<&str> = text.lines().collect();
    let mut breaches = Vec::new();
    let mut test_files = Vec::new();
    let code_end = trailing_test_module(&lines).unwrap_or(lines.len());
    if code_end > MAX_FILE_LINES {
        breaches.push(Breach {
            line: MAX_FILE_LINES + 1,
            what: format!(
                "file has {code_end} lines outside its test module (limit {MAX_FILE_LINES})"
            ),
        });
    }
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.trim() == "#[cfg(test)]" {
            // The item it gates, past other attributes and doc comments.
            let at = (i + 1..lines.len()).find(|&j| {
                let l = lines[j].trim_start();
                !(l.starts_with("#[") || l.starts_with("//"))
            });
            if let Some((at, next)) = at.map(|j| (j, lines[j])) {
                let head = next.trim_start();
                let head = head.strip_prefix("pub ").unwrap_or(head);
                if let Some(rest) = head.strip_prefix("mod ") {
                    if let Some(name) = rest.strip_suffix(';') {
                        test_files.push(name.trim().to_string());
                        i = at + 1;
                        continue;
                    }
                    // A test module inline: skipped to its closing brace.
                    let close = format!("{}}}", indent_of(next));
                    let end = (at + 1..lines.len()).find(|&j| lines[j] == close);
                    i = end.map_or(lines.len(), |e| e + 1);
                    continue;
                }
            }
        }
        if let Some(name) = fn_name(line) {
            if let Some(len) = fn_length(&lines, i) {
                if len > MAX_FN_LINES {
                    breaches.push(Breach {
                        line: i + 1,
                        what: format!("fn `{name}` is {len} lines (limit {MAX_FN_LINES})"),
                    });
                }
            }
        }
        i += 1;
    }
    (breaches, test_files)
}

/// The 0-based line of the `#[cfg(test)]` that opens a test module closed by the file's
/// last non-blank line, if the file ends with one.
fn trailing_test_module(lines: &[&str]) -> Option<usize> {
    let last = lines.iter().rposition(|l| !l.trim().is_empty())?;
    if lines[last] != "}" {
        return None;
    }
    // The module's own opening line is the last top-level `mod … {` before it.
    let open = (0..last).rev().find(|&j| {
        let l = lines[j];
        !l.starts_with(' ') && l.contains("mod ") && l.ends_with('{')
    })?;
    let head = lines[open].strip_prefix("pub ").unwrap_or(lines[open]);
    if !head.starts_with("mod ") {
        return None;
    }
    // Attributes and comments above it, up to its `#[cfg(test)]`.
    (0..open)
        .rev()
        .take_while(|&j| lines[j].starts_with("#[") || lines[j].starts_with("//"))
        .find(|&j| lines[j].trim() == "#[cfg(test)]")
}

fn indent_of(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// The name of the fn a line declares, if it declares one.
fn fn_name(line: &str) -> Option<&str> {
    let mut rest = line.trim_start();
    if rest.starts_with("//") {
        return None;
    }
    loop {
        let before = rest;
        for q in ["pub ", "const ", "async ", "unsafe ", "default "] {
            rest = rest.strip_prefix(q).unwrap_or(rest);
        }
        if rest.starts_with("pub(") {
            rest = rest.split_once(") ").map_or(rest, |(_, r)| r);
        }
        if let Some(r) = rest.strip_prefix("extern ") {
            rest = r
                .split_once(' ')
                .map_or(r, |(abi, r)| if abi.starts_with('"') { r } else { abi });
        }
        if rest == before {
            break;
        }
    }
    let name = rest.strip_prefix("fn ")?;
    let end = name
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(name.len());
    (end > 0).then(|| &name[..end])
}

/// Lines from the fn line at `start` to its closing brace, inclusive; `None` for a fn
/// with no body.
fn fn_length(lines: &[&str], start: usize) -> Option<usize> {
    let first = lines[start];
    let close = format!("{}}}", indent_of(first));
    for (j, line) in lines.iter().enumerate().skip(start) {
        let l = line.trim_end();
        // The signature ends at the first line ending in `{` or `;` (or a body on one line).
        if l.ends_with(';') && !l.contains('{') {
            return None;
        }
        if l.ends_with('}') && l.contains('{') && brace_balance(l) == 0 {
            return Some(j - start + 1);
        }
        if l.ends_with('{') {
            let end = (j + 1..lines.len()).find(|&k| lines[k] == close)?;
            return Some(end - start + 1);
        }
    }
    None
}

fn brace_balance(l: &str) -> i32 {
    l.chars().fold(0, |n, c| match c {
        '{' => n + 1,
        '}' => n - 1,
        _ => n,
    })
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read src")
        .map(|e| e.expect("dir entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn every_source_file_keeps_the_limits() {
    let mut files = Vec::new();
    rust_files(Path::new("src"), &mut files);
    assert!(files.len() > 50, "src/ walked: {} files", files.len());
    let mut test_files: Vec<PathBuf> = Vec::new();
    let mut found = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("read source");
        let (breaches, tests) = check_text(&text);
        // `mod.rs`, `lib.rs` and `main.rs` declare files beside them; `foo.rs` in `foo/`.
        let stem = f.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let dir = match stem {
            "mod" | "lib" | "main" => f.parent().map(Path::to_path_buf),
            _ => f.parent().map(|p| p.join(stem)),
        }
        .expect("a parent");
        for t in tests {
            test_files.push(dir.join(format!("{t}.rs")));
            test_files.push(dir.join(t).join("mod.rs"));
        }
        found.push((f.clone(), breaches));
    }
    let report: Vec<String> = found
        .into_iter()
        .filter(|(f, _)| !test_files.contains(f))
        .flat_map(|(f, breaches)| {
            breaches
                .into_iter()
                .map(move |b| format!("{}:{}: {}", f.display(), b.line, b.what))
        })
        .collect();
    assert!(
        report.is_empty(),
        "split by job, not by size (issue #28):\n{}",
        report.join("\n")
    );
}

/// The checker on made-up inputs: the limits hold at exactly 800 and 120 lines, and test
/// modules are not counted.
mod self_check {
    use super::*;

    /// A fn of `n` lines (its `fn` line and closing brace included), indented by `indent`.
    fn made_fn(name: &str, n: usize, indent: &str) -> String {
        let mut s = format!("{indent}pub(crate) fn {name}(x: u32) -> u32 {{\n");
        for i in 0..n - 2 {
            s.push_str(&format!("{indent}    let _a{i} = x;\n"));
        }
        s.push_str(&format!("{indent}}}\n"));
        s
    }

    fn breach_lines(text: &str) -> Vec<usize> {
        check_text(text).0.into_iter().map(|b| b.line).collect()
    }

    #[test]
    fn a_fn_of_121_lines_is_caught_and_one_of_120_is_not() {
        assert_eq!(breach_lines(&made_fn("fits", 120, "")), Vec::<usize>::new());
        assert_eq!(breach_lines(&made_fn("long", 121, "")), vec![1]);
        // A method, after other items: named by its own `fn` line.
        let text = format!(
            "struct S;\n\nimpl S {{\n{}{}}}\n",
            made_fn("short", 3, "    "),
            made_fn("long", 121, "    ")
        );
        let (b, _) = check_text(&text);
        assert_eq!(b.len(), 1, "{b:?}");
        assert_eq!(b[0].line, 7);
        assert!(b[0].what.contains("`long` is 121 lines"), "{}", b[0].what);
    }

    #[test]
    fn a_signature_without_body_and_a_one_line_body_are_not_bodies_to_measure() {
        let text = format!(
            "trait T {{\n    fn a(&self);\n    fn b(&self) -> u32 {{ 1 }}\n}}\n{}",
            made_fn("c", 4, "")
        );
        assert_eq!(breach_lines(&text), Vec::<usize>::new());
        // A multi-line signature: the lines count from `fn` on.
        let mut long = String::from("fn wide(\n    a: u32,\n) -> u32 {\n");
        long.push_str(&"    let _ = a;\n".repeat(117));
        long.push_str("}\n");
        assert_eq!(long.lines().count(), 121);
        assert_eq!(breach_lines(&long), vec![1]);
    }

    #[test]
    fn a_test_module_is_not_counted() {
        let mut text = "//! A file.\n".repeat(800);
        let tests = format!(
            "#[cfg(test)]\nmod tests {{\n    use super::*;\n\n{}}}\n",
            made_fn("long_test", 200, "    ")
        );
        text.push_str(&tests);
        assert_eq!(breach_lines(&text), Vec::<usize>::new());
        // One line more outside it is one too many, named at line 801.
        let over = format!("//! A file.\n{text}");
        assert_eq!(breach_lines(&over), vec![801]);
        // A test module in the middle of the file hides its fns, not its lines.
        let middle = format!("{tests}{}", made_fn("after", 10, ""));
        assert_eq!(breach_lines(&middle), Vec::<usize>::new());
        // Other attributes between `#[cfg(test)]` and its `mod` change nothing.
        let attributed = format!(
            "#[cfg(test)]\n#[allow(dead_code)]\nmod checks {{\n{}}}\n{}",
            made_fn("long_check", 200, "    "),
            made_fn("after", 10, "")
        );
        assert_eq!(breach_lines(&attributed), Vec::<usize>::new());
        // A test module in its own file is named, to be skipped.
        let (_, files) = check_text("#[cfg(test)]\nmod tests;\n");
        assert_eq!(files, vec!["tests".to_string()]);
    }
}
