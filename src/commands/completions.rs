//! `rankscope completions`: shell completions, generated from the command line.

use std::io::{self, Write};

use anyhow::Result;
use rankscope::cli::Cli;

pub fn run(shell: clap_complete::Shell) -> Result<u8> {
    let mut cmd = <Cli as clap::CommandFactory>::command();
    let mut stdout = io::stdout().lock();
    clap_complete::generate(shell, &mut cmd, "rankscope", &mut stdout);
    if shell == clap_complete::Shell::Fish {
        stdout.write_all(rankscope::cli::fish_positional_values().as_bytes())?;
    }
    stdout.flush()?;
    Ok(0)
}
