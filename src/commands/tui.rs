//! `rankscope tui`: the interactive views, or (`--first-frame`, hidden) the first screen
//! as text.

use std::path::PathBuf;

use anyhow::Result;

use super::{out, LogContext};

pub fn run(
    cx: LogContext,
    paths: &[PathBuf],
    vs: &[PathBuf],
    first_frame: Option<(u16, u16)>,
    diff: rankscope::analysis::diff::DiffOptions,
) -> Result<u8> {
    if let Some((w, h)) = first_frame {
        out(&rankscope::tui::first_frame(
            &cx.grammars,
            paths,
            vs,
            &cx.opts,
            diff,
            (w, h),
        )?)?;
        return Ok(0);
    }
    // Said before anything is loaded, as a usage error: the terminal library's own
    // "No such device or address (os error 6)" names neither the cause nor a way out.
    if !std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        anyhow::bail!(
            "tui needs a terminal (stdout is not a TTY); for text, try `rankscope summary`"
        );
    }
    // Loads on its own thread behind a loading screen; a load error comes back after the
    // user has read it and quit, and exits 2 like any other.
    rankscope::tui::run_paths(cx.grammars, paths, vs, cx.opts, diff, cx.style.color)?;
    Ok(0)
}
