//! The run page in a real browser: headless Chromium loads `index.html` of a rendered run
//! and the test checks what a reader would meet: no script error or console error, every
//! plot laid out with a non-zero width and height, and the tables there with rows.
//!
//! How: a copy of the page gets a small script first in its `<head>` that records
//! `window.onerror` (resource load failures too), unhandled rejections and
//! `console.error`, and after the load event measures each plot and table
//! (`getBoundingClientRect`) and writes all of it as JSON into a `<pre>`; `chromium
//! --headless --dump-dom` prints the DOM, and the test reads the JSON back. Chromium is
//! killed if it has not finished within [`BROWSER_LIMIT`].
//!
//! Without Chromium on the machine the tests print why and pass, unless
//! `STAMPEDE_REQUIRE_BROWSER=1` (set by `.ci/run`, which installs it), when they fail.
//! `STAMPEDE_CHROMIUM` names the browser binary when it is not `chromium` on the PATH.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common;
use common::{a_str, repo, stampede, text};

/// Longest a browser may take over one page before it is killed and the test fails.
const BROWSER_LIMIT: Duration = Duration::from_secs(60);

/// The script put first in the page's `<head>`.
const PROBE: &str = r#"<script>
(function () {
  var errors = [];
  window.addEventListener('error', function (e) {
    var what = e.message || (e.target && (e.target.src || e.target.href)) || 'an element failed to load';
    errors.push('error: ' + what);
  }, true);
  window.addEventListener('unhandledrejection', function (e) {
    errors.push('unhandled rejection: ' + e.reason);
  });
  var original = console.error;
  console.error = function () {
    errors.push('console.error: ' + Array.prototype.join.call(arguments, ' '));
    return original.apply(console, arguments);
  };
  window.addEventListener('load', function () {
    // After the page's own load handlers.
    setTimeout(function () {
      var plots = [];
      document.querySelectorAll('figure svg, figure img').forEach(function (el) {
        if (el.parentElement.closest('svg')) { return; }
        var r = el.getBoundingClientRect();
        plots.push({ figure: el.closest('figure').id || '', tag: el.tagName.toLowerCase(),
                     width: r.width, height: r.height });
      });
      var tables = [];
      document.querySelectorAll('table').forEach(function (t) {
        var r = t.getBoundingClientRect();
        tables.push({ id: t.id, class: t.className, rows: t.rows.length,
                      width: r.width, height: r.height });
      });
      var out = document.createElement('pre');
      out.id = 'stampede-browser-check';
      out.textContent = JSON.stringify({ errors: errors, plots: plots, tables: tables });
      document.body.appendChild(out);
    }, 0);
  });
})();
</script>
"#;

/// The browser to use, or `None` (after saying why) when the test is to be skipped.
fn chromium() -> Option<PathBuf> {
    let required = std::env::var("STAMPEDE_REQUIRE_BROWSER").is_ok_and(|v| v == "1");
    let named = std::env::var_os("STAMPEDE_CHROMIUM").map(PathBuf::from);
    let found = named.or_else(|| {
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path).find_map(|dir| {
            [
                "chromium",
                "chromium-browser",
                "google-chrome",
                "google-chrome-stable",
            ]
            .iter()
            .map(|name| dir.join(name))
            .find(|p| p.is_file())
        })
    });
    match found {
        Some(browser) => Some(browser),
        None if required => panic!(
            "STAMPEDE_REQUIRE_BROWSER=1 but no chromium on the PATH (nor STAMPEDE_CHROMIUM): \
             install it (`apt-get install -y chromium`) or unset the variable"
        ),
        None => {
            eprintln!(
                "skipped: no chromium on the PATH; install it (`apt-get install -y chromium`) \
                 or name it with STAMPEDE_CHROMIUM to test the page in a browser"
            );
            None
        }
    }
}

/// What the probe measured on one page.
#[derive(Debug)]
struct Seen {
    errors: Vec<String>,
    /// (figure id, tag, width, height) of each plot.
    plots: Vec<(String, String, f64, f64)>,
    /// (id, class, rows, width, height) of each table.
    tables: Vec<(String, String, u64, f64, f64)>,
}

