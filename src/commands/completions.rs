//! `rankscope completions`: shell completions, generated from the command line.

use std::io::{self, Write};

use crate::cli::Cli;
use anyhow::Result;

pub fn run(shell: clap_complete::Shell) -> Result<u8> {
    let mut cmd = <Cli as clap::CommandFactory>::command();
    // Generated into memory: `clap_complete::generate` panics when its writer fails (a
    // full disk, a closed pipe); the write below returns the error instead.
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "rankscope", &mut script);
    if shell == clap_complete::Shell::Fish {
        script.extend_from_slice(crate::cli::fish_positional_values().as_bytes());
    }
    let mut stdout = io::stdout().lock();
    stdout.write_all(&script)?;
    stdout.flush()?;
    Ok(0)
}
