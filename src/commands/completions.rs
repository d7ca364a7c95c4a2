//! `rankscope completions`: shell completions, generated from the command line.

use std::io::{self, Write};

use crate::cli::Cli;
use anyhow::{Context, Result};

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
    // Named like the help's failed write: the bare OS error did not say what failed.
    stdout
        .write_all(&script)
        .and_then(|()| stdout.flush())
        .context("cannot write to standard output")?;
    Ok(0)
}
