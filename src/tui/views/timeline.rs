//! The Timeline view: the phase legend, a lane per rank (or a row per phase), and under
//! it the cursor line with the selected rank's events nearest the cursor.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::base::text::sanitize;
use crate::model::Phase;
use crate::render::fit;
use crate::tui::app::App;
use crate::tui::layout::{flow, time_label};
use crate::tui::widgets::timeline::Timeline;
use crate::tui::widgets::{bold, failure_style, phase_glyph, phase_style, warn_style};

fn legend(app: &App, width: u16) -> Vec<Line<'static>> {
    let mut items = Vec::new();
    for p in Phase::ALL {
        items.push(vec![
            Span::styled(
                format!("{}{}", phase_glyph(p), phase_glyph(p)),
                phase_style(p, app.color),
            ),
            Span::raw(format!(" {}", p.name())),
        ]);
    }
    if app.aggregate {
        // The aggregate rows: a phase's first end, the spread of ends, the median end.
        items.push(vec![Span::raw("─┃ ends first─median┃─last")]);
    } else {
        items.push(vec![Span::raw("┄┄ unfinished")]);
    }
    items.push(vec![
        Span::styled("✗", failure_style(app.color)),
        Span::raw(" failure"),
    ]);
    if app.root_rank().is_some() {
        items.push(vec![
            Span::styled(
                crate::tui::widgets::timeline::ROOT_MARK,
                failure_style(app.color),
            ),
            Span::raw(" root (press !)"),
        ]);
    }
    items.push(vec![
        Span::styled("!", warn_style(app.color)),
        Span::raw(" straggler"),
    ]);
    flow(items, width)
}

pub(crate) fn draw(f: &mut Frame, app: &App, area: Rect) {
    let rows = if app.aggregate {
        app.analysed.bands.len()
    } else {
        app.analysed.lanes.len()
    };
    let legend = legend(app, area.width);
    let leg_h = u16::try_from(legend.len()).unwrap_or(u16::MAX);
    let lane = app.analysed.lanes.get(app.rank_sel);
    // What must stay on screen however many ranks there are: the cursor line and, for a
    // rank that failed, its failure line.
    let foot_min = 1 + u16::from(lane.is_some_and(|l| l.failure.is_some()));
    let plot_h = u16::try_from(rows)
        .unwrap_or(u16::MAX)
        .saturating_add(1)
        .min(area.height.saturating_sub(leg_h + 1 + foot_min).max(2));
    let [leg, plot, _gap, foot] = Layout::vertical([
        Constraint::Length(leg_h),
        Constraint::Length(plot_h),
        Constraint::Length(1),
        Constraint::Min(0),
    ])
    .areas(area);
    f.render_widget(Paragraph::new(legend), leg);
    f.render_widget(Timeline { app }, plot);
    if app.analysed.lanes.is_empty() {
        f.render_widget(Paragraph::new("no rank-tagged events in this run"), plot);
    }

    let mut lines = Vec::new();
    let clock = app
        .run
        .start
        .map(|s| {
            let t = s + chrono::Duration::milliseconds((app.cursor_s * 1000.0) as i64);
            let tenths = chrono::Timelike::nanosecond(&t) / 100_000_000;
            format!(" ({}.{tenths})", t.format("%H:%M:%S"))
        })
        .unwrap_or_default();
    let rank = app
        .selected_rank()
        .map(|r| r.to_string())
        .unwrap_or_default();
    let phase_now = lane
        .and_then(|l| {
            l.segments
                .iter()
                .rfind(|s| s.start <= app.cursor_s && app.cursor_s <= s.end)
        })
        .map_or("-", |s| s.phase.name());
    let mut head = vec![
        Span::styled(format!("cursor {}", time_label(app.cursor_s)), bold()),
        Span::raw(format!(
            "{clock}   {} s/column   {rank}: {phase_now}",
            fmt_scale(app.scale)
        )),
    ];
    if let Some(l) = lane {
        if let Some((k, t)) = l.failure {
            head.push(Span::styled(
                format!("   ✗{k} at {}", time_label(t)),
                failure_style(app.color),
            ));
        }
        if !l.straggler_in.is_empty() {
            let ps: Vec<_> = l.straggler_in.iter().map(|p| p.name()).collect();
            head.push(Span::styled(
                format!("   straggler in {}", ps.join(", ")),
                warn_style(app.color),
            ));
        }
    }
    lines.push(Line::from(head));
    let n = usize::from(foot.height.saturating_sub(1));
    // The root failure's own line carries the timeline's root mark.
    let root = app.run.root_failure().and_then(|(_, f)| f.origin.as_ref());
    for (t, e) in app.footer_events(n) {
        let st = if matches!(e.kind.as_str(), "oom" | "error") {
            failure_style(app.color)
        } else {
            Style::new()
        };
        let is_root = root == Some(&e.origin);
        lines.push(Line::from(vec![
            Span::styled(
                if is_root {
                    crate::tui::widgets::timeline::ROOT_MARK
                } else {
                    " "
                },
                failure_style(app.color),
            ),
            Span::raw(format!("{:>6} ", time_label(t))),
            Span::styled(fit(&sanitize(&e.kind), 18), st),
            Span::raw(sanitize(&e.message)),
        ]));
    }
    f.render_widget(Paragraph::new(lines), foot);
}

fn fmt_scale(s: f64) -> String {
    if s >= 10.0 {
        format!("{s:.0}")
    } else if s >= 0.1 {
        format!("{s:.2}")
    } else {
        format!("{s:.3}")
    }
}
