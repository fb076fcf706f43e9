//! The benches' figures as SVG bar charts (`--svg DIR`): one panel per
//! metric, one bar per peer, each panel on its own scale, this crate's bars
//! in colour. Plain SVG 1.1 with no script or external font, so that a
//! README renders it.

use std::fmt::Write as _;

/// One metric: a bar per peer.
pub struct Panel {
    pub title: String,
    pub unit: String,
    /// Rates: higher is better. Otherwise (latency, memory) lower is.
    pub higher_is_better: bool,
    pub bars: Vec<(String, f64)>,
}

/// The narrowest label column; a wider one holds the longest label.
const MIN_LABEL: usize = 190;
/// Room right of the bars for the value.
const VALUE: usize = 130;
/// Width of one character of the labels (12 px Helvetica, generously).
const CHAR: usize = 7;
const BAR_AREA: usize = 440;
const BAR: usize = 18;
const GAP: usize = 5;
const HEAD: usize = 26;

/// The chart: `title`, a note under it (the machine, the run), then the
/// panels in order. Panels without bars are left out.
pub fn chart(title: &str, note: &str, panels: &[Panel]) -> String {
    let panels: Vec<&Panel> = panels.iter().filter(|p| !p.bars.is_empty()).collect();
    let longest = panels
        .iter()
        .flat_map(|p| p.bars.iter().map(|(name, _)| name.chars().count()))
        .max()
        .unwrap_or(0);
    let label = MIN_LABEL.max(16 + longest * CHAR);
    let width = label + BAR_AREA + VALUE;
    let height = 58
        + panels
            .iter()
            .map(|p| HEAD + p.bars.len() * (BAR + GAP) + 12)
            .sum::<usize>();
    let mut s = String::new();
    let _ = write!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="Helvetica, Arial, sans-serif" font-size="12">
<rect width="100%" height="100%" fill="#ffffff"/>
<text x="10" y="22" font-size="16" font-weight="bold">{}</text>
<text x="10" y="40" fill="#555555">{}</text>
"##,
        escape(title),
        escape(note)
    );
    let mut y = 58;
    for p in panels {
        let better = if p.higher_is_better {
            "higher is better"
        } else {
            "lower is better"
        };
        let _ = writeln!(
            s,
            r##"<text x="10" y="{}" font-weight="bold">{} <tspan font-weight="normal" fill="#555555">({}, {better})</tspan></text>"##,
            y + 16,
            escape(&p.title),
            escape(&p.unit)
        );
        y += HEAD;
        let max = p.bars.iter().map(|(_, v)| *v).fold(0.0_f64, f64::max);
        for (peer, value) in &p.bars {
            let w = if max > 0.0 {
                ((value / max) * BAR_AREA as f64).max(1.0)
            } else {
                1.0
            };
            let ours = peer.starts_with("conduit")
                || peer.starts_with("modern")
                || peer.starts_with("mcp serve");
            let fill = if ours { "#2f6fb0" } else { "#a8a8a8" };
            let _ = writeln!(
                s,
                r##"<text x="{}" y="{}" text-anchor="end">{}</text><rect x="{label}" y="{y}" width="{w:.1}" height="{BAR}" fill="{fill}"/><text x="{:.1}" y="{}">{}</text>"##,
                label - 8,
                y + 13,
                escape(peer),
                label as f64 + w + 6.0,
                y + 13,
                number(*value)
            );
            y += BAR + GAP;
        }
        y += 12;
    }
    s.push_str("</svg>\n");
    s
}

/// A figure as the tables print it: three significant digits, thousands
/// grouped.
fn number(v: f64) -> String {
    if v >= 1000.0 {
        let n = v.round() as u64;
        let digits = n.to_string();
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        out
    } else if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
