//! Every process the runner starts is waited for, on every path.
//!
//! bwrap runs as two processes: the outer monitor (our child) and its child, PID 1 of the
//! sandbox's PID namespace. When the sample ends normally, PID 1 reports the exit status to
//! the monitor, which exits at once without reaping PID 1 (bubblewrap's `monitor_child`). That
//! PID 1 is re-parented to the nearest subreaper, else the host's init, and stays a zombie
//! until someone waits for it: one per sample, for ever in a container whose init does not
//! reap. So the harness makes itself a child subreaper ([`become_subreaper`]) and, after each
//! sample, waits for the orphaned `bwrap` processes that came to it ([`reap_orphans`]).
//!
//! Waiting is by pid, never `waitpid(-1)`, so the `std::process::Child` handles of other
//! threads (and of other code in this process) keep their exit statuses: the runner's own
//! monitors are registered while they run ([`spawn_registered`]) and are never taken as
//! orphans.
use std::process::{Child, Command};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use rustix::process::{kill_process, waitpid, Pid, Signal, WaitOptions};

/// Pids of the monitors this module spawned whose `Child` has not been waited for yet.
static LIVE_MONITORS: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// Makes this process a child subreaper (once): orphaned descendants become its children
/// instead of init's, so that [`reap_orphans`] can wait for them.
pub(crate) fn become_subreaper() -> Result<(), String> {
    static DONE: OnceLock<Result<(), String>> = OnceLock::new();
    DONE.get_or_init(|| {
        rustix::process::set_child_subreaper(Some(rustix::process::getpid()))
            .map_err(|e| format!("prctl(PR_SET_CHILD_SUBREAPER): {e}"))
    })
    .clone()
}

fn live() -> std::sync::MutexGuard<'static, Vec<u32>> {
    LIVE_MONITORS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Spawns `cmd` and registers it as a live monitor until [`waited`] is called.
pub(crate) fn spawn_registered(cmd: &mut Command) -> std::io::Result<Child> {
    let mut live = live();
    let child = cmd.spawn()?;
    live.push(child.id());
    Ok(child)
}

/// `pid` (a registered monitor) has been waited for.
pub(crate) fn waited(pid: u32) {
    live().retain(|&p| p != pid);
}

/// Waits for the orphaned `bwrap` processes re-parented to this process, for at most
/// `patience` while some are still exiting; returns how many were reaped.
pub(crate) fn reap_orphans(patience: Duration) -> usize {
    let until = Instant::now() + patience;
    let mut reaped = 0;
    loop {
        let mut exiting = 0;
        {
            let live = live();
            for pid in own_children() {
                if live.contains(&(pid as u32)) || comm(pid).as_deref() != Some("bwrap") {
                    continue;
                }
                let Some(p) = Pid::from_raw(pid) else {
                    continue;
                };
                match waitpid(Some(p), WaitOptions::NOHANG) {
                    Ok(Some(_)) => reaped += 1,
                    Ok(None) => exiting += 1,
                    Err(_) => {}
                }
            }
        }
        if exiting == 0 || Instant::now() >= until {
            return reaped;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Kills a running sandbox and waits for its monitor. SIGKILL to the sandbox's PID 1 makes the
/// kernel kill every process in its namespace; the monitor then exits by itself. (Killing
/// only the monitor also works — PID 1 has `--die-with-parent` — but leaves PID 1 an orphan.)
/// The monitor is killed too if it has not exited within a second.
pub(crate) fn kill_sandbox(child: &mut Child) -> Option<std::process::ExitStatus> {
    for pid in children_of(child.id()) {
        if let Some(pid) = Pid::from_raw(pid) {
            let _ = kill_process(pid, Signal::KILL);
        }
    }
    let until = Instant::now() + Duration::from_secs(1);
    while Instant::now() < until {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let _ = child.kill();
    child.wait().ok()
}

/// Children of this process (of all its threads).
fn own_children() -> Vec<i32> {
    children_of(std::process::id())
}

/// The command name of `pid` (`/proc/<pid>/comm`).
fn comm(pid: i32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|s| s.trim_end().to_string())
}

/// Host pids whose parent is `pid` (from /proc/<pid>/task/*/children, else a /proc scan).
pub(crate) fn children_of(pid: u32) -> Vec<i32> {
    let mut out = Vec::new();
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for t in tasks.flatten() {
            if let Ok(s) = std::fs::read_to_string(t.path().join("children")) {
                out.extend(s.split_whitespace().filter_map(|p| p.parse::<i32>().ok()));
            }
        }
    }
    if has_children_file() {
        return out;
    }
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for e in entries.flatten() {
            let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
                continue;
            };
            // pid (comm) state ppid ...; comm may contain spaces and parentheses.
            let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
                continue;
            };
            let ppid = rest
                .split_whitespace()
                .nth(1)
                .and_then(|p| p.parse::<u32>().ok());
            if ppid == Some(pid) {
                if let Ok(p) = e.file_name().to_string_lossy().parse::<i32>() {
                    out.push(p);
                }
            }
        }
    }
    out
}

/// Whether this kernel has /proc/<pid>/task/<tid>/children (CONFIG_PROC_CHILDREN).
fn has_children_file() -> bool {
    static HAS: OnceLock<bool> = OnceLock::new();
    *HAS.get_or_init(|| {
        let me = std::process::id();
        std::path::Path::new(&format!("/proc/{me}/task/{me}/children")).exists()
    })
}
