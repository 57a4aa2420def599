//! Peak memory of loading a checkpoint folder: prints the process's peak resident memory
//! (VmHWM) before and after `Checkpoint::open`, the weights' size and the largest tensor.
//! On `flex` the device is host memory, so the weights themselves count once; loading adds
//! at most the largest tensor (read on its own) on top, never a second copy of the file.
//!
//! Run: `cargo run --release -p dlm-hf --example load_peak -- DIR [f32|bf16]`.

use burn::tensor::Device;
use dlm_hf::checkpoint::parse_dtype;
use dlm_hf::Checkpoint;
use std::path::PathBuf;

/// A `/proc/self/status` field in MiB (Linux only; 0 elsewhere).
fn status_mib(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next().map(PathBuf::from) else {
        eprintln!("usage: load_peak DIR [f32|f16|bf16]");
        std::process::exit(2);
    };
    let dtype = match parse_dtype(args.next().as_deref()) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let file_mib: f64 = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().ends_with(".safetensors"))
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len() as f64 / 1048576.0)
                .sum()
        })
        .unwrap_or(0.0);
    let before = status_mib("VmHWM:");
    let ckpt = match Checkpoint::open(&dir, &Device::flex(), "cpu", dtype, None) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let after = status_mib("VmHWM:");
    let now = status_mib("VmRSS:");
    let mib = |b: usize| b as f64 / 1048576.0;
    println!("safetensors files:       {file_mib:8.1} MiB");
    println!(
        "weights on the device:   {:8.1} MiB ({dtype:?})",
        mib(ckpt.stats.device_bytes)
    );
    println!(
        "largest tensor read:     {:8.1} MiB",
        mib(ckpt.stats.largest_tensor_bytes)
    );
    println!("peak RSS before loading: {before:8.1} MiB");
    println!(
        "peak RSS after loading:  {after:8.1} MiB (+{:.1} MiB; RSS now {now:.1} MiB)",
        after - before
    );
}
