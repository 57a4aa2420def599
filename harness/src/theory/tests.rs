use super::ser::{crossing, Crossing};
use super::*;

fn close(a: f64, b: f64, tol: f64) {
    assert!((a - b).abs() <= tol, "{a} vs {b} (tolerance {tol})");
}

#[test]
fn crossing_interpolates_exactly_for_compounding_failures() {
    // SER_T = 1 − exp(−c/T) is a straight line in (ln T, ln(−ln(1−SER))): the
    // interpolated crossing is exact between any two grid points that bracket it.
    let c: f64 = 30.0;
    let curve: Vec<(f64, f64)> = [4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0]
        .iter()
        .map(|&t| (t, 1.0 - (-c / t).exp()))
        .collect();
    let exact = c / -(0.9f64).ln();
    let got = crossing(&curve, 0.1);
    close(got.value().unwrap(), exact, 1e-9 * exact);
    assert_eq!(got.bracket(), (Some(256), Some(512)));
    assert_eq!(crossing(&curve[..3], 0.1), Crossing::NotReached);
    assert_eq!(crossing(&curve[7..], 0.1), Crossing::NeverAbove);
    // A noisy dip below the target before the real crossing is skipped.
    let noisy = [
        (4.0, 0.5),
        (8.0, 0.09),
        (16.0, 0.2),
        (32.0, 0.05),
        (64.0, 0.0),
    ];
    let got = crossing(&noisy, 0.1);
    assert_eq!(got.bracket(), (Some(16), Some(32)));
    // SER 0 at the upper end: linear in ln T.
    let got = crossing(&[(8.0, 0.3), (16.0, 0.0)], 0.1).value().unwrap();
    close(got, (8f64.ln() + (0.2 / 0.3) * 2f64.ln()).exp(), 1e-9);
}

#[test]
fn interval_closed_form_steps() {
    // Parity (p_v = 1/2), 64 intervals: T ≥ 0.5 / (1 − 0.9^(1/64)) = 303.9…
    let t = interval_exact_steps(0.5, 64, 0.1);
    assert_eq!(t, 304);
    assert!(interval_exact_ser(0.5, 64, t) <= 0.1);
    assert!(interval_exact_ser(0.5, 64, t - 1) > 0.1);
    // One interval: SER_T = p_v/T ≤ 0.1 ⇔ T ≥ 5.
    assert_eq!(interval_exact_steps(0.5, 1, 0.1), 5);
}
