//! `rankscope man`: the man pages (roff), generated from the command line.

use std::io::{self, Write};

use anyhow::Result;
use rankscope::cli::{man_page_name, man_pages};

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
    clap_mangen::Man::new(cmd).render(&mut stdout)?;
    stdout.flush()?;
    Ok(0)
}
