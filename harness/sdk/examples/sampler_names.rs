//! Prints the name of every sampler the SDK defines, one per line: the denoiser samplers of
//! its registry, then the autoregressive `ar`. The harness's test that no sampler name is
//! interpreted in its code (`tests/sampler_names.rs`) reads this list.

use dlm_sdk::sampler::{Ar, Registry, Sampler};

fn main() {
    for name in Registry::built_in().names() {
        println!("{name}");
    }
    println!("{}", Ar.name());
}
