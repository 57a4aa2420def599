//! The hostile-program corpus, run in the real bubblewrap sandbox.
//!
//! Three kinds of program:
//! * **resource / crash** programs must fail with the stated cause;
//! * **fake-pass** programs define a wrong `f` and try to make the run count as passed anyway;
//!   they must fail (0 false passes);
//! * **containment probes** attempt an escape (read or write host files, reach the host's
//!   loopback, see host processes, gain privileges) and assert *inside* that it failed; they must
//!   pass, and the host side is checked too (no file appeared, no connection arrived, no process
//!   outlived its sample, the host's python3 is still there).
//!
//! Everything runs in one test function so that the "no survivors" scan of /proc is not
//! confused by sandboxes of other tests in this binary.
mod common;
mod memory_probes;

use std::io::Read;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use dlm_code::sandbox::MemoryCap;
use dlm_code::{Cause, Outcome, SandboxConfig, Stage, TestProgram};

/// The tests every corpus program is judged with: `f` must square its argument.
fn square_tests() -> Vec<String> {
    vec!["assert f(2) == 4".into(), "assert f(3) == 9".into()]
}

const GOOD_F: &str = "def f(x):\n    return x * x\n";
const WRONG_F: &str = "def f(x):\n    return 0\n";

#[derive(Clone, Copy)]
enum Expect {
    Pass,
    /// Any failure whose cause satisfies the predicate.
    Fail(fn(&Cause) -> bool, &'static str),
    /// Fails at the given stage with a cause satisfying the predicate.
    FailAt(Stage, fn(&Cause) -> bool, &'static str),
}

struct Case {
    name: &'static str,
    sample: String,
    expect: Expect,
}

fn case(name: &'static str, sample: impl Into<String>, expect: Expect) -> Case {
    Case {
        name,
        sample: sample.into(),
        expect,
    }
}

fn time_limit(c: &Cause) -> bool {
    matches!(c, Cause::Timeout | Cause::CpuTimeLimit)
}
fn not_pass(_: &Cause) -> bool {
    true
}
fn assertion(c: &Cause) -> bool {
    matches!(c, Cause::AssertionError { .. })
}

fn with_good(s: &str) -> String {
    format!("{s}\n{GOOD_F}")
}
fn with_wrong(s: &str) -> String {
    format!("{s}\n{WRONG_F}")
}

/// The whole corpus: resources and crashes, fake passes, containment probes, a benign program.
fn corpus(marker: &str, port: u16, host_file: &str, home_bashrc: &str) -> Vec<Case> {
    let mut cases = resource_cases();
    cases.extend(fake_pass_cases());
    cases.extend(containment_cases(marker, port, host_file, home_bashrc));
    cases.push(case("benign", GOOD_F, Expect::Pass));
    cases
}

/// Programs that exhaust a resource or crash: each must fail with the stated cause.
fn resource_cases() -> Vec<Case> {
    use Expect::*;
    vec![
        case(
            "fork bomb",
            with_good("import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"),
            Fail(|c| time_limit(c) || matches!(c, Cause::KilledBySignal { .. }), "timeout / CPU limit"),
        ),
        case(
            "memory bomb (one 8 GiB allocation)",
            with_good("x = bytearray(8 << 30)\n"),
            FailAt(Stage::Sample, |c| *c == Cause::MemoryLimit, "memory limit"),
        ),
        case(
            "memory bomb (growing list)",
            with_good("l = []\nwhile True:\n    l.append(' ' * (10 ** 7))\n"),
            // Touching 512 MiB page by page can outlast the timeout on a loaded 2-core box.
            Fail(|c| *c == Cause::MemoryLimit || time_limit(c), "memory limit (or time limit)"),
        ),
        case("infinite loop", with_good("while True:\n    pass\n"), Fail(time_limit, "timeout / CPU limit")),
        case(
            "CPU spin in 4 threads",
            with_good("import threading\ndef spin():\n    while True:\n        pass\nfor _ in range(4):\n    threading.Thread(target=spin).start()\nspin()\n"),
            Fail(time_limit, "timeout / CPU limit"),
        ),
        case(
            "sleep forever with SIGTERM ignored",
            with_good("import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(1000)\n"),
            Fail(|c| *c == Cause::Timeout, "timeout"),
        ),
        case(
            "huge stdout",
            with_good("while True:\n    print('x' * 1000)\n"),
            Fail(|c| *c == Cause::OutputLimit, "output limit"),
        ),
        case(
            "huge stderr",
            with_good("import os\nwhile True:\n    os.write(2, b'y' * 65536)\n"),
            Fail(|c| *c == Cause::OutputLimit, "output limit"),
        ),
        case(
            "fill the disk: one huge file (fsize rlimit)",
            with_good("with open('big', 'wb') as fh:\n    for _ in range(200):\n        fh.write(b'z' * (1 << 20))\n"),
            FailAt(Stage::Sample, |c| *c == Cause::FileSizeLimit, "file size limit"),
        ),
        case(
            "fill the disk: many files (tmpfs size)",
            with_good("i = 0\nwhile True:\n    with open('f%d' % i, 'wb') as fh:\n        fh.write(b'z' * (15 << 20))\n    i += 1\n"),
            FailAt(Stage::Sample, |c| matches!(c, Cause::Exception { type_name, message } if type_name == "OSError" && message.contains("[Errno 28]")), "OSError ENOSPC"),
        ),
        case(
            "ctypes segfault",
            with_good("import ctypes\nctypes.string_at(0)\n"),
            Fail(|c| *c == Cause::KilledBySignal { signal: 11 }, "killed by SIGSEGV"),
        ),
        case(
            "recursion bomb",
            "def f(x):\n    return f(x) + 1\n",
            FailAt(Stage::Test(0), |c| matches!(c, Cause::Exception { type_name, .. } if type_name == "RecursionError"), "RecursionError"),
        ),
        case(
            "syntax error",
            "def f(x)\n    return x * x\n",
            FailAt(Stage::Sample, |c| matches!(c, Cause::SyntaxError { .. }), "syntax error"),
        ),
        case(
            "os.kill(0, SIGKILL): own process group",
            with_good("import os, signal\nos.kill(0, signal.SIGKILL)\n"),
            Fail(|c| *c == Cause::KilledBySignal { signal: 9 }, "killed by SIGKILL"),
        ),
        case(
            "os.kill(-1, SIGKILL): every process it may signal",
            with_wrong("import os, signal\nos.kill(-1, signal.SIGKILL)\n"),
            Fail(not_pass, "not passed"),
        ),
        case(
            "os.kill of the parent (PID 1 of the namespace) + wrong f",
            with_wrong("import os, signal\nfor s in (signal.SIGKILL, signal.SIGTERM):\n    try:\n        os.kill(os.getppid(), s)\n    except OSError:\n        pass\n"),
            Fail(not_pass, "not passed"),
        ),
    ]
}

/// Programs with a wrong `f` that try to be counted as passed: each must fail.
fn fake_pass_cases() -> Vec<Case> {
    use Expect::*;
    vec![
        case("sys.exit(0) before the asserts", with_wrong("import sys\nsys.exit(0)\n"),
            FailAt(Stage::Sample, |c| matches!(c, Cause::Exception { type_name, .. } if type_name == "SystemExit"), "SystemExit")),
        case("os._exit(0) before the asserts", with_wrong("import os\nos._exit(0)\n"),
            Fail(|c| *c == Cause::ExitedEarly { code: 0 }, "exited early (0)")),
        case(
            "os._exit(0) from a thread during the tests",
            "import os, threading, time\ndef f(x):\n    threading.Thread(target=lambda: os._exit(0)).start()\n    time.sleep(0.5)\n    return 0\n",
            Fail(|c| assertion(c) || matches!(c, Cause::ExitedEarly { code: 0 }), "assertion / exited early"),
        ),
        case(
            "monkeypatch builtins (exec, compile, AssertionError, print, range, len)",
            with_wrong("import builtins\nbuiltins.exec = lambda *a, **k: None\nbuiltins.compile = lambda *a, **k: None\nclass E(Exception): pass\nbuiltins.AssertionError = E\nbuiltins.print = lambda *a, **k: None\nbuiltins.range = lambda *a: []\nbuiltins.len = lambda x: 0\n"),
            FailAt(Stage::Test(0), assertion, "AssertionError at test 0"),
        ),
        case(
            "always-equal object (__eq__ returns True)",
            "class AlwaysEqual:\n    def __eq__(self, other):\n        return True\n    def __ne__(self, other):\n        return False\n    __hash__ = object.__hash__\ndef f(x):\n    return AlwaysEqual()\n",
            FailAt(Stage::Test(0), assertion, "AssertionError at test 0"),
        ),
        case(
            "always-equal int subclass",
            "class AE(int):\n    def __eq__(self, other):\n        return True\n    __hash__ = int.__hash__\ndef f(x):\n    return AE(0)\n",
            FailAt(Stage::Test(0), assertion, "AssertionError at test 0"),
        ),
        case(
            "sys.excepthook / sys.stderr replaced, atexit os._exit(0)",
            with_wrong("import sys, os, atexit\nsys.excepthook = lambda *a: None\nsys.stderr = open(os.devnull, 'w')\natexit.register(lambda: os._exit(0))\n"),
            FailAt(Stage::Test(0), assertion, "AssertionError at test 0"),
        ),
        case(
            "print forged pass tokens (from stdin, cmdline, environ, cwd)",
            with_wrong("import os, re, sys\nblob = sys.stdin.read()\nfor p in ('/proc/self/cmdline', '/proc/self/environ', '/proc/1/cmdline', '/proc/1/environ'):\n    try:\n        blob += open(p, 'rb').read().decode('latin-1')\n    except OSError:\n        pass\nfor n in os.listdir('.'):\n    blob += open(n).read()\nfor h in re.findall('[0-9a-f]{8,}', blob):\n    print('DLM-PASS-' + h)\nprint('DLM-PASS-')\nos._exit(0)\n"),
            Fail(not_pass, "not passed"),
        ),
        case(
            "os.execv a fresh python that exits 0",
            with_wrong("import os\nos.execv('/usr/bin/python3', ['python3', '-c', 'print(\"DLM-PASS-\")'])\n"),
            Fail(|c| *c == Cause::ExitedEarly { code: 0 }, "exited early (0)"),
        ),
        case(
            "redefine assert-adjacent names (__debug__, AssertionError in module)",
            with_wrong("AssertionError = None\nimport builtins\nbuiltins.__dict__['__debug__'] = False\n"),
            FailAt(Stage::Test(0), assertion, "AssertionError at test 0"),
        ),
    ]
}

/// Escape attempts that assert inside that they failed: each must pass.
fn containment_cases(marker: &str, port: u16, host_file: &str, home_bashrc: &str) -> Vec<Case> {
    use Expect::*;
    vec![
        case(
            "write outside its directory",
            with_good(&format!(
                "import os\nfor p in ('/usr/dlm-escape', '/etc/dlm-escape', '/dlm-escape', '/proc/dlm-escape', {host_file:?}, '/work/dlm-escape'):\n    try:\n        open(p, 'w').write('x')\n        raise SystemExit('wrote ' + p)\n    except OSError:\n        pass\nopen('/sandbox/ok', 'w').write('fine')\nopen('/tmp/ok', 'w').write('fine')\n"
            )),
            Pass,
        ),
        case(
            "read the harness's files",
            with_good(&format!(
                "import os\nfor p in ('/work/main/Cargo.toml', '/root/.bashrc', {home_bashrc:?}, '/etc/passwd', '/etc/shadow', '/etc/hostname', '/home', '/root', '/work', '/var'):\n    assert not os.path.exists(p), p\n    try:\n        open(p).read()\n        raise SystemExit('read ' + p)\n    except OSError:\n        pass\nassert not any(x in os.listdir('/') for x in ('work', 'root', 'home', 'etc', 'var')), os.listdir('/')\n"
            )),
            Pass,
        ),
        case(
            "TCP connect to a server the test runs on the host's 127.0.0.1",
            with_good(&format!(
                "import socket\nfor host in ('127.0.0.1', 'localhost'):\n    s = socket.socket()\n    s.settimeout(2)\n    try:\n        s.connect((host, {port}))\n        raise SystemExit('connected to ' + host)\n    except OSError:\n        pass\n"
            )),
            Pass,
        ),
        case(
            "setsid + double fork to outlive the sample",
            with_good(&format!(
                "import os\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        os.execv('/usr/bin/python3', ['python3', '-c', 'import time; time.sleep(30)', {marker:?}])\n    os._exit(0)\nos.wait()\n"
            )),
            Pass,
        ),
        case(
            "/proc snooping: only its own namespace",
            with_good("import os, socket\npids = [p for p in os.listdir('/proc') if p.isdigit()]\nassert len(pids) <= 3, pids\nassert socket.gethostname() == 'sandbox'\nassert os.getuid() == 65534 and os.geteuid() == 65534\nassert sorted(os.environ) == ['HOME', 'LANG', 'PATH'] or set(os.environ) <= {'HOME', 'LANG', 'PATH', 'PWD'}, dict(os.environ)\nassert open('/proc/1/cmdline', 'rb').read().split(b'\\0')[0].endswith(b'bwrap')\n"),
            Pass,
        ),
        case(
            "delete host files",
            with_good("import os, shutil\nfor p in ('/usr/bin/python3', '/usr/bin/prlimit'):\n    try:\n        os.remove(p)\n        raise SystemExit('removed ' + p)\n    except OSError:\n        pass\nshutil.rmtree('/usr/lib/python3', ignore_errors=True)\nassert os.path.exists('/usr/lib/python3')\n"),
            Pass,
        ),
        case(
            "gain privileges: setuid(0), new user namespace, mount",
            with_good("import os, ctypes\ntry:\n    os.setuid(0)\n    raise SystemExit('setuid(0) worked')\nexcept OSError:\n    pass\nlibc = ctypes.CDLL(None, use_errno=True)\nassert libc.unshare(0x10000000) != 0, 'new user namespace'\nassert libc.mount(b'none', b'/sandbox', b'tmpfs', 0, None) != 0, 'mount'\nassert os.system('true') == 0\n"),
            Pass,
        ),
    ]
}

/// The whole-sandbox caps: writing 1 GB anywhere and six children of 900 MB must fail. Memory
/// that no process maps is capped only by a cgroup: without one (`rlimits`), SysV segments are
/// a known gap (docs/sandbox.md), so that case runs only under a cgroup.
fn memory_cases(cap: &MemoryCap, cap_bytes: u64) -> Vec<Case> {
    let mut cases = vec![
        case(
            "write 1 GB to every writable place (/sandbox, /tmp, /dev, /dev/shm, every mount)",
            with_good(memory_probes::FILL_EVERY_PLACE),
            Expect::Pass,
        ),
        case(
            "six children of 900 MB each",
            with_good(memory_probes::SIX_CHILDREN_OF_900_MB),
            Expect::Pass,
        ),
    ];
    if cap.is_cgroup() {
        cases.push(case(
            "more than the cap in SysV shared memory and in memfds",
            with_good(&memory_probes::fill_unmapped_memory(cap_bytes)),
            // The cgroup's OOM killer stops it at the cap.
            Expect::Fail(|c| *c == Cause::MemoryLimit, "memory limit"),
        ));
    } else {
        println!("memory cap: rlimits; SysV shared memory is not capped (docs/sandbox.md)");
    }
    cases
}

fn check(case: &Case, outcome: &Outcome) -> Result<(), String> {
    let ok = match (&case.expect, outcome) {
        (Expect::Pass, Outcome::Passed) => true,
        (Expect::Fail(pred, _), Outcome::Failed { cause, .. }) => pred(cause),
        (Expect::FailAt(stage, pred, _), Outcome::Failed { stage: s, cause }) => {
            s == stage && pred(cause)
        }
        _ => false,
    };
    let want = match case.expect {
        Expect::Pass => "passed".to_string(),
        Expect::Fail(_, d) => d.to_string(),
        Expect::FailAt(s, _, d) => format!("{d} ({s:?})"),
    };
    if ok {
        Ok(())
    } else {
        Err(format!("{}: expected {want}, got {outcome:?}", case.name))
    }
}

/// Processes on this host (outside any sandbox view) whose command line contains `needle`.
fn processes_with(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = e.file_name();
        if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            if String::from_utf8_lossy(&cmd).contains(needle) {
                found.push(format!(
                    "pid {}: {}",
                    name.to_string_lossy(),
                    String::from_utf8_lossy(&cmd).replace('\0', " ")
                ));
            }
        }
    }
    found
}