/// Loads `page` (an HTML file) with the probe in headless `browser`.
fn load(browser: &Path, page: &Path, work: &Path) -> Seen {
    let html = std::fs::read_to_string(page).expect("the page is written");
    let probed = match html.find("<head>") {
        Some(at) => format!("{}{PROBE}{}", &html[..at + 6], &html[at + 6..]),
        None => format!("{PROBE}{html}"),
    };
    // Beside the original, so anything it links to relatively resolves the same way.
    let copy = page.with_file_name("browser-check.html");
    std::fs::write(&copy, probed).unwrap();
    let dom_path = work.join("dom.html");
    let log_path = work.join("chromium.log");
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-dev-shm-usage",
            "--virtual-time-budget=10000",
            "--window-size=1280,2000",
        ])
        .arg(format!(
            "--user-data-dir={}",
            work.join("profile").display()
        ))
        .arg("--dump-dom")
        .arg(format!("file://{}", copy.display()))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&dom_path).unwrap())
        .stderr(std::fs::File::create(&log_path).unwrap())
        .spawn()
        .expect("chromium starts");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > BROWSER_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "chromium did not finish {} within {} s (killed); its log: {}",
                page.display(),
                BROWSER_LIMIT.as_secs(),
                std::fs::read_to_string(&log_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let dom = std::fs::read_to_string(&dom_path).unwrap_or_default();
    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
    assert!(
        status.success(),
        "chromium failed on {}: {log}",
        page.display()
    );
    let start = dom
        .find("<pre id=\"stampede-browser-check\">")
        .unwrap_or_else(|| panic!("the probe wrote no result (did the page load?): {log}"));
    let body = &dom[start..];
    let body = &body[body.find('>').unwrap() + 1..body.find("</pre>").unwrap()];
    let json = body
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&nbsp;", "\u{a0}")
        .replace("&amp;", "&");
    let v: serde_json::Value = serde_json::from_str(&json).expect("the probe's JSON");
    let num = |v: &serde_json::Value| v.as_f64().unwrap_or(0.0);
    let s = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
    Seen {
        errors: v["errors"].as_array().unwrap().iter().map(&s).collect(),
        plots: v["plots"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    s(&p["figure"]),
                    s(&p["tag"]),
                    num(&p["width"]),
                    num(&p["height"]),
                )
            })
            .collect(),
        tables: v["tables"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    s(&t["id"]),
                    s(&t["class"]),
                    t["rows"].as_u64().unwrap_or(0),
                    num(&t["width"]),
                    num(&t["height"]),
                )
            })
            .collect(),
    }
}

/// Renders `scenario` (with `sets`) into `dir` and returns its page.
fn render(scenario: &str, sets: &[&str], dir: &Path) -> PathBuf {
    let path = repo().join("scenarios").join(scenario);
    let mut args = vec!["run", a_str(&path), "--out", a_str(dir)];
    for set in sets {
        args.extend(["--set", set]);
    }
    let out = stampede(&args);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{scenario}: {}",
        text(&out.stderr)
    );
    dir.join("index.html")
}

/// Checks one rendered page: no errors, every plot laid out, and `tables` (ids; `.figures`
/// for the figure tables) present with rows.
fn check_page(browser: &Path, page: &Path, work: &Path, tables: &[&str]) {
    let seen = load(browser, page, work);
    assert!(
        seen.errors.is_empty(),
        "{}: {:?}",
        page.display(),
        seen.errors
    );
    assert!(
        !seen.plots.is_empty(),
        "{}: no plot on the page",
        page.display()
    );
    for (figure, tag, w, h) in &seen.plots {
        assert!(
            *w > 0.0 && *h > 0.0,
            "{}: plot {figure} ({tag}) is {w} x {h}",
            page.display()
        );
    }
    for want in tables {
        let found: Vec<_> = seen
            .tables
            .iter()
            .filter(|(id, class, ..)| match want.strip_prefix('.') {
                Some(class_name) => class.split(' ').any(|c| c == class_name),
                None => id == want,
            })
            .collect();
        assert!(
            !found.is_empty(),
            "{}: no table {want}: {:?}",
            page.display(),
            seen.tables
        );
        for (id, class, rows, w, h) in found {
            assert!(
                *rows >= 2 && *w > 0.0 && *h > 0.0,
                "{}: table {want} ({id} {class}) has {rows} rows, {w} x {h}",
                page.display()
            );
        }
    }
}

#[test]
fn the_quickstart_page_loads_clean_with_every_plot_and_table() {
    let Some(browser) = chromium() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let page = render("quickstart.toml", &[], &tmp.path().join("run"));
    check_page(
        &browser,
        &page,
        tmp.path(),
        &["run", "faults", "expectations", ".figures", "left-out"],
    );
}

#[test]
fn a_page_with_several_tenants_and_a_failing_run_loads_clean() {
    let Some(browser) = chromium() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let page = render(
        "shared-credential.toml",
        &["client.preset=naive"],
        &tmp.path().join("run"),
    );
    let seen = load(&browser, &page, tmp.path());
    assert!(
        seen.plots.iter().any(|p| p.0 == "plot-tenants"),
        "the per-tenant plot is drawn: {:?}",
        seen.plots
    );
    check_page(
        &browser,
        &page,
        tmp.path(),
        &["run", "expectations", ".figures"],
    );
}

/// The probe itself: a page with a script error, a console error, a missing image and a
/// plot of no size is reported on every count, so a clean result above means something.
#[test]
fn the_probe_reports_errors_and_empty_plots() {
    let Some(browser) = chromium() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let page = tmp.path().join("index.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html>\n<html><head><title>t</title></head><body>\
         <script>console.error('drawn wrong'); undefinedFunction();</script>\
         <figure id=\"plot-empty\"><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"0\" height=\"0\"></svg></figure>\
         <figure id=\"plot-missing\"><img src=\"missing.png\" alt=\"\"/></figure>\
         <table id=\"run\"><tr><th>x</th></tr></table></body></html>\n",
    )
    .unwrap();
    let seen = load(&browser, &page, tmp.path());
    let errors = seen.errors.join("\n");
    assert!(errors.contains("console.error: drawn wrong"), "{errors}");
    assert!(errors.contains("undefinedFunction"), "{errors}");
    assert!(errors.contains("missing.png"), "{errors}");
    let empty = seen.plots.iter().find(|p| p.0 == "plot-empty").unwrap();
    assert_eq!((empty.2, empty.3), (0.0, 0.0));
    assert_eq!(seen.tables[0].2, 1, "a table with only its header row");
}
