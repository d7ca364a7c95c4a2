//! `rankscope man`: the man pages (roff), generated from the command line.

use std::io::{self, Write};

use crate::cli::{man_page_name, man_pages};
use anyhow::Result;

pub fn run(page: Option<&str>, list: bool) -> Result<u8> {
    let pages = man_pages();
    if list {
        let mut stdout = io::stdout().lock();
        for p in pages.iter().skip(1) {
            writeln!(stdout, "{}", man_page_name(p).replacen("rankscope-", "", 1))?;
        }
        return Ok(0);
    }
    let want = match page {
        None => "rankscope".to_string(),
        Some(p) => format!("rankscope-{p}"),
    };
    let Some(cmd) = pages.iter().find(|c| man_page_name(c) == want).cloned() else {
        let names: Vec<String> = pages
            .iter()
            .skip(1)
            .map(|c| man_page_name(c).replacen("rankscope-", "", 1))
            .collect();
        anyhow::bail!(
            "no man page {want}; the subcommand pages are: {}",
            names.join(", ")
        );
    };
    let mut stdout = io::stdout().lock();
    stdout.write_all(page_roff(cmd, &want)?.as_bytes())?;
    stdout.flush()?;
    Ok(0)
}

/// The page: clap_mangen's sections, with EXAMPLES, ENVIRONMENT and EXIT STATUS of our own
/// before VERSION in place of its EXTRA (which would run the help's lines together).
fn page_roff(cmd: clap::Command, name: &str) -> Result<String> {
    let key = if name == "rankscope" {
        "rankscope"
    } else {
        name.trim_start_matches("rankscope-")
    };
    let cmd = cmd.after_help(None::<&str>).after_long_help(None::<&str>);
    let mut buf = Vec::new();
    clap_mangen::Man::new(cmd).render(&mut buf)?;
    let page = String::from_utf8(buf)?;
    let mut extra = String::new();
    let examples = crate::cli::examples(key);
    if !examples.is_empty() {
        extra.push_str(".SH EXAMPLES\n");
        for (line, what) in examples {
            let lines: Vec<String> = crate::cli::example_lines(line)
                .iter()
                .map(|l| text(l))
                .collect();
            extra.push_str(&format!(
                ".PP\n{}\n.PP\n.RS 4\n.nf\n{}\n.fi\n.RE\n",
                text(what),
                lines.join("\n")
            ));
        }
    }
    extra.push_str(".SH ENVIRONMENT\n");
    for (var, what) in crate::cli::ENVIRONMENT {
        extra.push_str(&format!(".TP\n\\fB{}\\fR\n{}\n", text(var), text(what)));
    }
    if matches!(key, "rankscope" | "summary" | "diff") {
        extra.push_str(".SH \"EXIT STATUS\"\n.nf\n");
        for l in crate::cli::EXIT_CODES.lines().skip(1) {
            extra.push_str(&text(l));
            extra.push('\n');
        }
        extra.push_str(".fi\n");
    }
    Ok(match page.find(".SH VERSION") {
        Some(at) => format!("{}{extra}{}", &page[..at], &page[at..]),
        None => format!("{page}{extra}"),
    })
}

/// Text for a roff line: backslashes and minus signs escaped, a leading `.` or `'` (a
/// request) guarded.
fn text(s: &str) -> String {
    let t = s.replace('\\', "\\e").replace('-', "\\-");
    if t.starts_with('.') || t.starts_with('\'') {
        format!("\\&{t}")
    } else {
        t
    }
}
