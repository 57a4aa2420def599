//! A hundred samples leave no zombie behind.
//!
//! bwrap's outer process can exit before the sandbox's PID 1 (bwrap's reaper inside the PID
//! namespace) has been reaped; that PID 1 is then re-parented to the nearest subreaper, or to
//! the host's init. This test makes itself a subreaper first, so every such orphan becomes a
//! child of this process, and then counts this process's zombie children: any left means the
//! runner did not wait for something it spawned. (Without the subreaper the orphans would go
//! to the host's init, and a container whose init does not reap would collect them.)
//! Its own binary: no other test's sandboxes run beside it.
mod common;

use std::time::Duration;

use dlm_code::{SandboxConfig, TestProgram};

/// `(pid, state, comm)` of every child of this process (all threads), from /proc.
fn children() -> Vec<(i32, char, String)> {
    let mut pids = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        // A kernel without CONFIG_PROC_CHILDREN has no such file: fail rather than find nothing.
        let file = task.path().join("children");
        let listed = std::fs::read_to_string(&file).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (this test needs /proc/*/task/*/children)",
                file.display()
            )
        });
        pids.extend(
            listed
                .split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok()),
        );
    }
    pids.into_iter()
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let open = stat.find('(')?;
            let close = stat.rfind(')')?;
            let state = stat[close + 1..].trim_start().chars().next()?;
            Some((pid, state, stat[open + 1..close].to_string()))
        })
        .collect()
}

/// Zombies on the whole host whose command is `bwrap` (whoever their parent is).
fn bwrap_zombies_on_host() -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| {
            stat.contains("(bwrap)")
                && stat
                    .rfind(')')
                    .is_some_and(|i| stat[i + 1..].trim_start().starts_with('Z'))
        })
        .count()
}

#[test]
fn a_hundred_samples_leave_no_zombie() {
    rustix::process::set_child_subreaper(Some(rustix::process::getpid()))
        .expect("PR_SET_CHILD_SUBREAPER");
    let Some(sandbox) = common::sandbox(SandboxConfig {
        timeout: Duration::from_secs(10),
        ..SandboxConfig::default()
    }) else {
        return;
    };
    println!("memory cap: {}", sandbox.memory_cap().label());
    let host_before = bwrap_zombies_on_host();
    // Some pass, some fail, some are killed at the timeout: every exit path of the runner.
    let programs: Vec<TestProgram> = (0..100)
        .map(|i| TestProgram {
            sample: match i % 10 {
                0 => "def f(x):\n    return 0\n".to_string(),
                1 => "import os\nos._exit(3)\n".to_string(),
                _ => "def f(x):\n    return x * x\n".to_string(),
            },
            tests: vec!["assert f(3) == 9".into()],
            ..Default::default()
        })
        .collect();
    let results = sandbox.run_many(&programs);
    let passed = results.iter().filter(|r| r.outcome.passed()).count();
    assert_eq!(passed, 80, "80 of the 100 programs are right");
    // Two more through the timeout path (a sleeper killed at the wall-clock limit).
    let slow = SandboxConfig {
        timeout: Duration::from_millis(700),
        ..SandboxConfig::default()
    };
    let slow = common::sandbox(slow).expect("the same sandbox with a shorter timeout");
    for _ in 0..2 {
        let r = slow.run(&TestProgram {
            sample: "import time\ntime.sleep(60)\n".into(),
            tests: vec![],
            ..Default::default()
        });
        assert_eq!(r.outcome.cause(), Some(&dlm_code::Cause::Timeout), "{r:?}");
    }
    let zombies: Vec<_> = children().into_iter().filter(|c| c.1 == 'Z').collect();
    let host_after = bwrap_zombies_on_host();
    println!(
        "zombie children of this process after 102 samples: {}; bwrap zombies on the host: {host_before} before, {host_after} after",
        zombies.len()
    );
    assert!(zombies.is_empty(), "zombies left: {zombies:?}");
}
