//! Headless Chromium opens the run report, the comparison and the history page, each produced
//! by the real binary from real runs, and checks that each renders without console errors and
//! without any network request, and that its screenshot is not blank. The screenshots are kept
//! under `target/browser-screenshots/` (CI artefacts).
//!
//! How: Chromium is driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`:
//! JSON messages separated by NUL bytes, read from fd 3 and written to fd 4), which needs no
//! WebSocket client and no extra crate; `sh` wires two named pipes to those descriptors. The
//! test enables the Runtime, Log, Network and Page domains of a fresh tab *before* navigating,
//! so it sees every console call, uncaught exception, browser log entry (failed loads, blocked
//! content) and every request the page makes (`Network.requestWillBeSent`), file:// included;
//! anything but file:, data:, about: or blob: is a network request and fails the test. Host
//! names resolve to nothing (`--host-resolver-rules`), so even a bad page cannot reach out. A
//! deliberately bad page (a console error and an image from the network) is visited first, to
//! prove the detectors fire.
//!
//! Without `/usr/bin/chromium` the test prints SKIPPED and passes (a dev machine);
//! `DLM_BENCH_REQUIRE_BROWSER=1` (set by `.ci/run`, which installs Debian's `chromium`) or
//! `CI=true` turns that into a failure (tests/common/skip.rs).

mod common;
use common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

#[path = "browser/cdp.rs"]
mod cdp;
use cdp::{Browser, CHROMIUM};

/// Whether Chromium is here; when it is not, skips the test visibly, or fails it where Chromium
/// is required (`CI=true`, `DLM_BENCH_REQUIRE_BROWSER`).
fn chromium_or_skip() -> bool {
    if Path::new(CHROMIUM).exists() {
        return true;
    }
    skip::absent(&skip::CHROMIUM, format!("{CHROMIUM} not found"));
    false
}

fn screenshots_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("target dir")
        .join("browser-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Size and number of distinct colours of a PNG.
fn png_colours(bytes: &[u8]) -> (u32, u32, usize) {
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size().expect("size")];
    let info = reader.next_frame(&mut buf).expect("a frame");
    let channels = info.color_type.samples();
    let mut colours = std::collections::HashSet::new();
    for px in buf[..info.buffer_size()].chunks(channels) {
        colours.insert(px.to_vec());
        if colours.len() > 10_000 {
            break;
        }
    }
    (info.width, info.height, colours.len())
}

fn must_run(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = command();
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("dlm-bench starts")
}

