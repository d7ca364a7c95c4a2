//! `rankscope report`: one self-contained HTML page (no network: the style, the SVG and
//! the little script are inline) holding what `summary` and `diff` say, drawn: the verdict
//! and its evidence, a per-rank timeline, memory per phase and over time, the snapshots'
//! allocation sites. The words are `render::text`'s own functions (the verdict rows of
//! `diff`, the outcome of `summary`), so the page and the terminal say the same.
//!
//! Written by hand with `format!` and one escaping function ([`esc`]): every piece of text
//! that comes from a log, a file name or a snapshot goes through it, and no attribute,
//! URL or script is ever built from such text (docs/architecture.md says why no template
//! crate).

mod breakdown;
mod memory;
mod timeline;
mod verdict;

use std::fmt::Write;

use crate::analysis::attribute::SnapshotEvidence;
use crate::analysis::lanes::Lane;
use crate::base::event::Rank;
use crate::export::identity::RunIdentity;
use crate::model::Run;
use crate::report::{DiffReport, RunReport};
use crate::snapshot::inspect::MemSummary;

/// One rank's PyTorch snapshot, summarised (`snapshot::inspect::summarize`).
pub struct SnapView<'a> {
    /// The rank the snapshot was matched to.
    pub rank: &'a Rank,
    /// The snapshot's file.
    pub path: &'a str,
    /// Its summary.
    pub summary: &'a MemSummary,
}

/// One run as the page shows it: the run, what analysis says of it, its lanes
/// (`analysis::lanes::lanes_of`), its identity and its snapshots' summaries.
pub struct Side<'a> {
    /// The run.
    pub run: &'a Run,
    /// What analysis says of it.
    pub report: &'a RunReport,
    /// Its ranks' lanes for the timeline.
    pub lanes: &'a [Lane],
    /// Its identity, as the JSON documents carry it.
    pub identity: &'a RunIdentity,
    /// Its snapshots' summaries.
    pub snapshots: Vec<SnapView<'a>>,
}

/// Everything the page shows; `diff` and `baseline` together with `--vs`.
pub struct Page<'a> {
    /// The run the page is about.
    pub candidate: Side<'a>,
    /// The run it is compared with (`--vs`).
    pub baseline: Option<Side<'a>>,
    /// The comparison, with `--vs`.
    pub diff: Option<&'a DiffReport>,
    /// The candidate's OOM evidence from its snapshots (with `--vs`, the diff's).
    pub evidence: &'a SnapshotEvidence,
    /// The notes of reading the runs, as `diff` lists them (`render::text::diff::run_notes`).
    pub run_notes: Vec<String>,
    /// rankscope's version, for the page's footer.
    pub version: &'a str,
}

/// Text as HTML: `&`, `<`, `>`, `"` and `'` as entities (so it is safe in an element and
/// in a quoted attribute), control characters other than tab and newline as U+FFFD.
pub(crate) fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            '\t' | '\n' => o.push(c),
            c if c.is_control() => o.push('\u{fffd}'),
            c => o.push(c),
        }
    }
    o
}

/// Ranks above which the page is laid out for a large run: thinner lanes, fewer event lines
/// per bar, grouped by outcome on opening.
pub(crate) const LARGE_RUN: usize = 64;

/// The page.
pub fn page(p: &Page) -> String {
    let mut o = String::with_capacity(64 * 1024);
    let run = p.candidate.run;
    let title = match &p.baseline {
        Some(b) => format!("rankscope report: {} vs {}", run.name, b.run.name),
        None => format!("rankscope report: {}", run.name),
    };
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n\
         <meta name=\"generator\" content=\"rankscope {}\">\n<title>{}</title>\n<style>{}</style>\n</head>\n<body>\n",
        esc(p.version),
        esc(&title),
        STYLE
    );
    verdict::header(&mut o, p);
    verdict::section(&mut o, p);
    timeline::section(&mut o, p);
    memory::section(&mut o, p);
    breakdown::section(&mut o, p);
    memory::nvsmi_section(&mut o, p);
    memory::snapshot_section(&mut o, p);
    verdict::notes_section(&mut o, p);
    let _ = write!(
        o,
        "<footer>made by rankscope {} from the logs named above; a self-contained page (no network)</footer>\n<script>{}</script>\n</body>\n</html>\n",
        esc(p.version),
        SCRIPT
    );
    o
}

