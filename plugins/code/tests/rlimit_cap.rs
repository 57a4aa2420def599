//! The memory cap's fall-back, forced: rlimits only (`MemoryCapMode::Rlimit`), as on a host where
//! no memory cgroup can be made (an unprivileged user without a delegated cgroup v2 subtree).
//! Whichever cap a machine gets, the storage and six-children probes must fail to take their
//! memory, and ordinary Python (threads, a few tens of MB) must still run.
//! Its own binary: `hostile.rs` counts the sandbox uid's processes and must not see these.
mod common;
mod memory_probes;

use std::time::Duration;

use dlm_code::sandbox::{MemoryCap, MemoryCapMode, RLIMIT_MODE_PROCESSES};
use dlm_code::{Cause, SandboxConfig, Stage, TestProgram};

const GOOD_F: &str = "def f(x):\n    return x * x\n";

fn program(prefix: &str) -> TestProgram {
    TestProgram {
        sample: format!("{prefix}\n{GOOD_F}"),
        tests: vec!["assert f(3) == 9".into()],
        ..Default::default()
    }
}

#[test]
fn the_rlimit_cap_holds_the_sandbox_to_its_memory() {
    let config = SandboxConfig {
        memory_cap: MemoryCapMode::Rlimit,
        timeout: Duration::from_secs(20),
        ..SandboxConfig::default()
    };
    let Some(sandbox) = common::sandbox(config) else {
        return;
    };
    assert_eq!(sandbox.memory_cap(), &MemoryCap::Rlimit);
    // 1 GiB over 8 processes: each may map 128 MiB.
    let (address_space, processes) = sandbox.process_limits();
    assert_eq!(processes, RLIMIT_MODE_PROCESSES);
    assert_eq!(address_space, (1u64 << 30) / RLIMIT_MODE_PROCESSES);
    assert!(address_space * processes <= sandbox.config().memory_bytes);

    // Ordinary programs still run: four threads, 64 MB in one list of bytes. Twelve times,
    // because without MALLOC_ARENA_MAX=1 it failed about one run in 50 (glibc's thread arenas).
    let ordinary = program(
        "import threading\nout = []\nts = [threading.Thread(target=lambda: out.append(sum(range(10 ** 5)))) for _ in range(4)]\n[t.start() for t in ts]\n[t.join() for t in ts]\nassert len(out) == 4\nblock = bytearray(b'1') * (64 << 20)\n",
    );
    let mut programs = vec![
        // One process past its share of the cap.
        program("block = bytearray(b'1') * (200 << 20)\n"),
        program(memory_probes::FILL_EVERY_PLACE),
        program(memory_probes::SIX_CHILDREN_OF_900_MB),
    ];
    programs.extend(std::iter::repeat_n(ordinary, 12));
    let results = sandbox.run_many(&programs);
    for r in &results {
        for line in r.stdout_tail.lines().filter(|l| l.starts_with("dlm-")) {
            println!("{line}");
        }
    }
    for (i, r) in results.iter().enumerate().skip(1) {
        assert!(r.outcome.passed(), "program {i}: {r:?}");
    }
    assert_eq!(
        results[0].outcome.cause(),
        Some(&Cause::MemoryLimit),
        "{:?}",
        results[0]
    );
    assert_eq!(results[0].outcome.stage(), Some(Stage::Sample));
}

#[test]
fn a_memory_cap_below_the_minimum_is_refused() {
    let err = dlm_code::Sandbox::new(
        true,
        SandboxConfig {
            memory_bytes: 100 << 20,
            ..SandboxConfig::default()
        },
    )
    .unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("memory_bytes must be at least"), "{msg}");
}
