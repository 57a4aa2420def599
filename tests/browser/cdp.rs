//! The Chromium driver of tests/browser.rs: DevTools over `--remote-debugging-pipe` (see that
//! file's docs).

use serde_json::{json, Value};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

/// Debian's Chromium (`.ci/run` installs it).
pub const CHROMIUM: &str = "/usr/bin/chromium";

pub struct Browser {
    child: Child,
    to: std::fs::File,
    rx: Receiver<Value>,
    next: u64,
    session: String,
    log: PathBuf,
}

/// What one page visit saw.
pub struct Visit {
    pub console_errors: Vec<String>,
    pub network: Vec<String>,
    pub requests: Vec<String>,
    pub png: Vec<u8>,
}

impl Browser {
    pub fn launch(dir: &Path) -> Browser {
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
    pub fn eval(&mut self, expression: &str) -> Value {
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

    pub fn visit(&mut self, page: &Path) -> Visit {
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
    pub fn segments(&mut self, page: &Path, height: u32, max: usize) -> Vec<Vec<u8>> {
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
