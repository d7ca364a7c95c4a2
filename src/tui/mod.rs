//! `rankscope tui`: the interactive timeline, memory, diff and event views.
//!
//! `app` holds state and the only function that changes it, `input` turns terminal events
//! into messages, `ui` and `widgets` draw. This module owns the terminal: it is put back
//! on every way out, panics included.

pub mod app;
pub mod input;
pub mod ui;
pub mod widgets;

use std::io::{self, Stdout};
use std::panic::PanicHookInfo;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crossterm::event::{DisableMouseCapture, EnableMouseCapture};
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::backend::{CrosstermBackend, TestBackend};
use ratatui::Terminal;

pub use app::{update, App, Msg, View};

use crate::model::Run;

/// Whether the terminal is in the TUI's state. Restoring twice is not harmless: leaving
/// the alternate screen a second time restores the saved cursor again, and the shell then
/// overwrites the panic message printed in between.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Puts the terminal back, once (the panic hook and the guard's drop both call it).
fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let _ = disable_raw_mode();
    let _ = crossterm::execute!(
        io::stdout(),
        DisableMouseCapture,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
}

struct TerminalGuard;

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

type Hook = dyn Fn(&PanicHookInfo<'_>) + Sync + Send + 'static;

/// Restores the terminal before the previous hook prints the panic, so the message lands
/// on a normal screen; the previous hook is put back when the TUI ends.
struct HookGuard {
    prev: Arc<Hook>,
}

impl HookGuard {
    fn install() -> HookGuard {
        let prev: Arc<Hook> = Arc::from(std::panic::take_hook());
        let chained = Arc::clone(&prev);
        std::panic::set_hook(Box::new(move |info| {
            restore();
            chained(info);
        }));
        HookGuard { prev }
    }
}

impl Drop for HookGuard {
    fn drop(&mut self) {
        // Not while unwinding: replacing the hook from inside a panic aborts.
        if !std::thread::panicking() {
            let _ = std::panic::take_hook();
            let prev = Arc::clone(&self.prev);
            std::panic::set_hook(Box::new(move |info| prev(info)));
        }
    }
}

pub fn run(run: Run, baseline: Option<Run>, color: bool) -> io::Result<()> {
    let mut app = App::new(run, baseline, color);
    let _hook = HookGuard::install();
    enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    let _guard = TerminalGuard;
    crossterm::execute!(io::stdout(), EnterAlternateScreen, EnableMouseCapture)?;
    let mut terminal: Terminal<CrosstermBackend<Stdout>> =
        Terminal::new(CrosstermBackend::new(io::stdout()))?;
    let size = terminal.size()?;
    update(&mut app, Msg::Resize(size.width, size.height));
    // Redraw only after something happened: `read` blocks until the next key, mouse or
    // resize event.
    while !app.quit {
        terminal.draw(|f| ui::draw(f, &app))?;
        let ev = crossterm::event::read()?;
        if let Some(msg) = input::from_event(&ev, &app) {
            update(&mut app, msg);
        }
    }
    terminal.show_cursor()?;
    Ok(())
}

/// The screen as text lines, for tests and the captures in docs/tui.md.
pub fn render_text(app: &mut App, width: u16, height: u16) -> String {
    update(app, Msg::Resize(width, height));
    let Ok(mut terminal) = Terminal::new(TestBackend::new(width, height)) else {
        return String::new();
    };
    if terminal.draw(|f| ui::draw(f, app)).is_err() {
        return String::new();
    }
    let buf = terminal.backend().buffer();
    let mut out = String::new();
    for y in 0..buf.area.height {
        let mut line = String::new();
        for x in 0..buf.area.width {
            if let Some(c) = buf.cell((x, y)) {
                line.push_str(c.symbol());
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
