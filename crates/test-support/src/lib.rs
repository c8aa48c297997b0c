//! Test-only helpers shared by the workspace's test suites (a dev-dependency only): what an
//! attacker does to a file so that the structural checks must catch the change (recompute the
//! CRC32 trailer, forge a CRC-32C), two deterministic generators for test data (SplitMix64 for
//! inputs, [`CountingRng`] where an API wants a `CryptoRng`), the interop tests' runner of the
//! Python implementations ([`python_ok`]), and the table-driven helpers of the known-answer files
//! ([`check_fail_vectors`], [`replay_corpus`], [`write_vectors`] and [`check_vectors`]).

mod counting_rng;
mod interop;
mod moto;
mod vectors;

pub use counting_rng::CountingRng;
pub use interop::{python, python_ok};
pub use moto::MotoServer;
pub use vectors::{
    FailVector, check_fail_vectors, check_vectors, fail_vectors, replay_corpus, write_vectors,
};

/// Recomputes the CRC32 trailer (the last four bytes, little-endian) of an envelope file after a
/// change, as an attacker would: the checksum detects accidents, not tampering.
///
/// # Panics
/// If `bytes` is shorter than the trailer.
pub fn fix_crc32_trailer(bytes: &mut [u8]) {
    let end = bytes.len() - 4;
    let crc = crc32(&bytes[..end]);
    bytes[end..].copy_from_slice(&crc.to_le_bytes());
}

/// CRC-32 (IEEE, the envelope's trailer), bit by bit: an oracle independent of the `crc32fast`
/// the crates under test use.
#[must_use]
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFF_u32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// The CRC-32C lookup table (reflected polynomial 0x82F63B78).
fn crc32c_table() -> [u32; 256] {
    let mut table = [0u32; 256];
    for (i, entry) in (0u32..).zip(table.iter_mut()) {
        let mut crc = i;
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0x82F6_3B78
            } else {
                crc >> 1
            };
        }
        *entry = crc;
    }
    table
}

/// Overwrites `data[at..at + 4]` so that `crc32c(data)` becomes `target`: what an attacker who
/// rewrites a chunk does so that its CRC-32C still matches the index (CRCs are not MACs). CRC is
/// affine over GF(2): the state wanted after the four bytes is found by running the suffix
/// backwards from the final state, then the four table indices leading to it select the bytes.
///
/// # Panics
/// If `at + 4` is past the end of `data`.
pub fn forge_crc32c(data: &mut [u8], at: usize, target: u32) {
    let table = crc32c_table();
    let index = |crc: u32, byte: u8| usize::from((crc ^ u32::from(byte)).to_le_bytes()[0]);
    let update = |crc: u32, byte: u8| (crc >> 8) ^ table[index(crc, byte)];
    let top = |crc: u32| {
        (0..256usize)
            .find(|&j| table[j] >> 24 == crc >> 24)
            .expect("the top bytes of the table are distinct")
    };
    let low = |value: usize| u32::from(value.to_le_bytes()[0]);
    let mut wanted = !target;
    for &byte in data[at + 4..].iter().rev() {
        let j = top(wanted);
        wanted = ((wanted ^ table[j]) << 8) | ((low(j) ^ u32::from(byte)) & 0xff);
    }
    let mut indices = [0usize; 4];
    let mut state = wanted;
    for k in (0..4).rev() {
        indices[k] = top(state);
        state = (state ^ table[indices[k]]) << 8;
    }
    let mut crc = data[..at]
        .iter()
        .fold(!0u32, |crc, &byte| update(crc, byte));
    for (k, &j) in indices.iter().enumerate() {
        let byte = (crc ^ low(j)).to_le_bytes()[0];
        data[at + k] = byte;
        crc = update(crc, byte);
    }
    debug_assert_eq!(crc32c::crc32c(data), target);
}

/// `good` (a verified STREAMING envelope file of `format`) with chunk `chunk`'s stored bytes
/// replaced by `replacement` (the same length), whose last four bytes are forged so that the
/// chunk's CRC-32C in the index still matches, and the CRC32 trailer fixed: a same-length file
/// that every structural check accepts, made without any key. Its signature, if any, no longer
/// matches.
///
/// # Panics
/// If `good` is not such a file, has no chunk `chunk`, or `replacement` is of another length.
#[must_use]
pub fn forge_chunk(
    good: &[u8],
    format: envelope_core::Format,
    chunk: usize,
    replacement: &[u8],
) -> Vec<u8> {
    let envelope = envelope_core::Envelope::parse(good, format).expect("a verified file");
    let payload = envelope
        .layout()
        .span(envelope_core::Section::Payload)
        .expect("a payload");
    let entry = envelope.chunk_index().expect("a STREAMING file").entries()[chunk];
    let start = usize::try_from(payload.offset + entry.stored_offset).expect("in memory");
    let end = start + replacement.len();
    assert_eq!(
        u64::try_from(replacement.len()).ok(),
        Some(entry.stored_size)
    );
    let mut data = replacement.to_vec();
    let at = data.len() - 4;
    forge_crc32c(&mut data, at, entry.stored_crc32c);
    let mut forged = good.to_vec();
    forged[start..end].copy_from_slice(&data);
    fix_crc32_trailer(&mut forged);
    forged
}

/// Where `section` is in the verified envelope file `bytes` (of either format), as a byte range:
/// what a test edits to tamper with one section.
///
/// # Panics
/// If `bytes` is not a verified file or has no such section.
#[must_use]
pub fn section_range(bytes: &[u8], section: envelope_core::Section) -> core::ops::Range<usize> {
    let span = envelope_core::Envelope::parse_any(bytes)
        .expect("a verified file")
        .layout()
        .span(section)
        .unwrap_or_else(|| panic!("no {section} section"));
    let start = usize::try_from(span.offset).expect("in memory");
    let end = usize::try_from(span.end()).expect("in memory");
    start..end
}

/// The stored bytes of chunk `chunk` of a verified STREAMING envelope file of `format`.
///
/// # Panics
/// If `bytes` is not such a file or has no chunk `chunk`.
#[must_use]
pub fn stored_chunk(bytes: &[u8], format: envelope_core::Format, chunk: usize) -> Vec<u8> {
    envelope_core::Envelope::parse(bytes, format)
        .expect("a verified file")
        .chunk(chunk)
        .expect("a chunk")
        .to_vec()
}

/// SplitMix64: a tiny deterministic generator for test inputs.
#[derive(Debug, Clone)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forged_data_has_the_target_crc_wherever_the_four_bytes_are() {
        let mut rng = SplitMix64(1);
        for len in [4usize, 5, 8, 100, 1000] {
            for at in [0, (len - 4) / 2, len - 4] {
                let mut data: Vec<u8> = (0..len).map(|_| rng.next_u64().to_le_bytes()[0]).collect();
                let target = u32::try_from(rng.next_u64() >> 32).unwrap();
                forge_crc32c(&mut data, at, target);
                assert_eq!(crc32c::crc32c(&data), target, "len {len} at {at}");
            }
        }
    }

    #[test]
    fn the_fixed_trailer_is_the_crc32_of_the_rest() {
        let mut bytes = b"hello world\0\0\0\0".to_vec();
        fix_crc32_trailer(&mut bytes);
        assert_eq!(&bytes[11..], &crc32fast::hash(b"hello world").to_le_bytes());
    }
}