/// Live (non-zombie) processes running as `uid` (real uid), from /proc/*/status.
fn processes_of_uid(uid: u32) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(status) = std::fs::read_to_string(e.path().join("status")) {
            let real = status
                .lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|u| u.parse::<u32>().ok());
            // Zombies run no code: bwrap's monitor exits without reaping the namespace's PID 1
            // (already dead, with everything in its namespace), which the host's init reaps.
            let zombie = status
                .lines()
                .any(|l| l.starts_with("State:") && l.contains('Z'));
            if real == Some(uid) && !zombie {
                found.push(status.lines().take(3).collect::<Vec<_>>().join(" "));
            }
        }
    }
    found
}

fn test_config() -> SandboxConfig {
    SandboxConfig {
        timeout: Duration::from_secs(4),
        cpu_seconds: 2,
        address_space_bytes: 512 << 20,
        ..SandboxConfig::default()
    }
}

/// Runs `cases` (each against [`square_tests`]), prints a table and returns the unexpected
/// outcomes; `show` prints more about each result.
fn run_and_check(
    sandbox: &dlm_code::Sandbox,
    cases: &[Case],
    show: impl Fn(&dlm_code::ExecResult),
) -> Vec<String> {
    let programs: Vec<TestProgram> = cases
        .iter()
        .map(|c| TestProgram {
            sample: c.sample.clone(),
            tests: square_tests(),
            ..Default::default()
        })
        .collect();
    let started = Instant::now();
    let results = sandbox.run_many(&programs);
    let elapsed = started.elapsed();
    let mut failures = Vec::new();
    println!("| # | program | outcome | wall |");
    println!("|---|---|---|---|");
    for (i, (c, r)) in cases.iter().zip(&results).enumerate() {
        println!(
            "| {} | {} | {} | {:.2} s |",
            i + 1,
            c.name,
            r.outcome.summary(),
            r.wall.as_secs_f64()
        );
        show(r);
        if let Err(e) = check(c, &r.outcome) {
            failures.push(format!("{e}\n  stderr tail: {}", r.stderr_tail));
        }
    }
    println!(
        "{} programs ran in {:.1} s",
        cases.len(),
        elapsed.as_secs_f64()
    );
    failures
}

