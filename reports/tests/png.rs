//! PNG plots: written beside every SVG only when asked, valid PNG of the SVG's size, the same
//! bytes twice, and really drawn (not blank, text in the title area). PNG is the `png` feature.
#![cfg(feature = "png")]

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};

use common::{sweep_grid, synthetic_report};
use stampede_reports::{render, render_sweep_plots_with, RenderOptions};

const PNG_SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n'];

fn with_png() -> RenderOptions {
    RenderOptions {
        png: true,
        ..RenderOptions::default()
    }
}

fn with_extension(files: &[PathBuf], ext: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == ext))
        .cloned()
        .collect();
    out.sort();
    out
}

/// (width, height) px from the IHDR chunk, which must come right after the signature.
fn ihdr_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(bytes[..8], PNG_SIGNATURE, "not a PNG signature");
    assert_eq!(&bytes[12..16], b"IHDR", "first chunk is not IHDR");
    let be =
        |at: usize| u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    (be(16), be(20))
}

/// The `width` and `height` attributes of an SVG's root element (px).
fn svg_size(path: &Path) -> (u32, u32) {
    let text = fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap();
    let root = doc.root_element();
    let attr = |name: &str| -> u32 {
        root.attribute(name)
            .unwrap_or_else(|| panic!("{} has no {name}", path.display()))
            .parse()
            .unwrap()
    };
    (attr("width"), attr("height"))
}

/// Every PNG sits beside an SVG of the same base name, and every SVG has its PNG, with a
/// valid signature, the SVG's pixel size and more than a few bytes.
fn check_pairs(files: &[PathBuf]) {
    let svgs = with_extension(files, "svg");
    let pngs = with_extension(files, "png");
    assert!(!svgs.is_empty(), "no plots written");
    let expected: Vec<PathBuf> = svgs.iter().map(|s| s.with_extension("png")).collect();
    assert_eq!(pngs, expected);
    for (svg, png) in svgs.iter().zip(&pngs) {
        let bytes = fs::read(png).unwrap();
        assert!(
            bytes.len() > 10_000,
            "{}: only {} bytes",
            png.display(),
            bytes.len()
        );
        assert_eq!(ihdr_size(&bytes), svg_size(svg), "{}", png.display());
    }
}

struct Decoded {
    width: usize,
    height: usize,
    /// RGBA, row by row.
    rgba: Vec<u8>,
}

impl Decoded {
    fn read(path: &Path) -> Self {
        let decoder = png::Decoder::new(fs::File::open(path).unwrap());
        let mut reader = decoder.read_info().unwrap();
        let mut rgba = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut rgba).unwrap();
        assert_eq!(info.color_type, png::ColorType::Rgba, "{}", path.display());
        assert_eq!(info.bit_depth, png::BitDepth::Eight, "{}", path.display());
        rgba.truncate(info.buffer_size());
        Decoded {
            width: info.width as usize,
            height: info.height as usize,
            rgba,
        }
    }

    fn pixel(&self, x: usize, y: usize) -> [u8; 4] {
        let i = (y * self.width + x) * 4;
        [
            self.rgba[i],
            self.rgba[i + 1],
            self.rgba[i + 2],
            self.rgba[i + 3],
        ]
    }

    /// Pixels in rows `rows` that satisfy `f`.
    fn count(&self, rows: std::ops::Range<usize>, f: impl Fn([u8; 4]) -> bool) -> usize {
        rows.flat_map(|y| (0..self.width).map(move |x| (x, y)))
            .filter(|(x, y)| f(self.pixel(*x, *y)))
            .count()
    }
}

/// Near black, as text is drawn (anti-aliased edges are lighter).
fn dark(p: [u8; 4]) -> bool {
    p[3] == 255 && u16::from(p[0]) + u16::from(p[1]) + u16::from(p[2]) < 200
}

#[test]
fn run_plots_get_a_png_beside_each_svg_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let rendered = render(dir.path(), &synthetic_report(7), &with_png()).unwrap();
    check_pairs(&rendered.files);
    for f in &rendered.files {
        assert!(f.exists(), "{} listed but not written", f.display());
    }
    // The synthetic run has two tenants, so all seven plots.
    assert_eq!(with_extension(&rendered.files, "png").len(), 7);
}

