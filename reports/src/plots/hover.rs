//! Hover values: every plotted point gets an invisible target carrying an SVG `<title>`, so
//! a browser shows the value under the pointer (`retries: 54/s at 12:07`) with no script
//! and nothing fetched. The targets are drawn with zero opacity, so a rasterised plot (PNG)
//! looks the same with or without them.

use crate::escape::escape_xml;
use crate::number::fmt_grouped;

/// One point's hover target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hover {
    /// Position in the SVG (px from the left).
    pub x_px: i32,
    /// Position in the SVG (px from the top).
    pub y_px: i32,
    /// What the tooltip says: series, value with its unit, and when.
    pub text: String,
}

/// Radius of a target (px): easy to find with a pointer, small enough that neighbours a
/// few pixels apart stay apart.
const TARGET_RADIUS: u32 = 4;

/// A value as a note or tooltip shows it: whole numbers from 100 up, one decimal from 10,
/// two below, with thousands grouped.
pub(crate) fn value_text(y: f64) -> String {
    let decimals = if y.abs() >= 100.0 {
        0
    } else if y.abs() >= 10.0 {
        1
    } else {
        2
    };
    fmt_grouped(y, decimals)
}

/// `svg` with a group of hover targets, one per entry of `hovers`, added last (on top of
/// everything, so each can be pointed at).
pub(crate) fn hover_layer(svg: &str, hovers: &[Hover]) -> String {
    if hovers.is_empty() {
        return svg.to_string();
    }
    let Some(end) = svg.rfind("</svg>") else {
        return svg.to_string();
    };
    let mut out = String::with_capacity(svg.len() + hovers.len() * 72);
    out.push_str(&svg[..end]);
    out.push_str("<g class=\"hover\" fill=\"#000000\" fill-opacity=\"0\">\n");
    for h in hovers {
        out.push_str(&format!(
            "<circle cx=\"{}\" cy=\"{}\" r=\"{TARGET_RADIUS}\"><title>{}</title></circle>\n",
            h.x_px,
            h.y_px,
            escape_xml(&h.text)
        ));
    }
    out.push_str("</g>\n");
    out.push_str(&svg[end..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_target_carries_its_escaped_value_and_sits_before_the_end() {
        let svg = "<svg>\n<rect/>\n</svg>\n";
        let out = hover_layer(
            svg,
            &[Hover {
                x_px: 10,
                y_px: 20,
                text: "a<b: 1,234/s at 3 s".into(),
            }],
        );
        assert_eq!(
            out,
            "<svg>\n<rect/>\n<g class=\"hover\" fill=\"#000000\" fill-opacity=\"0\">\n\
             <circle cx=\"10\" cy=\"20\" r=\"4\"><title>a&lt;b: 1,234/s at 3 s</title></circle>\n\
             </g>\n</svg>\n"
        );
        assert_eq!(hover_layer(svg, &[]), svg);
        assert_eq!(value_text(1234.4), "1,234");
        assert_eq!(value_text(12.34), "12.3");
        assert_eq!(value_text(0.5), "0.50");
    }
}