/// The default limits (1 GiB of address space per process, 1 GiB for the whole sandbox), a
/// longer timeout for touching GBs.
fn memory_config() -> SandboxConfig {
    SandboxConfig {
        timeout: Duration::from_secs(20),
        ..SandboxConfig::default()
    }
}

#[test]
fn hostile_corpus() {
    let Some(sandbox) = common::sandbox(test_config()) else {
        return;
    };
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let marker = format!("dlm-survivor-{}-{}", std::process::id(), port);
    // Not under /tmp: the sandbox has its own (empty, writable) /tmp.
    let host_file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("dlm-escape-{}", std::process::id()))
        .display()
        .to_string();
    let home_bashrc = format!(
        "{}/.bashrc",
        std::env::var("HOME").unwrap_or_else(|_| "/root".into())
    );
    let cases = corpus(&marker, port, &host_file, &home_bashrc);
    assert!(cases.len() >= 30, "{} cases", cases.len());
    let mut failures = run_and_check(&sandbox, &cases, |_| {});
    // The memory caps, in a sandbox whose per-process address space (1 GiB) would let one
    // 900 MB child through: only the whole-sandbox cap can stop six.
    let memory = common::sandbox(memory_config()).expect("the same sandbox, other limits");
    println!("memory cap: {}", memory.memory_cap().label());
    failures.extend(run_and_check(
        &memory,
        &memory_cases(memory.memory_cap(), memory.config().memory_bytes),
        |r| {
            for line in r.stdout_tail.lines().filter(|l| l.starts_with("dlm-")) {
                println!("  -> {line}");
            }
        },
    ));
    assert!(
        failures.is_empty(),
        "{} unexpected outcomes:\n{}",
        failures.len(),
        failures.join("\n")
    );

    // Host-side checks: nothing got out.
    let mut stream_accepted = false;
    match listener.accept() {
        Ok((mut s, _)) => {
            let mut buf = Vec::new();
            let _ = s.read_to_end(&mut buf);
            stream_accepted = true;
        }
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock),
    }
    assert!(
        !stream_accepted,
        "a sandboxed program reached the host's 127.0.0.1:{port}"
    );
    assert!(
        !std::path::Path::new(&host_file).exists(),
        "a sandboxed program wrote {host_file}"
    );
    assert!(std::path::Path::new("/usr/bin/python3").exists());
    // The double-forked sleeper would live 30 s; give the kernel a moment to reap.
    std::thread::sleep(Duration::from_millis(300));
    let survivors = processes_with(&marker);
    assert!(
        survivors.is_empty(),
        "processes outlived their sample: {survivors:?}"
    );
    if std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false)
    {
        let nobody = processes_of_uid(sandbox.config().drop_uid);
        assert!(
            nobody.is_empty(),
            "sandbox processes left running: {nobody:?}"
        );
    }

    // A benign program still passes after all of that.
    let after = sandbox.run(&TestProgram {
        sample: GOOD_F.into(),
        tests: square_tests(),
        ..Default::default()
    });
    assert!(after.outcome.passed(), "{after:?}");
}