#[test]
fn no_png_unless_asked() {
    let dir = tempfile::tempdir().unwrap();
    let rendered = render(dir.path(), &synthetic_report(7), &RenderOptions::default()).unwrap();
    assert!(with_extension(&rendered.files, "png").is_empty());
    assert!(!with_extension(&rendered.files, "svg").is_empty());
    let on_disk: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "png"))
        .collect();
    assert!(on_disk.is_empty(), "{on_disk:?}");

    let sweep = tempfile::tempdir().unwrap();
    let keys = ["client.max_attempts".to_string()];
    let files = render_sweep_plots_with(
        sweep.path(),
        &sweep_grid(),
        &keys,
        &RenderOptions::default(),
    )
    .unwrap();
    assert!(with_extension(&files, "png").is_empty());
}

#[test]
fn the_same_report_gives_the_same_png_bytes() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let report = synthetic_report(7);
    let first = render(a.path(), &report, &with_png()).unwrap();
    render(b.path(), &report, &with_png()).unwrap();
    let pngs = with_extension(&first.files, "png");
    assert!(!pngs.is_empty());
    for png in pngs {
        let name = png.file_name().unwrap();
        assert!(
            fs::read(&png).unwrap() == fs::read(b.path().join(name)).unwrap(),
            "{name:?} differs between two renders"
        );
    }
}

#[test]
fn a_png_is_drawn_and_its_title_is_text() {
    let dir = tempfile::tempdir().unwrap();
    render(dir.path(), &synthetic_report(7), &with_png()).unwrap();
    let img = Decoded::read(&dir.path().join("queue.png"));
    assert_eq!(img.rgba.len(), img.width * img.height * 4);
    let background = img.pixel(0, 0);
    assert_eq!(
        background,
        [255, 255, 255, 255],
        "the background is not white"
    );
    let drawn = img.count(0..img.height, |p| p != background);
    assert!(
        drawn > img.width * img.height / 50,
        "only {drawn} of {} pixels drawn",
        img.width * img.height
    );
    // The title is centred in the top 30 px, above the plotting area: dark pixels there are
    // its glyphs, and they sit around the middle, not at the edges.
    let title = img.count(0..30, dark);
    assert!(title > 200, "only {title} dark pixels in the title band");
    let outside_middle = (0..30)
        .flat_map(|y| (0..img.width).map(move |x| (x, y)))
        .filter(|(x, _)| *x < img.width / 5 || *x >= img.width * 4 / 5)
        .filter(|(x, y)| dark(img.pixel(*x, *y)))
        .count();
    assert_eq!(
        outside_middle, 0,
        "dark pixels in the title band outside its middle"
    );
}

#[test]
fn sweep_plots_get_pngs_too() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let keys = [
        "client.max_attempts".to_string(),
        "provider.scopes.0.rpm".to_string(),
    ];
    let files = render_sweep_plots_with(a.path(), &sweep_grid(), &keys, &with_png()).unwrap();
    check_pairs(&files);
    assert_eq!(with_extension(&files, "png").len(), 6);
    render_sweep_plots_with(b.path(), &sweep_grid(), &keys, &with_png()).unwrap();
    for png in with_extension(&files, "png") {
        let name = png.file_name().unwrap();
        assert!(fs::read(&png).unwrap() == fs::read(b.path().join(name)).unwrap());
    }
    let img = Decoded::read(&with_extension(&files, "png")[0]);
    assert!(img.count(0..30, dark) > 200, "no title text");
}

#[test]
fn plots_off_means_no_png_either() {
    let dir = tempfile::tempdir().unwrap();
    let opts = RenderOptions {
        plots: false,
        png: true,
        ..RenderOptions::default()
    };
    let rendered = render(dir.path(), &synthetic_report(7), &opts).unwrap();
    assert!(with_extension(&rendered.files, "png").is_empty());
    let keys = ["client.max_attempts".to_string()];
    let files = render_sweep_plots_with(dir.path(), &sweep_grid(), &keys, &opts).unwrap();
    assert!(files.is_empty());
}
