//! CRC-32C (Castagnoli, the iSCSI polynomial 0x1EDC6F41, reflected 0x82F63B78) of chunk index
//! entries and prefixes (docs/envelope.md §4).
//!
//! With `std`, the `crc32c` crate (SSE 4.2 or the Armv8 CRC instructions, chosen at run time).
//! Without it (no_std targets such as thumbv7em-none-eabihf, where that crate does not build: it
//! uses `std` for CPU detection), a byte-at-a-time table built at compile time: a few hundred
//! MB/s, ample for a microcontroller's models, and the same values (tested against the crate).

/// CRC-32C of `bytes`.
pub(crate) fn crc32c(bytes: &[u8]) -> u32 {
    crc32c_append(0, bytes)
}

/// CRC-32C of the bytes behind `crc` followed by `bytes` (`crc` is the CRC-32C of what came before).
#[cfg(feature = "std")]
pub(crate) fn crc32c_append(crc: u32, bytes: &[u8]) -> u32 {
    ::crc32c::crc32c_append(crc, bytes)
}

/// CRC-32C of the bytes behind `crc` followed by `bytes` (`crc` is the CRC-32C of what came before).
#[cfg(not(feature = "std"))]
pub(crate) fn crc32c_append(crc: u32, bytes: &[u8]) -> u32 {
    software::append(crc, bytes)
}

/// The portable CRC-32C: the no_std implementation, compiled with `std` too so its tests compare
/// it with the hardware one.
#[cfg_attr(feature = "std", cfg(test))]
mod software {
    /// The reflected Castagnoli polynomial.
    const POLYNOMIAL: u32 = 0x82F6_3B78;

    /// CRC of each byte value, one entry per byte, computed at compile time.
    const TABLE: [u32; 256] = {
        let mut table = [0u32; 256];
        let mut byte: u32 = 0;
        while byte < 256 {
            let mut crc = byte;
            let mut bit = 0;
            while bit < 8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ POLYNOMIAL
                } else {
                    crc >> 1
                };
                bit += 1;
            }
            table[byte as usize] = crc;
            byte += 1;
        }
        table
    };

    /// As `crc32c_append`.
    pub(super) fn append(crc: u32, bytes: &[u8]) -> u32 {
        let mut crc = !crc;
        for &byte in bytes {
            crc = TABLE[usize::from(crc.to_le_bytes()[0] ^ byte)] ^ (crc >> 8);
        }
        !crc
    }
}

#[cfg(all(test, feature = "std"))]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// RFC 3720 B.4's check value ("123456789") and its 32 zero bytes.
    #[test]
    fn the_portable_crc32c_gives_the_rfc_3720_check_values() {
        assert_eq!(software::append(0, b"123456789"), 0xE306_9283);
        assert_eq!(software::append(0, &[0u8; 32]), 0x8A91_36AA);
    }

    proptest! {
        /// The no_std table gives the hardware crate's value for any bytes, split anywhere.
        #[test]
        fn the_portable_crc32c_equals_the_crate(bytes in proptest::collection::vec(any::<u8>(), 0..2048), cut in 0usize..2048) {
            let cut = cut.min(bytes.len());
            let (head, tail) = bytes.split_at(cut);
            let expected = ::crc32c::crc32c(&bytes);
            prop_assert_eq!(software::append(software::append(0, head), tail), expected);
            prop_assert_eq!(crc32c_append(crc32c(head), tail), expected);
        }
    }
}