/// Ranks as runs of consecutive numbers: `TP0–TP516, TP518–TP1023 (1,023 ranks)`; a
/// lone rank by its name. Ranks whose tags differ but for the last number make a run.
pub(crate) fn rank_ranges<'r>(ranks: impl IntoIterator<Item = &'r Rank>) -> String {
    let names: Vec<String> = ranks.into_iter().map(|r| r.to_string()).collect();
    let split = |n: &str| -> Option<(String, u64)> {
        let digits = n.len() - n.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        let (head, num) = n.split_at(n.len() - digits);
        Some((head.to_string(), num.parse().ok()?))
    };
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < names.len() {
        let mut j = i;
        while let (Some((ha, a)), Some((hb, b))) =
            (split(&names[j]), names.get(j + 1).and_then(|n| split(n)))
        {
            if ha != hb || a.checked_add(1) != Some(b) {
                break;
            }
            j += 1;
        }
        parts.push(if j > i {
            format!("{}–{}", names[i], names[j])
        } else {
            names[i].clone()
        });
        i = j + 1;
    }
    match names.len() {
        0 | 1 => parts.join(", "),
        n => format!(
            "{} ({} ranks)",
            parts.join(", "),
            crate::base::units::group_thousands(n as i64)
        ),
    }
}

/// A section heading with its anchor.
fn heading(o: &mut String, id: &str, text: &str) {
    let _ = writeln!(o, "<h2 id=\"{id}\">{}</h2>", esc(text));
}

/// Labelled rows (`diff`'s verdict layout): a label column, the text beside it; an empty
/// label continues the row above. `class` colours the text.
fn rows_table(o: &mut String, rows: &[(&str, String, &str)]) {
    if rows.is_empty() {
        return;
    }
    o.push_str("<table class=\"rows\">\n");
    for (label, text, class) in rows {
        let _ = writeln!(
            o,
            "<tr><th>{}</th><td class=\"{class}\">{}</td></tr>",
            esc(label),
            esc(text)
        );
    }
    o.push_str("</table>\n");
}

