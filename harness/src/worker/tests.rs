use super::supervise::log_tail;
use super::*;

#[test]
fn sizes_and_limits() {
    assert_eq!(format_bytes(8 << 30), "8 GiB");
    assert_eq!(format_bytes(3 << 29), "1.5 GiB");
    assert_eq!(format_bytes(300 << 20), "300 MiB");
    let default = default_memory_limit();
    assert!(default > 0 && default <= 16 << 30, "{default}");
    let limits = Limits::from(Duration::from_secs(1));
    assert_eq!(limits.memory, Some(default));
    assert!(!limits.memory_from_suite);
    assert_eq!(limits.output, OUTPUT_LIMIT);
    let none = Limits::new(Duration::from_secs(1), MemoryLimit::Unlimited);
    assert_eq!(none.memory, None);
}

#[test]
fn log_tail_reads_the_end_and_cuts_long_lines() {
    let dir = std::env::temp_dir().join(format!("dlm-bench-log-tail-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("x.log");
    let mut text = "early\n".repeat(100_000);
    text.push_str(&"y".repeat(10_000));
    text.push_str("\nlast line\n");
    std::fs::write(&path, text).unwrap();
    let tail = log_tail(&path, 3);
    assert!(
        tail.contains("last line") && tail.contains("yyy…"),
        "{tail}"
    );
    assert!(tail.len() < 1000, "{}", tail.len());
    let _ = std::fs::remove_dir_all(&dir);
}
