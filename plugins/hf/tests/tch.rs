//! LibTorch's device names in dlm-hf (the `tch` feature only; tools/tch/test.sh runs it): `tch`
//! and `tch:cpu` are the same device and label, a CUDA index LibTorch does not see or a name it
//! does not know is refused with a message rather than a panic at the first tensor.

use dlm_hf::plugin::parse_device;

#[test]
fn tch_device_names_are_checked() {
    let (cpu, label) = parse_device(Some("tch:cpu")).unwrap();
    assert_eq!(label, "tch:cpu");
    let (short, short_label) = parse_device(Some("tch")).unwrap();
    assert_eq!((cpu, label), (short, short_label));
    let gpus = tch::Cuda::device_count();
    let err = parse_device(Some(&format!("tch:cuda:{gpus}"))).unwrap_err();
    assert!(err.to_string().contains("CUDA device"), "{err}");
    for bad in ["tch:gpu", "tch:cuda:x", "tch:cuda0"] {
        let err = parse_device(Some(bad)).unwrap_err();
        assert!(err.to_string().contains("tch:cuda:N"), "{bad}: {err}");
    }
}