#[test]
fn report_comparison_and_history_render_in_headless_chromium() {
    if !chromium_or_skip() {
        return;
    }
    let out = scratch("browser");
    let runs = out.join("runs");
    // The run report (with failed cells), and two runs of one suite with a deliberate regression.
    let report_run = out.join("report-run");
    let r = must_run(
        &[
            "run",
            "tests/suites/report-small.yaml",
            "--out",
            report_run.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(
        r.status.code(),
        Some(3),
        "report-small has failing cells by design\n{}",
        text(&r)
    );
    add_training_line(&report_run);
    let r = must_run(&["report", report_run.to_str().unwrap()], &[]);
    assert!(r.status.success(), "{}", text(&r));
    let (a, b) = (runs.join("a"), runs.join("b"));
    let r = must_run(
        &[
            "run",
            "tests/suites/compare-degradable.yaml",
            "--out",
            a.to_str().unwrap(),
        ],
        &[],
    );
    assert!(r.status.success(), "{}", text(&r));
    let r = must_run(
        &[
            "run",
            "tests/suites/compare-degradable.yaml",
            "--out",
            b.to_str().unwrap(),
        ],
        &[("DLM_FIXTURE_WORSE", "1")],
    );
    assert!(r.status.success(), "{}", text(&r));
    let compare_html = out.join("compare.html");
    let r = must_run(
        &[
            "compare",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--html",
            compare_html.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(r.status.code(), Some(4), "{}", text(&r));
    let history_html = out.join("history.html");
    let r = must_run(
        &[
            "history",
            runs.to_str().unwrap(),
            "--html",
            history_html.to_str().unwrap(),
        ],
        &[],
    );
    assert!(r.status.success(), "{}", text(&r));

    let mut browser = Browser::launch(&out.join("chromium"));

    // The detectors work: a page with a console error and a network image is caught.
    let bad = out.join("bad.html");
    std::fs::write(
        &bad,
        "<!DOCTYPE html><html><head><title>bad</title></head><body><p>bad page</p>\
         <script>console.error('deliberate error')</script>\
         <img src=\"http://network.example.invalid/pixel.png\" alt=\"\"></body></html>",
    )
    .unwrap();
    let v = browser.visit(&bad);
    assert!(
        v.console_errors
            .iter()
            .any(|e| e.contains("deliberate error")),
        "the console-error detector missed console.error: {:?}",
        v.console_errors
    );
    assert!(
        v.network
            .iter()
            .any(|u| u.contains("network.example.invalid")),
        "the network detector missed an image request: {:?}",
        v.requests
    );

    let shots = screenshots_dir();
    for (name, page) in [
        ("report", report_run.join("report.html")),
        ("compare", compare_html.clone()),
        ("history", history_html.clone()),
    ] {
        let v = browser.visit(&page);
        assert!(
            v.console_errors.is_empty(),
            "{name}: console errors: {:#?}",
            v.console_errors
        );
        assert!(
            v.network.is_empty(),
            "{name}: network requests: {:#?}",
            v.network
        );
        assert!(
            v.requests.iter().any(|u| u.starts_with("file:")),
            "{name}: the request monitor did not even see the page itself: {:?}",
            v.requests
        );
        let path = shots.join(format!("{name}.png"));
        std::fs::write(&path, &v.png).unwrap();
        let (w, h, colours) = png_colours(&v.png);
        assert!(w >= 1000 && h >= 1000, "{name}: screenshot is {w}×{h}");
        assert!(
            colours > 32,
            "{name}: the screenshot {} has only {colours} colours (blank page?)",
            path.display()
        );
        println!("{name}: {} ({w}×{h}, {colours}+ colours)", path.display());
        if name == "report" {
            check_report_layout(&mut browser);
            check_charts_and_columns(&mut browser, name);
        }
    }
}

/// Give the report run a training table (as a run with `train:` would have), with a checkpoint
/// path as long as a real cache's, without training anything here.
fn add_training_line(run: &Path) {
    let cell: Value = serde_json::from_str(
        std::fs::read_to_string(run.join("cells.jsonl"))
            .unwrap()
            .lines()
            .find(|l| l.contains("\"status\":\"ok\"") && l.contains("\"task_description\":{"))
            .unwrap(),
    )
    .unwrap();
    let checkpoint = format!(
        "{}/reports/checkpoints/mdm-tiny--2gram-ser--L64--{}.ckpt",
        run.display(),
        "0123456789abcdef".repeat(4)
    );
    let line = json!({
        "key": "mdm-tiny/bigram-ser/L12",
        "reused": false,
        "cause": null,
        "record": {
            "key": "mdm-tiny/bigram-ser/L12",
            "cache_id": "0123456789abcdef",
            "checkpoint": checkpoint,
            "model": "mdm-tiny",
            "task": "bigram-ser",
            "length": 12,
            "train": {"steps": 600, "batch_size": 32, "seed": 0, "validation_every": 100,
                      "validation_samples": 256, "timeout_seconds": 3600.0, "options": {"lr": 0.003}},
            "output": {
                "fingerprint": "f",
                "task_description": cell["task_description"],
                "task_plugin": cell["task_plugin"],
                "model_plugin": {"name": "dlm-neural", "version": "0.2.0"},
                "steps": 600, "tokens": 230400, "wall_seconds": 27.5, "tokens_per_second": 8378.0,
                "final_loss": 0.95, "losses": [2.1, 0.95],
                "validation": [{"step": 600, "nll_per_token": 0.9328}],
                "bound": true,
                "reference_nll_per_token": 0.9011
            },
            "optimal_nll_per_token": 0.9030,
            "trained_at": "2026-11-24T00:00:00Z"
        }
    });
    // The line must be what the harness reads (a changed format fails here, not silently).
    let _: dlm_bench::training::TrainLine = serde_json::from_value(line.clone()).unwrap();
    std::fs::write(run.join("training.jsonl"), format!("{line}\n")).unwrap();
}

/// Layout of the report, measured on the rendered page (element boxes, not by eye): reference
/// line labels sit outside the plotted data and never overlap each other; sample sequences show
/// separated tokens; nothing is wider than the 1400 px viewport (the training table's checkpoint
/// column included).
fn check_report_layout(browser: &mut Browser) {
    let m = browser.eval(
        r#"(() => {
        const hit = (a, b) => a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
        const out = {plots: 0, labels: 0, overlaps: [], inside: [], outside_svg: [], seqs: 0, glued: [], ckpt: [], page: document.documentElement.scrollWidth, view: window.innerWidth};
        for (const svg of document.querySelectorAll('svg.plot')) {
          out.plots++;
          const data = svg.querySelector(':scope > svg').getBoundingClientRect();
          const box = svg.getBoundingClientRect();
          const title = svg.querySelector('title').textContent;
          const labels = [...svg.querySelectorAll(':scope > text.hlabel')].map(t => [t.textContent, t.getBoundingClientRect()]);
          out.labels += labels.length;
          labels.forEach(([t, r], i) => {
            if (hit(r, data)) out.inside.push(title + ': ' + t);
            if (r.right > box.right + 0.5 || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5) out.outside_svg.push(title + ': ' + t);
            labels.slice(i + 1).forEach(([u, q]) => { if (hit(r, q)) out.overlaps.push(title + ': ' + t + ' / ' + u); });
          });
        }
        for (const td of document.querySelectorAll('td.seq')) {
          out.seqs++;
          const t = td.textContent.trim();
          if (/[0-9]{2,}/.test(t) && !/ /.test(t)) out.glued.push(t.slice(0, 40));
        }
        for (const td of document.querySelectorAll('td.ckpt')) out.ckpt.push(td.getBoundingClientRect().right);
        out.wide = [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > window.innerWidth + 0.5)
          .slice(0, 8).map(e => e.tagName + '.' + (e.getAttribute('class') || '') + ' ' + Math.round(e.getBoundingClientRect().right));
        return out;
      })()"#,
    );
    println!("report layout: {m}");
    assert!(
        m["plots"].as_u64().unwrap() > 0 && m["labels"].as_u64().unwrap() > 0,
        "{m}"
    );
    assert_eq!(m["overlaps"], json!([]), "reference labels overlap: {m}");
    assert_eq!(
        m["inside"],
        json!([]),
        "reference labels over the data: {m}"
    );
    assert_eq!(m["outside_svg"], json!([]), "reference labels cut off: {m}");
    assert!(m["seqs"].as_u64().unwrap() > 0, "{m}");
    assert_eq!(m["glued"], json!([]), "tokens without separators: {m}");
    let view = m["view"].as_f64().unwrap();
    assert!(
        m["page"].as_f64().unwrap() <= view,
        "the page is wider than the viewport: {m}"
    );
    assert_eq!(
        m["ckpt"].as_array().unwrap().len(),
        1,
        "the training table is there: {m}"
    );
    for right in m["ckpt"].as_array().unwrap() {
        assert!(
            right.as_f64().unwrap() <= view,
            "checkpoint column overflows: {m}"
        );
    }
}

/// Every chart's texts (tick labels, axis titles, reference labels, colour keys) and every
/// table, measured in the browser after opening every `<details>` (the page itself has no
/// script; the measuring one is evaluated over DevTools): no two texts of a chart overlap, none
/// leaves its SVG, and every table fits its container or sits in a horizontally scrolling box,
/// with the page no wider than the 1400 px viewport. Returns the measurements.
fn check_charts_and_columns(browser: &mut Browser, name: &str) -> Value {
    let m = measure_charts_and_columns(browser);
    println!("{name}: charts and columns: {m}");
    assert!(m["plots"].as_u64().unwrap() > 0, "{name}: no chart: {m}");
    assert!(m["texts"].as_u64().unwrap() > 0, "{name}: {m}");
    assert_eq!(m["overlaps"], json!([]), "{name}: chart texts overlap: {m}");
    assert_eq!(m["outside"], json!([]), "{name}: chart texts cut off: {m}");
    assert!(m["tables"].as_u64().unwrap() > 0, "{name}: {m}");
    assert_eq!(
        m["overflow"],
        json!([]),
        "{name}: table columns overflow: {m}"
    );
    assert!(
        m["page"].as_f64().unwrap() <= m["view"].as_f64().unwrap(),
        "{name}: the page is wider than the viewport: {m}"
    );
    m
}

/// The measurements behind [`check_charts_and_columns`], on the page the browser shows.
fn measure_charts_and_columns(browser: &mut Browser) -> Value {
    browser.eval(
        r#"(() => {
        document.querySelectorAll('details').forEach(d => { d.open = true; });
        const hit = (a, b) => a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
        const out = {plots: 0, texts: 0, keyed: 0, overlaps: [], outside: [], tables: 0, scrolled: 0, overflow: [],
                     page: document.documentElement.scrollWidth, view: window.innerWidth};
        for (const svg of document.querySelectorAll('svg.plot')) {
          out.plots++;
          const box = svg.getBoundingClientRect();
          const title = svg.querySelector('title').textContent;
          const texts = [...svg.querySelectorAll(':scope > text')]
            .map(t => [t.lastChild ? t.lastChild.textContent : '', t.getBoundingClientRect()])
            .filter(([t, r]) => r.width > 0);
          if (box.height > 300) out.keyed++;
          out.texts += texts.length;
          texts.forEach(([t, r], i) => {
            if (r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5)
              out.outside.push(title + ': "' + t + '"');
            texts.slice(i + 1).forEach(([u, q]) => { if (hit(r, q)) out.overlaps.push(title + ': "' + t + '" / "' + u + '"'); });
          });
        }
        const scroller = e => {
          for (let p = e.parentElement; p; p = p.parentElement) {
            const o = getComputedStyle(p).overflowX;
            if (o === 'auto' || o === 'scroll') return p;
          }
          return null;
        };
        for (const table of document.querySelectorAll('table')) {
          out.tables++;
          const r = table.getBoundingClientRect();
          const parent = table.parentElement.getBoundingClientRect();
          if (r.right <= Math.min(parent.right, window.innerWidth) + 0.5) continue;
          const s = scroller(table);
          if (s && s.getBoundingClientRect().right <= window.innerWidth + 0.5) { out.scrolled++; continue; }
          const head = table.querySelector('tr');
          out.overflow.push((head ? head.textContent.trim().slice(0, 60) : 'table') + ' → ' + Math.round(r.right));
        }
        return out;
      })()"#,
    )
}

