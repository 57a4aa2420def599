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
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

const CHROMIUM: &str = "/usr/bin/chromium";

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

struct Browser {
    child: Child,
    to: std::fs::File,
    rx: Receiver<Value>,
    next: u64,
    session: String,
    log: PathBuf,
}

/// What one page visit saw.
struct Visit {
    console_errors: Vec<String>,
    network: Vec<String>,
    requests: Vec<String>,
    png: Vec<u8>,
}

impl Browser {
    fn launch(dir: &Path) -> Browser {
        std::fs::create_dir_all(dir).unwrap();
        let (fin, fout) = (dir.join("cdp-in"), dir.join("cdp-out"));
        for f in [&fin, &fout] {
            let _ = std::fs::remove_file(f);
        }
        let ok = Command::new("mkfifo")
            .arg(&fin)
            .arg(&fout)
            .status()
            .expect("mkfifo runs");
        assert!(ok.success(), "mkfifo failed");
        let log = dir.join("chromium.log");
        let profile = dir.join("profile");
        let script = format!(
            "exec {CHROMIUM} --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
             --no-default-browser-check --disable-background-networking --disable-component-update \
             --disable-sync --disable-extensions --disable-default-apps --disable-dev-shm-usage \
             --mute-audio --hide-scrollbars '--host-resolver-rules=MAP * ~NOTFOUND' \
             --user-data-dir='{}' --remote-debugging-pipe about:blank 3<'{}' 4>'{}'",
            profile.display(),
            fin.display(),
            fout.display()
        );
        let child = Command::new("sh")
            .arg("-c")
            .arg(script)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("chromium starts");
        // The shell opens fd 3 (our write end) and then fd 4 (our read end), in that order.
        let to = std::fs::OpenOptions::new().write(true).open(&fin).unwrap();
        let mut from = std::fs::File::open(&fout).unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let mut chunk = [0u8; 65536];
            loop {
                match from.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(k) => {
                        buf.extend_from_slice(&chunk[..k]);
                        while let Some(end) = buf.iter().position(|&b| b == 0) {
                            let msg: Vec<u8> = buf.drain(..=end).collect();
                            if let Ok(v) = serde_json::from_slice::<Value>(&msg[..msg.len() - 1]) {
                                if tx.send(v).is_err() {
                                    return;
                                }
                            }
                        }
                    }
                }
            }
        });
        let mut b = Browser {
            child,
            to,
            rx,
            next: 0,
            session: String::new(),
            log,
        };
        let target = b.call("Target.createTarget", json!({"url": "about:blank"}), None);
        let target_id = target["targetId"].as_str().unwrap().to_string();
        let attached = b.call(
            "Target.attachToTarget",
            json!({"targetId": target_id, "flatten": true}),
            None,
        );
        b.session = attached["sessionId"].as_str().unwrap().to_string();
        let s = b.session.clone();
        for domain in ["Runtime", "Log", "Network", "Page"] {
            b.call(&format!("{domain}.enable"), json!({}), Some(&s));
        }
        b.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 1400, "height": 2400, "deviceScaleFactor": 1, "mobile": false}),
            Some(&s),
        );
        b
    }

    /// Evaluate a JavaScript expression in the page (from DevTools: the pages have no scripts).
    fn eval(&mut self, expression: &str) -> Value {
        let s = self.session.clone();
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true}),
            Some(&s),
        );
        assert!(
            r.get("exceptionDetails").is_none(),
            "evaluation failed: {}",
            r["exceptionDetails"]
        );
        r["result"]["value"].clone()
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    fn send(&mut self, method: &str, params: Value, session: Option<&str>) -> u64 {
        self.next += 1;
        let mut msg = json!({"id": self.next, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&msg).unwrap();
        bytes.push(0);
        self.to.write_all(&bytes).unwrap();
        self.to.flush().unwrap();
        self.next
    }

    /// Receive until `until` says stop; every message is also kept in `seen`.
    fn pump(
        &mut self,
        seen: &mut Vec<Value>,
        timeout: Duration,
        until: impl Fn(&Value) -> bool,
    ) -> Option<Value> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(v) => {
                    if until(&v) {
                        return Some(v);
                    }
                    seen.push(v);
                }
                Err(_) => return None,
            }
        }
    }

    fn call(&mut self, method: &str, params: Value, session: Option<&str>) -> Value {
        let mut events = Vec::new();
        self.call_collect(method, params, session, &mut events)
    }

    fn call_collect(
        &mut self,
        method: &str,
        params: Value,
        session: Option<&str>,
        events: &mut Vec<Value>,
    ) -> Value {
        let id = self.send(method, params, session);
        let reply = self
            .pump(events, Duration::from_secs(60), |v| v["id"] == id)
            .unwrap_or_else(|| {
                panic!(
                    "no reply to {method} from Chromium; its log:\n{}",
                    self.log_tail()
                )
            });
        assert!(
            reply.get("error").is_none(),
            "{method} failed: {}",
            reply["error"]
        );
        reply["result"].clone()
    }

    fn visit(&mut self, page: &Path) -> Visit {
        let url = format!("file://{}", page.canonicalize().unwrap().display());
        let s = self.session.clone();
        let mut events = Vec::new();
        self.call_collect("Page.navigate", json!({"url": url}), Some(&s), &mut events);
        let loaded = self.pump(&mut events, Duration::from_secs(60), |v| {
            v["method"] == "Page.loadEventFired"
        });
        assert!(
            loaded.is_some(),
            "{url} did not finish loading; log:\n{}",
            self.log_tail()
        );
        // Late console output or requests (none expected: the pages have no scripts).
        self.pump(&mut events, Duration::from_millis(700), |_| false);
        let shot = self.call_collect(
            "Page.captureScreenshot",
            json!({"format": "png"}),
            Some(&s),
            &mut events,
        );
        let png = base64_decode(shot["data"].as_str().unwrap());
        let mut v = Visit {
            console_errors: Vec::new(),
            network: Vec::new(),
            requests: Vec::new(),
            png,
        };
        for e in events.iter().filter(|e| e["sessionId"] == s.as_str()) {
            let p = &e["params"];
            match e["method"].as_str().unwrap_or("") {
                "Runtime.consoleAPICalled"
                    if matches!(p["type"].as_str(), Some("error" | "assert")) =>
                {
                    v.console_errors
                        .push(format!("console.{}: {}", p["type"], p["args"]))
                }
                "Runtime.exceptionThrown" => v
                    .console_errors
                    .push(format!("exception: {}", p["exceptionDetails"])),
                "Log.entryAdded" if p["entry"]["level"] == "error" => v.console_errors.push(
                    format!("log: {} ({})", p["entry"]["text"], p["entry"]["url"]),
                ),
                "Network.requestWillBeSent" => {
                    let u = p["request"]["url"].as_str().unwrap_or("").to_string();
                    let local = ["file:", "data:", "about:", "blob:"]
                        .iter()
                        .any(|scheme| u.starts_with(scheme));
                    if !local {
                        v.network.push(u.clone());
                    }
                    v.requests.push(u);
                }
                _ => {}
            }
        }
        v
    }

    /// Screenshots of the whole page in segments of `height` pixels.
    fn segments(&mut self, page: &Path, height: u32, max: usize) -> Vec<Vec<u8>> {
        let _ = self.visit(page);
        let s = self.session.clone();
        let metrics = self.call("Page.getLayoutMetrics", json!({}), Some(&s));
        let total = metrics["cssContentSize"]["height"]
            .as_f64()
            .unwrap_or(2400.0);
        let mut out = Vec::new();
        let mut y = 0.0;
        while y < total && out.len() < max {
            let shot = self.call(
                "Page.captureScreenshot",
                json!({"format": "png", "captureBeyondViewport": true,
                       "clip": {"x": 0, "y": y, "width": 1400, "height": (height as f64).min(total - y), "scale": 1}}),
                Some(&s),
            );
            out.push(base64_decode(shot["data"].as_str().unwrap()));
            y += height as f64;
        }
        out
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.send("Browser.close", json!({}), None);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn base64_decode(s: &str) -> Vec<u8> {
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for c in s.bytes() {
        let Some(v) = val(c) else { continue };
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
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