#[test]
fn refuses_without_opt_in_or_without_bwrap() {
    let err = dlm_code::Sandbox::new(false, SandboxConfig::default()).unwrap_err();
    assert!(matches!(err, dlm_code::SandboxError::NotAllowed), "{err}");
    let err = dlm_code::Sandbox::new(
        true,
        SandboxConfig {
            bwrap: "/nonexistent/bwrap".into(),
            ..SandboxConfig::default()
        },
    )
    .unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("tools/install-sandbox.sh"), "{msg}");
    assert!(msg.contains("no unsandboxed fall-back"), "{msg}");
}

#[test]
fn failing_test_index_and_challenge_semantics() {
    let Some(sandbox) = common::sandbox(test_config()) else {
        return;
    };
    let p = TestProgram {
        sample: "def f(x):\n    return x * x if x < 3 else -1\n".into(),
        tests: vec![
            "assert f(1) == 1".into(),
            "assert f(2) == 4".into(),
            "assert f(3) == 9, 'three'".into(),
        ],
        ..Default::default()
    };
    let r = sandbox.run(&p);
    assert_eq!(
        r.outcome,
        Outcome::Failed {
            stage: Stage::Test(2),
            cause: Cause::AssertionError {
                message: "three".into()
            }
        }
    );
    let p = TestProgram {
        sample: GOOD_F.into(),
        tests: vec!["assert f(2) == 4".into(), "assert g(1)".into()],
        ..Default::default()
    };
    let r = sandbox.run(&p);
    assert_eq!(r.outcome.stage(), Some(Stage::Test(1)));
    assert!(
        matches!(r.outcome.cause(), Some(Cause::Exception { type_name, .. }) if type_name == "NameError")
    );
    // Output is allowed below the cap; unicode survives the trip.
    let p = TestProgram {
        sample: "print('héllo ✓')\ndef f(x):\n    return x * x\n".into(),
        tests: square_tests(),
        ..Default::default()
    };
    let r = sandbox.run(&p);
    assert!(r.outcome.passed(), "{r:?}");
    assert!(r.stdout_tail.contains("héllo ✓"));
}
