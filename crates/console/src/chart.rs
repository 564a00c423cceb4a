//! Charts drawn on the server as SVG, from numbers alone: no value and no name of the
//! tenant's ever reaches one, so nothing in them needs escaping but their fixed labels.

use std::fmt::Write as _;

/// One series of a line chart.
pub struct Series<'a> {
    pub label: &'a str,
    /// A CSS class of the stylesheet that colors it.
    pub class: &'a str,
    pub points: Vec<i64>,
}

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 180.0;
const LEFT: f64 = 48.0;
const BOTTOM: f64 = 24.0;
const TOP: f64 = 12.0;

/// A line chart of `series` over the same days, `first` and `last` labelling the ends of
/// the axis. `title` names it for assistive technology.
pub fn lines(title: &str, series: &[Series<'_>], first: &str, last: &str) -> String {
    let max = series
        .iter()
        .flat_map(|s| s.points.iter().copied())
        .max()
        .unwrap_or(0)
        .max(1);
    let n = series.iter().map(|s| s.points.len()).max().unwrap_or(0);
    let step = if n > 1 {
        (WIDTH - LEFT - 8.0) / (n - 1) as f64
    } else {
        0.0
    };
    let y = |v: i64| TOP + (HEIGHT - TOP - BOTTOM) * (1.0 - v as f64 / max as f64);
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{}" xmlns="http://www.w3.org/2000/svg">"#,
        escape(title)
    );
    let _ = write!(svg, "<title>{}</title>", escape(title));
    // Axes and the top value.
    let base = HEIGHT - BOTTOM;
    let _ = write!(
        svg,
        r#"<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{base}"/><line class="axis" x1="{LEFT}" y1="{base}" x2="{}" y2="{base}"/>"#,
        WIDTH - 8.0
    );
    let _ = write!(
        svg,
        r#"<text class="tick" x="{}" y="{}" text-anchor="end">{max}</text><text class="tick" x="{}" y="{base}" text-anchor="end">0</text>"#,
        LEFT - 6.0,
        TOP + 10.0,
        LEFT - 6.0
    );
    let _ = write!(
        svg,
        r#"<text class="tick" x="{LEFT}" y="{}">{}</text><text class="tick" x="{}" y="{}" text-anchor="end">{}</text>"#,
        HEIGHT - 6.0,
        escape(first),
        WIDTH - 8.0,
        HEIGHT - 6.0,
        escape(last)
    );
    for s in series {
        let points: Vec<String> = s
            .points
            .iter()
            .enumerate()
            .map(|(i, v)| format!("{:.1},{:.1}", LEFT + step * i as f64, y(*v)))
            .collect();
        let _ = write!(
            svg,
            r#"<polyline class="{}" fill="none" points="{}"><title>{}</title></polyline>"#,
            escape(s.class),
            points.join(" "),
            escape(s.label)
        );
    }
    svg.push_str("</svg>");
    svg
}

/// Escapes the fixed labels (they are the code's own, but the function stays safe).
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_draws_each_series_scaled_to_the_largest_value() {
        let svg = lines(
            "Findings <and> drift",
            &[
                Series {
                    label: "Findings",
                    class: "findings",
                    points: vec![0, 5, 10],
                },
                Series {
                    label: "Drift",
                    class: "drift",
                    points: vec![1, 1, 1],
                },
            ],
            "Nov 1",
            "Nov 3",
        );
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("Findings &lt;and&gt; drift"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        // The largest value reaches the top of the plot, zero its base.
        assert!(svg.contains(&format!("{:.1},{:.1}", LEFT + (WIDTH - LEFT - 8.0), TOP)));
        assert!(svg.contains(&format!("{LEFT:.1},{:.1}", HEIGHT - BOTTOM)));
    }
}