const STYLE: &str = r#"
:root{--bg:#fff;--fg:#1b1b1b;--muted:#666;--rule:#ddd;--panel:#f6f6f6;--bad:#c62828;--good:#2e7d32;--warn:#b26a00;
--fail:#d62728;--late:#e69f00;--launch:#b0b0b0;--dist_init:#56b4e9;--weight_load:#009e73;--kv_cache:#cc79a7;--cuda_graph:#0072b2;--ready:#a6d9a0;
--base:#9e9e9e;--cand:#0072b2;font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;}
@media (prefers-color-scheme:dark){:root{--bg:#121212;--fg:#e6e6e6;--muted:#a0a0a0;--rule:#333;--panel:#1e1e1e;--bad:#ff6b6b;--good:#81c784;--warn:#ffb74d;
--fail:#ff4d4d;--launch:#6b6b6b;--dist_init:#3a8fc2;--weight_load:#1f9c7a;--kv_cache:#b0609a;--cuda_graph:#4a90d9;--ready:#4f7f4a;--base:#8a8a8a;--cand:#4a90d9;}}
body{background:var(--bg);color:var(--fg);margin:0 auto;max-width:1200px;padding:1rem 1.5rem;line-height:1.4}
h1{font-size:1.4rem;margin:.2rem 0} h2{font-size:1.15rem;border-bottom:1px solid var(--rule);padding-bottom:.2rem;margin-top:1.6rem}
h3{font-size:1rem;margin:1rem 0 .3rem}
.status{display:inline-block;font-weight:700;padding:.1rem .5rem;border-radius:3px;color:#fff;margin-right:.5rem}
.status.bad{background:var(--bad);color:#fff} .status.good{background:var(--good);color:#fff} .status.warn{background:var(--warn);color:#fff}
.headline{font-size:1.1rem;font-weight:600}
table{border-collapse:collapse} td,th{vertical-align:top;text-align:left;padding:.15rem .6rem .15rem 0}
table.rows th{color:var(--muted);font-weight:600;white-space:nowrap;width:7rem}
table.grid th,table.grid td{border-bottom:1px solid var(--rule);padding:.2rem .6rem} table.grid td.num{text-align:right;font-variant-numeric:tabular-nums}
.bad{color:var(--bad)} .good{color:var(--good)} .warn{color:var(--warn)} .muted{color:var(--muted)} .small{font-size:.85em}
blockquote.evidence{margin:.4rem 0;padding:.4rem .7rem;background:var(--panel);border-left:4px solid var(--fail);font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.85rem;white-space:pre-wrap;word-break:break-word}
blockquote.evidence cite{display:block;font-style:normal;color:var(--muted);margin-bottom:.2rem}
pre{background:var(--panel);padding:.5rem;overflow-x:auto;font-size:.8rem;white-space:pre-wrap;word-break:break-word}
.legend span{display:inline-block;margin-right:1rem;font-size:.85rem} .legend i{display:inline-block;width:.9rem;height:.7rem;margin-right:.3rem;vertical-align:middle;border-radius:2px}
.controls{margin:.4rem 0} .controls input,.controls select{font:inherit;padding:.1rem .3rem;background:var(--bg);color:var(--fg);border:1px solid var(--rule)}
svg{display:block;max-width:100%;height:auto} svg text{fill:var(--fg);font-size:11px;font-family:inherit} svg .ax{fill:var(--muted);font-size:10px}
svg .gl{stroke:var(--rule);stroke-width:1} svg .lb{fill:var(--panel)}
.p-launch{fill:var(--launch)} .p-dist_init{fill:var(--dist_init)} .p-weight_load{fill:var(--weight_load)} .p-kv_cache{fill:var(--kv_cache)} .p-cuda_graph{fill:var(--cuda_graph)} .p-ready{fill:var(--ready)}
i.p-launch{background:var(--launch)} i.p-dist_init{background:var(--dist_init)} i.p-weight_load{background:var(--weight_load)} i.p-kv_cache{background:var(--kv_cache)} i.p-cuda_graph{background:var(--cuda_graph)} i.p-ready{background:var(--ready)}
i.fail{background:var(--fail)} i.late{background:var(--late)} i.base{background:var(--base)} i.cand{background:var(--cand)}
rect.open{fill-opacity:.55} rect.late{stroke:var(--late);stroke-width:2.5} rect.failph{stroke:var(--fail);stroke-width:2.5} .fail{fill:var(--fail)} text.fail{fill:var(--fail);font-weight:700}
rect.failbg{fill:var(--fail);fill-opacity:.12} rect.rootbg{fill:none;stroke:var(--fail);stroke-width:2}
.c-comm{fill:var(--dist_init)} .c-weights{fill:var(--weight_load)} .c-kv{fill:var(--kv_cache)} .c-graphs{fill:var(--cuda_graph)} .c-act{fill:var(--late)} .c-other{fill:var(--launch)} .c-free{fill:var(--ready)}
i.c-comm{background:var(--dist_init)} i.c-weights{background:var(--weight_load)} i.c-kv{background:var(--kv_cache)} i.c-graphs{background:var(--cuda_graph)} i.c-act{background:var(--late)} i.c-other{background:var(--launch)} i.c-free{background:var(--ready)}
.m0{fill:var(--dist_init)} .m1{fill:var(--weight_load)} .m2{fill:var(--kv_cache)} .m3{fill:var(--cuda_graph)} .m4{fill:var(--ready)} rect.bar-base{fill-opacity:.45} polyline.gpu{fill:none;stroke-width:1.5} .k0{stroke:var(--cuda_graph)} .k1{stroke:var(--weight_load)} .k2{stroke:var(--kv_cache)} .k3{stroke:var(--late)} .k4{stroke:var(--dist_init)} .k5{stroke:var(--muted)}
line.total{stroke:var(--bad);stroke-dasharray:4 3}
footer{margin-top:2rem;color:var(--muted);font-size:.8rem;border-top:1px solid var(--rule);padding-top:.4rem}
details>summary{cursor:pointer;color:var(--muted)}
@media print{:root{--bg:#fff;--fg:#000;--muted:#444;--panel:#f3f3f3}body{max-width:none;padding:0;font-size:10pt}
.controls{display:none} details{display:block} details>summary{display:none} h2{break-after:avoid} svg,table,blockquote{break-inside:avoid}
a{color:inherit;text-decoration:none}}
"#;

/// The only script: the timeline's filter box and grouping. It reads the lanes' `data-`
/// attributes (escaped text) and moves them; it builds no markup from them.
const SCRIPT: &str = r#"
(function(){
var ORDER={failed:0,stalled:1,consequence:2,terminated:3,incomplete:4,ready:5};
function layout(svg){
  var id=svg.id, f=document.getElementById(id+'-filter'), g=document.getElementById(id+'-group');
  var q=f?f.value.trim().toLowerCase():'', by=g?g.value:'rank';
  var H=+svg.dataset.lane, top=+svg.dataset.top, lanes=[].slice.call(svg.querySelectorAll('g.lane'));
  svg.querySelectorAll('text.grp').forEach(function(t){t.remove();});
  var vis=lanes.filter(function(l){var k=l.dataset.key.toLowerCase();return !q||k.indexOf(q)>=0;});
  lanes.forEach(function(l){l.style.display=vis.indexOf(l)>=0?'':'none';});
  if(by!=='rank'){vis.sort(function(a,b){var ka=a.dataset[by],kb=b.dataset[by];
    if(by==='outcome'){ka=(ORDER[ka]===undefined?9:ORDER[ka]);kb=(ORDER[kb]===undefined?9:ORDER[kb]);}
    return (ka<kb?-1:ka>kb?1:0)||(+a.dataset.i- +b.dataset.i);});}
  var y=top,prev=null,ns='http://www.w3.org/2000/svg';
  vis.forEach(function(l){
    if(by!=='rank'&&l.dataset[by]!==prev){prev=l.dataset[by];var t=document.createElementNS(ns,'text');
      t.setAttribute('class','grp');t.setAttribute('x',2);t.setAttribute('y',y+12);
      var n=vis.filter(function(x){return x.dataset[by]===prev;}).length;
      t.textContent=by+': '+prev+' ('+n+')';svg.appendChild(t);y+=16;}
    l.setAttribute('transform','translate(0,'+y+')');y+=H;});
  var h=y+8;svg.querySelectorAll('line.gl').forEach(function(ln){ln.setAttribute('y2',y);});
  svg.setAttribute('viewBox','0 0 '+svg.dataset.w+' '+h);svg.setAttribute('height',h);
  var c=document.getElementById(id+'-count');if(c)c.textContent=vis.length+' of '+lanes.length+' lanes';
}
document.querySelectorAll('svg.timeline').forEach(function(svg){
  var id=svg.id;['-filter','-group'].forEach(function(s){var e=document.getElementById(id+s);
    if(e)e.addEventListener('input',function(){layout(svg);});});
  layout(svg);});
})();
"#;

#[cfg(test)]
mod tests {
    use super::{esc, rank_ranges};
    use crate::base::event::Rank;

    #[test]
    fn ranks_as_runs() {
        let ranks: Vec<Rank> = [0, 1, 2, 4, 6, 7].into_iter().map(Rank::tp).collect();
        assert_eq!(rank_ranges(&ranks), "TP0–TP2, TP4, TP6–TP7 (6 ranks)");
        assert_eq!(rank_ranges(&ranks[3..4]), "TP4");
    }

    #[test]
    fn escapes_markup_quotes_and_controls() {
        assert_eq!(
            esc("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
        assert_eq!(
            esc("a\u{1b}[31mb\u{0}c\td\ne"),
            "a\u{fffd}[31mb\u{fffd}c\td\ne"
        );
    }
}