/// The text and theory reports: every chart and table of a text task (declared metrics, SER,
/// speedup and cost against steps) and of both theorem checks (five lengths, colour keys,
/// closed-form markers) laid out without overlap or overflow; the theorem table shows the
/// interval that decides each Theorem 4.2 verdict; charts with nothing to plot are not drawn.
#[test]
fn text_and_theory_reports_keep_chart_labels_apart_and_tables_inside() {
    if !chromium_or_skip() {
        return;
    }
    let out = scratch("browser-charts");
    let mut pages = Vec::new();
    for suite in ["browser-text", "browser-theory"] {
        let dir = out.join(suite);
        let r = must_run(
            &[
                "run",
                &format!("tests/suites/{suite}.yaml"),
                "--out",
                dir.to_str().unwrap(),
            ],
            &[],
        );
        assert!(r.status.success(), "{suite}: {}", text(&r));
        pages.push((suite, dir.join("report.html")));
    }
    let mut browser = Browser::launch(&out.join("chromium"));
    // The detectors fire: two texts on top of each other, one past the SVG's edge, and a table
    // wider than the page outside any scrolling box.
    let bad = out.join("bad-layout.html");
    std::fs::write(
        &bad,
        format!(
            "<!DOCTYPE html><html><head><title>bad</title></head><body style=\"margin:0\">\
             <svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot\" width=\"200\" height=\"100\"><title>t</title>\
             <text x=\"10\" y=\"50\" font-size=\"10\">0.03125</text><text x=\"20\" y=\"52\" font-size=\"11\">y title</text>\
             <text x=\"180\" y=\"20\" font-size=\"10\">cut off here</text></svg>\
             <table><tr><td style=\"white-space:nowrap\">{}</td></tr></table></body></html>",
            "wide ".repeat(400)
        ),
    )
    .unwrap();
    let _ = browser.visit(&bad);
    let m = measure_charts_and_columns(&mut browser);
    assert_eq!(m["overlaps"].as_array().unwrap().len(), 1, "{m}");
    assert_eq!(m["outside"].as_array().unwrap().len(), 1, "{m}");
    assert_eq!(m["overflow"].as_array().unwrap().len(), 1, "{m}");
    assert!(
        m["page"].as_f64().unwrap() > m["view"].as_f64().unwrap(),
        "{m}"
    );
    let shots = screenshots_dir();
    for (name, page) in &pages {
        let html = std::fs::read_to_string(page).unwrap();
        assert!(!html.contains("<script"), "{name}: the report has a script");
        // Charts with nothing to plot leave no card in the grid (a note line under it says why).
        assert!(
            !html.contains("note alone"),
            "{name}: an empty chart's card is shown"
        );
        let v = browser.visit(page);
        assert!(
            v.console_errors.is_empty(),
            "{name}: {:?}",
            v.console_errors
        );
        std::fs::write(shots.join(format!("{name}.png")), &v.png).unwrap();
        let m = check_charts_and_columns(&mut browser, name);
        if *name == "browser-theory" {
            // Both theorem plots of each task carry a colour key under the axis, and the
            // Theorem 4.2 rows show the deciding (Bonferroni) interval beside each verdict.
            assert!(m["keyed"].as_u64().unwrap() >= 2, "{name}: {m}");
            for expected in [
                "L = 16",
                "L = 64",
                "exact (closed form)",
                "deciding CI (Bonferroni)",
                "98.33%",
            ] {
                assert!(
                    html.contains(expected),
                    "{name}: no {expected:?} in the page"
                );
            }
        } else {
            // Declared metrics, SER and speedup against steps, SER against NFE and wall.
            assert!(m["plots"].as_u64().unwrap() >= 5, "{name}: {m}");
            assert!(html.contains("SER (share scored wrong)"), "{name}");
        }
    }
}

