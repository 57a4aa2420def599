//! A hash that never changes: the same value on every platform, build and Rust version
//! (`std`'s hashers promise none of that). The harness seeds its bootstraps with it and plugins
//! fingerprint the files they read, so both sides use this one definition.

/// FNV-1a, 64-bit (Fowler, Noll, Vo), of `bytes`.
pub fn fnv1a_64(bytes: impl IntoIterator<Item = u8>) -> u64 {
    bytes.into_iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_published_test_vectors() {
        // From the FNV reference test suite (isthe.com/chongo/tech/comp/fnv, FNV-1a 64).
        assert_eq!(fnv1a_64(*b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a_64(*b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a_64(*b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn a_chained_stream_hashes_as_one() {
        assert_eq!(
            fnv1a_64("unitTER".bytes()),
            fnv1a_64("unit".bytes().chain("TER".bytes()))
        );
    }
}
