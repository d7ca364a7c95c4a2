//! Which frame of an allocation's stack is its site, and the site's name: shared by the
//! snapshot summaries and diffs (`analysis`) and the OOM reconstruction (`oom`).

use super::types::{Frame, Snapshot, StackId};

/// How much of a stack names an allocation site.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SiteGranularity {
    /// File and function: the three buffers `init_custom_ar` allocates on lines 85–87 are
    /// one site, which is what a reader of a diff wants first.
    Function,
    /// File, function and line.
    Line,
}

/// Which frame of a stack is "the site".
///
/// Frames run innermost first. The site is the first frame that is (1) Python (file ends
/// in `.py` or is `<string>`-like; C++ frames from `stacks="all"` have `??`, empty or
/// `.cpp` file names and line 0) and (2) matches none of `skip`. If every Python frame is
/// skipped — SGLang or vLLM installed with pip lives under `site-packages/` — the first
/// Python frame outside `fallback_skip` (PyTorch itself and the standard library) is used,
/// so an installed server still gets its own frames named. If that fails too, the first
/// frame of any kind, and `<no frames>` for an empty stack.
#[derive(Debug, Clone)]
pub struct SiteRule {
    /// Path parts that mark a frame as not the caller's own (PyTorch, installed packages,
    /// the standard library).
    pub skip: Vec<String>,
    pub(crate) fallback_skip: Vec<String>,
    pub(crate) skip_native: bool,
    /// How much of the frame a site is: its function, file or line.
    pub granularity: SiteGranularity,
}

impl Default for SiteRule {
    fn default() -> Self {
        SiteRule {
            skip: [
                "/torch/",
                "torch/",
                "site-packages/",
                "dist-packages/",
                "<frozen",
                "/lib/python3",
            ]
            .map(String::from)
            .to_vec(),
            fallback_skip: [
                "/torch/",
                "torch/",
                "<frozen",
                "/lib/python3.",
                "/lib64/python3.",
            ]
            .map(String::from)
            .to_vec(),
            skip_native: true,
            granularity: SiteGranularity::Function,
        }
    }
}

fn is_native(f: &Frame) -> bool {
    let n = &*f.filename;
    !(n.ends_with(".py") || (n.starts_with('<') && n != "<unknown>"))
}

fn choose<'s>(s: &'s Snapshot, rule: &SiteRule, stack: StackId) -> Option<&'s Frame> {
    let ok = |f: &Frame, skip: &[String]| {
        !(skip.iter().any(|p| f.filename.contains(p.as_str())) || rule.skip_native && is_native(f))
    };
    s.stack(stack)
        .find(|f| ok(f, &rule.skip))
        .or_else(|| s.stack(stack).find(|f| ok(f, &rule.fallback_skip)))
        .or_else(|| s.stack(stack).next())
}

/// The display name of the site of `stack`.
pub fn site_of(s: &Snapshot, rule: &SiteRule, stack: StackId) -> String {
    match choose(s, rule, stack) {
        Some(f) => site_name(f, rule.granularity),
        None => "<no frames>".into(),
    }
}

fn site_name(f: &Frame, g: SiteGranularity) -> String {
    let file = f.filename.rsplit('/').next().unwrap_or(&f.filename);
    match g {
        SiteGranularity::Function => format!("{} ({file})", f.name),
        SiteGranularity::Line => format!("{} ({file}:{})", f.name, f.line),
    }
}

/// The site of one allocation as a reader looks it up: function, file and line. An
/// anonymous function (`<lambda>`, a comprehension) says little on its own, so the
/// function it was called from is named before it: `warm_prefill/<lambda> (launch.py:76)`.
pub fn site_at_line(s: &Snapshot, rule: &SiteRule, stack: StackId) -> String {
    let Some(f) = choose(s, rule, stack) else {
        return "<no frames>".into();
    };
    let own = site_name(f, SiteGranularity::Line);
    let anonymous = matches!(
        &*f.name,
        "<lambda>" | "<listcomp>" | "<genexpr>" | "<dictcomp>" | "<setcomp>"
    );
    if !anonymous {
        return own;
    }
    // Frames run innermost first: the caller is the next Python frame after the site.
    let caller = s
        .stack(stack)
        .skip_while(|x| !std::ptr::eq(*x, f))
        .skip(1)
        .find(|x| !(rule.skip_native && is_native(x)));
    match caller {
        Some(c) => format!("{}/{own}", c.name),
        None => own,
    }
}

/// The line a site's bytes came from; with function granularity a site can span lines.
pub(super) fn site_line(s: &Snapshot, rule: &SiteRule, stack: StackId) -> Option<i64> {
    choose(s, rule, stack).map(|f| f.line)
}

/// `init_custom_ar (model_runner.py:85-87)`: the site with the lines it spans.
pub(crate) fn site_label(site: &str, lines: &[i64]) -> String {
    // A per-line site already names its line.
    if let ([a], Some(head)) = (lines, site.strip_suffix(')')) {
        if head.ends_with(&format!(":{a}")) {
            return site.to_string();
        }
    }
    let span = match (lines.first(), lines.last()) {
        (Some(a), Some(b)) if a == b => format!(":{a}"),
        (Some(a), Some(b)) => format!(":{a}-{b}"),
        _ => return site.to_string(),
    };
    match site.strip_suffix(')') {
        Some(head) => format!("{head}{span})"),
        None => format!("{site}{span}"),
    }
}