/// Not a test: the chart and column checks on any report, e.g. a long suite's.
/// `DLM_BENCH_CHECK_PAGE=path/report.html cargo test --test browser -- --ignored check_a_page`
#[test]
#[ignore]
fn check_a_page() {
    let Some(page) = std::env::var_os("DLM_BENCH_CHECK_PAGE") else {
        println!("set DLM_BENCH_CHECK_PAGE");
        return;
    };
    if !chromium_or_skip() {
        return;
    }
    let mut browser = Browser::launch(&scratch("browser-check").join("chromium"));
    let _ = browser.visit(Path::new(&page));
    check_charts_and_columns(&mut browser, &page.to_string_lossy());
}

/// Not a test: screenshots of a page in segments, for a person to look at.
/// `DLM_BENCH_SHOT_PAGE=path.html DLM_BENCH_SHOT_DIR=dir cargo test --test browser -- --ignored`
#[test]
#[ignore]
fn screenshot_segments_of_a_page() {
    let (Some(page), Some(dir)) = (
        std::env::var_os("DLM_BENCH_SHOT_PAGE"),
        std::env::var_os("DLM_BENCH_SHOT_DIR"),
    ) else {
        println!("set DLM_BENCH_SHOT_PAGE and DLM_BENCH_SHOT_DIR");
        return;
    };
    if !chromium_or_skip() {
        return;
    }
    let dir = PathBuf::from(dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut browser = Browser::launch(&scratch("browser-shots").join("chromium"));
    let height = std::env::var("DLM_BENCH_SHOT_HEIGHT")
        .ok()
        .and_then(|h| h.parse().ok())
        .unwrap_or(1600);
    for (i, png) in browser
        .segments(Path::new(&page), height, 40)
        .iter()
        .enumerate()
    {
        std::fs::write(dir.join(format!("segment-{i:02}.png")), png).unwrap();
    }
}
