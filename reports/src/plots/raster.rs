//! PNG plots: the plotters SVG rasterised with resvg, so both formats come from one drawing.
//!
//! Text is set in Roboto Regular, embedded in the binary (`reports/assets/fonts`, Apache-2.0),
//! and no system font is ever loaded: every generic family the SVG may name (`sans-serif`, and
//! `serif`, usvg's fallback) maps to it. A fresh machine with no fonts draws the same labels,
//! and the same SVG gives the same PNG bytes on every machine of one target.

use std::sync::{Arc, OnceLock};

use resvg::tiny_skia::{Pixmap, Transform};
use resvg::usvg::{fontdb, Options, Tree};

use crate::error::ReportError;

/// Roboto Regular (Google, Apache-2.0; licence beside the file). 300 KB, covers Latin, Greek and
/// Cyrillic: enough for axis labels, legends and scenario names.
const ROBOTO_REGULAR: &[u8] = include_bytes!("../../assets/fonts/Roboto-Regular.ttf");

/// The family name inside `ROBOTO_REGULAR`.
const FAMILY: &str = "Roboto";

/// PNG pixels per SVG pixel. 1: a PNG has the SVG's size (960 px wide), which keeps files small
/// and reads well at the plots' 12-16 px text.
pub(crate) const PNG_SCALE: u32 = 1;

/// The font database: only the embedded font, parsed once per process.
fn fonts() -> Arc<fontdb::Database> {
    static FONTS: OnceLock<Arc<fontdb::Database>> = OnceLock::new();
    FONTS
        .get_or_init(|| {
            let mut db = fontdb::Database::new();
            db.load_font_data(ROBOTO_REGULAR.to_vec());
            db.set_sans_serif_family(FAMILY);
            db.set_serif_family(FAMILY);
            db.set_monospace_family(FAMILY);
            db.set_cursive_family(FAMILY);
            db.set_fantasy_family(FAMILY);
            Arc::new(db)
        })
        .clone()
}

/// Rasterises `svg` (a plot of ours) to PNG bytes, `PNG_SCALE` times its size. `file` names
/// the plot in errors.
pub(crate) fn svg_to_png(file: &str, svg: &str) -> Result<Vec<u8>, ReportError> {
    rasterise(file, svg)?
        .encode_png()
        .map_err(|e| ReportError::Plot {
            file: file.to_string(),
            message: format!("PNG encoding failed: {e}"),
        })
}

/// The pixels of `svg`, `PNG_SCALE` times its size.
fn rasterise(file: &str, svg: &str) -> Result<Pixmap, ReportError> {
    let err = |message: String| ReportError::Plot {
        file: file.to_string(),
        message,
    };
    let options = Options {
        font_family: FAMILY.to_string(),
        fontdb: fonts(),
        ..Options::default()
    };
    let tree = Tree::from_str(svg, &options)
        .map_err(|e| err(format!("the SVG could not be read for PNG output: {e}")))?;
    let size = tree.size().to_int_size();
    let (width, height) = (size.width() * PNG_SCALE, size.height() * PNG_SCALE);
    let mut pixmap = Pixmap::new(width, height)
        .ok_or_else(|| err(format!("cannot make a {width}x{height} px image")))?;
    let scale = PNG_SCALE as f32;
    resvg::render(
        &tree,
        Transform::from_scale(scale, scale),
        &mut pixmap.as_mut(),
    );
    Ok(pixmap)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_font_is_the_only_font_and_answers_every_generic_family() {
        let db = fonts();
        let families: Vec<String> = db
            .faces()
            .flat_map(|f| f.families.iter().map(|(name, _)| name.clone()))
            .collect();
        assert_eq!(families, vec![FAMILY.to_string()]);
        for generic in [fontdb::Family::SansSerif, fontdb::Family::Serif] {
            let query = fontdb::Query {
                families: &[generic],
                ..fontdb::Query::default()
            };
            assert!(db.query(&query).is_some(), "{generic:?} finds no face");
        }
    }

    /// Pixels darker than mid-grey: text (black) on white.
    fn dark_pixels(p: &Pixmap) -> usize {
        p.pixels()
            .iter()
            .filter(|c| u16::from(c.red()) + u16::from(c.green()) + u16::from(c.blue()) < 384)
            .count()
    }

    #[test]
    fn text_in_an_unknown_family_is_drawn_in_the_embedded_font() {
        let page = |text: &str| {
            format!(
                r##"<svg width="120" height="40" xmlns="http://www.w3.org/2000/svg">
<rect width="120" height="40" fill="#FFFFFF"/>
<text x="4" y="28" font-family="No Such Font" font-size="24" fill="#000000">{text}</text>
</svg>"##
            )
        };
        assert_eq!(dark_pixels(&rasterise("b.png", &page("")).unwrap()), 0);
        let drawn = dark_pixels(&rasterise("t.png", &page("Hello")).unwrap());
        assert!(drawn > 50, "only {drawn} dark pixels for 'Hello' at 24 px");
    }

    #[test]
    fn a_broken_svg_is_an_error_naming_the_plot() {
        let e = svg_to_png("queue.png", "<svg").unwrap_err().to_string();
        assert!(e.contains("queue.png"), "{e}");
    }
}
