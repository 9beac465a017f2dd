//! Marks each series' shapes in a plotters SVG with `class="series-NAME"`.
//!
//! plotters writes one element per line and has no way to attach an id or class, but every
//! series in one of our charts has its own colour, so the colour identifies the series. Tagging
//! lets a reader (or a test, or a stylesheet) pick out "the retries line" from the SVG alone.

/// A series' colour as plotters writes it (`#RRGGBB`, upper-case hex) and its class suffix.
pub(crate) struct SeriesColour {
    pub hex: String,
    pub class: String,
}

/// `#RRGGBB` as plotters' SVG backend formats colours.
pub(crate) fn hex(rgb: (u8, u8, u8)) -> String {
    format!("#{:02X}{:02X}{:02X}", rgb.0, rgb.1, rgb.2)
}

const SHAPES: [&str; 5] = ["<polyline ", "<polygon ", "<circle ", "<rect ", "<line "];

/// Returns `svg` with `class="series-…"` added to every shape drawn in a series' colour.
pub(crate) fn tag_series(svg: &str, series: &[SeriesColour]) -> String {
    let mut out = String::with_capacity(svg.len() + 64 * series.len());
    for line in svg.split_inclusive('\n') {
        let shape = SHAPES.iter().find(|s| line.starts_with(**s));
        let owner = shape.and_then(|_| {
            series.iter().find(|s| {
                line.contains(&format!("stroke=\"{}\"", s.hex))
                    || line.contains(&format!("fill=\"{}\"", s.hex))
            })
        });
        match (shape, owner) {
            (Some(shape), Some(owner)) => {
                // Insert the class right after the tag name: `<polyline class="…" fill=…`.
                let name_end = shape.len() - 1;
                out.push_str(&line[..name_end]);
                out.push_str(" class=\"series-");
                out.push_str(&owner.class);
                out.push('"');
                out.push_str(&line[name_end..]);
            }
            _ => out.push_str(line),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_in_a_series_colour_get_its_class_and_others_do_not() {
        let svg = "<svg>\n<polyline fill=\"none\" stroke=\"#FF0000\"/>\n<text fill=\"#FF0000\">x</text>\n<line stroke=\"#000000\"/>\n</svg>\n";
        let tagged = tag_series(
            svg,
            &[SeriesColour {
                hex: hex((255, 0, 0)),
                class: "retries".into(),
            }],
        );
        assert!(tagged.contains("<polyline class=\"series-retries\" fill=\"none\""));
        assert!(tagged.contains("<text fill=\"#FF0000\">x</text>"));
        assert!(tagged.contains("<line stroke=\"#000000\"/>"));
    }
}
