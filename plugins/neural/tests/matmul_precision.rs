//! The flex matmul's error bound, whichever kernel the CPU picks (issue 34, item 2).
//!
//! The workspace builds Burn with `x86-v4`, so `gemm` takes its AVX-512 microkernel where the
//! CPU has AVX-512F and its AVX2/FMA one elsewhere. The two block the inner dimension
//! differently (`gemm` sizes the blocks from the register tile and the cache), so their sums
//! round differently and results are not bit-identical across machines. What both must meet is
//! the classical bound for a dot product summed in any order (Higham, *Accuracy and Stability
//! of Numerical Algorithms*, §3.1): `|ĉ − c| ≤ γ_k · Σ|a||b|` with `γ_k = k·u / (1 − k·u)`,
//! `u = 2⁻²⁴`. Inner sizes span one block and several (`gemm` blocks at 512 or more), batched
//! and not, with a transposed right operand as the models' `[in, out]` weights are.

use burn::tensor::{Device, Tensor, TensorData};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn random(rng: &mut ChaCha8Rng, len: usize) -> Vec<f32> {
    (0..len).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}

/// Checks `batch` products `[m, k] × [k, n]` against an f64 reference; `rhs_transposed` builds
/// the right operand as the transpose of a `[n, k]` tensor (a strided view for the kernel).
fn check(batch: usize, m: usize, k: usize, n: usize, rhs_transposed: bool) {
    let mut rng = ChaCha8Rng::seed_from_u64((batch * 1_000_003 + m * 7919 + k * 31 + n) as u64);
    let device = Device::flex();
    let a = random(&mut rng, batch * m * k);
    let b = random(&mut rng, batch * k * n); // row-major [batch, k, n]
    let lhs = Tensor::<3>::from_data(TensorData::new(a.clone(), [batch, m, k]), &device);
    let rhs = if rhs_transposed {
        let mut bt = vec![0f32; b.len()];
        for (dst, src) in bt.chunks_mut(k * n).zip(b.chunks(k * n)) {
            for kk in 0..k {
                for j in 0..n {
                    dst[j * k + kk] = src[kk * n + j];
                }
            }
        }
        Tensor::<3>::from_data(TensorData::new(bt, [batch, n, k]), &device).swap_dims(1, 2)
    } else {
        Tensor::<3>::from_data(TensorData::new(b.clone(), [batch, k, n]), &device)
    };
    let out: Vec<f32> = lhs.matmul(rhs).into_data().try_into_vec::<f32>().unwrap();
    assert_eq!(out.len(), batch * m * n);

    let u = f64::powi(2.0, -24);
    let gamma = k as f64 * u / (1.0 - k as f64 * u);
    let mut worst = 0f64; // largest error as a share of its bound
    for bi in 0..batch {
        for i in 0..m {
            for j in 0..n {
                let (mut exact, mut magnitude) = (0f64, 0f64);
                for kk in 0..k {
                    let x = a[(bi * m + i) * k + kk] as f64;
                    let y = b[(bi * k + kk) * n + j] as f64;
                    exact += x * y;
                    magnitude += (x * y).abs();
                }
                let got = out[(bi * m + i) * n + j] as f64;
                // The product's own rounding to f32 adds half an ulp of the result.
                let bound = gamma * magnitude + exact.abs() * u;
                let error = (got - exact).abs();
                assert!(
                    error <= bound,
                    "[{batch}×{m}×{k}×{n}, rhs transposed: {rhs_transposed}] element \
                     ({bi}, {i}, {j}): {got} against {exact}, error {error:e} above the bound \
                     {bound:e}"
                );
                worst = worst.max(error / bound);
            }
        }
    }
    eprintln!(
        "{batch}×{m}×{k}×{n} (rhs transposed: {rhs_transposed}): worst error {:.3} of the bound",
        worst
    );
}

#[test]
fn matmul_stays_within_the_summation_bound_on_either_kernel() {
    #[cfg(target_arch = "x86_64")]
    eprintln!(
        "kernel: {}",
        if std::arch::is_x86_feature_detected!("avx512f") {
            "AVX-512"
        } else if std::arch::is_x86_feature_detected!("fma") {
            "AVX2/FMA"
        } else {
            "scalar"
        }
    );
    // One block of the inner dimension.
    check(1, 64, 64, 64, false);
    check(3, 37, 200, 53, true);
    // Several blocks, and sizes that are no multiple of any register tile.
    check(1, 33, 1024, 257, true);
    check(2, 17, 3072, 65, false);
    // One query row, as a cached decoding step multiplies.
    check(4, 1, 1024, 300, true);
}
