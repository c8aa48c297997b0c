//! Key derivations: every keyed value of the scheme, byte for byte (docs/watermark.md §2).
//!
//! Two primitives only. HMAC-SHA256 (RFC 2104 over FIPS 180-4) for everything derived once per
//! mark or per slice: the buyer hash, the payload tag and the per-exponent cell keys. SipHash-2-4
//! (the reference algorithm of Aumasson and Bernstein, 64-bit output) for the one value computed
//! per float: a keyed PRF of the value's cell index. Both are in Python's reach (`hmac`, `hashlib`,
//! and a page of numpy for SipHash), which is what an independent extractor needs.
//!
//! Every HMAC message is `label || 0x00 || data` with a distinct ASCII label, so no derivation can
//! collide with another.

use hmac::{Hmac, Mac as _};
use sha2::Sha256;
use zeroize::Zeroize;

/// HMAC label of the buyer hash.
pub const LABEL_BUYER: &[u8] = b"ml-envelope/watermark/v1/buyer";
/// HMAC label of the payload tag.
pub const LABEL_TAG: &[u8] = b"ml-envelope/watermark/v1/tag";
/// HMAC label of the per-exponent cell key.
pub const LABEL_CELL: &[u8] = b"ml-envelope/watermark/v1/cell";
/// HMAC label of the element key of quantized blocks (`crate::blocks`).
pub const LABEL_BLOCK: &[u8] = b"ml-envelope/watermark/v1/block";

/// Bytes of the authentication tag carried after the buyer hash.
pub const TAG_LEN: usize = 8;
/// Bytes of the payload: buyer hash, then tag.
pub const PAYLOAD_LEN: usize = 32 + TAG_LEN;
/// Bits of the payload, one per position.
pub const PAYLOAD_BITS: usize = PAYLOAD_LEN * 8;

/// The 32-byte seller secret every mark is keyed by. Wiped on drop; prints nothing.
#[derive(Clone)]
pub struct SellerKey([u8; 32]);

impl SellerKey {
    /// Wraps the secret bytes (the caller reads them from a key file or a KDF).
    #[must_use]
    pub const fn new(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// HMAC-SHA256 keyed with the secret, over `label || 0x00 || data`.
    fn hmac(&self, label: &[u8], data: &[u8]) -> [u8; 32] {
        let mut mac = self.mac(label);
        mac.update(data);
        mac.finalize().into_bytes().into()
    }

    /// An HMAC state keyed with the secret that has absorbed `label || 0x00`.
    fn mac(&self, label: &[u8]) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as hmac::digest::KeyInit>::new_from_slice(&self.0)
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
        mac.update(label);
        mac.update(&[0]);
        mac
    }

    /// The buyer hash of a buyer id: `HMAC-SHA256(K, LABEL_BUYER || 0x00 || id)`. Without the
    /// seller key it can be neither computed nor linked to the id.
    #[must_use]
    pub fn buyer_hash(&self, buyer_id: &[u8]) -> [u8; 32] {
        self.hmac(LABEL_BUYER, buyer_id)
    }

    /// The payload tag of a buyer hash: the first [`TAG_LEN`] bytes of
    /// `HMAC-SHA256(K, LABEL_TAG || 0x00 || buyer_hash)`.
    #[must_use]
    pub fn tag(&self, buyer_hash: &[u8; 32]) -> [u8; TAG_LEN] {
        TagChecker::new(self).tag(buyer_hash)
    }

    /// The payload for a buyer hash: `buyer_hash || tag`.
    #[must_use]
    pub fn payload(&self, buyer_hash: &[u8; 32]) -> [u8; PAYLOAD_LEN] {
        let mut payload = [0; PAYLOAD_LEN];
        payload[..32].copy_from_slice(buyer_hash);
        payload[32..].copy_from_slice(&self.tag(buyer_hash));
        payload
    }

    /// The SipHash key of cell exponent `exponent`: the first 16 bytes of
    /// `HMAC-SHA256(K, LABEL_CELL || 0x00 || exponent as i32 little-endian)`.
    #[must_use]
    pub fn cell_key(&self, exponent: i32) -> CellKey {
        Self::sip_key(&self.hmac(LABEL_CELL, &exponent.to_le_bytes()))
    }

    /// The SipHash key of quantized blocks' elements (`crate::blocks`): the first 16 bytes of
    /// `HMAC-SHA256(K, LABEL_BLOCK || 0x00)`.
    #[must_use]
    pub fn block_key(&self) -> CellKey {
        Self::sip_key(&self.hmac(LABEL_BLOCK, &[]))
    }

    /// A SipHash key from the first 16 bytes of a digest (`k0`, `k1` little-endian).
    fn sip_key(digest: &[u8; 32]) -> CellKey {
        let word = |at: usize| {
            let mut bytes = [0; 8];
            bytes.copy_from_slice(&digest[at..at + 8]);
            u64::from_le_bytes(bytes)
        };
        CellKey {
            k0: word(0),
            k1: word(8),
        }
    }
}

impl Drop for SellerKey {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

impl core::fmt::Debug for SellerKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("SellerKey(..)")
    }
}

/// Checks payload tags without re-keying HMAC for every candidate (the decoder tries up to
/// 2^[`crate::CHASE_BITS`] candidates per extraction).
pub(crate) struct TagChecker(Hmac<Sha256>);

impl TagChecker {
    pub(crate) fn new(key: &SellerKey) -> Self {
        Self(key.mac(LABEL_TAG))
    }

    pub(crate) fn tag(&self, buyer_hash: &[u8; 32]) -> [u8; TAG_LEN] {
        let mut mac = self.0.clone();
        mac.update(buyer_hash);
        let digest = mac.finalize().into_bytes();
        let mut tag = [0; TAG_LEN];
        tag.copy_from_slice(&digest[..TAG_LEN]);
        tag
    }

    /// Whether `payload` is a buyer hash followed by its tag (constant time in the tag bytes).
    pub(crate) fn verifies(&self, payload: &[u8; PAYLOAD_LEN]) -> bool {
        let mut buyer_hash = [0; 32];
        buyer_hash.copy_from_slice(&payload[..32]);
        let expected = self.tag(&buyer_hash);
        expected
            .iter()
            .zip(&payload[32..])
            .fold(0u8, |diff, (a, b)| diff | (a ^ b))
            == 0
    }
}

/// The keyed PRF of one cell exponent: SipHash-2-4 of the cell index.
///
/// SipHash is written out here for the two message lengths the scheme uses (8 and 9 bytes): it
/// runs once per value read, and the generic byte-stream hasher of a SipHash crate costs about
/// twice as much per call. The tests check it against the `siphasher` crate and the reference
/// vector.
#[derive(Clone, Copy)]
pub struct CellKey {
    k0: u64,
    k1: u64,
}

impl CellKey {
    /// `SipHash-2-4(cell key, cell index as i64 little-endian)`.
    #[must_use]
    pub fn hash(&self, cell: i64) -> u64 {
        self.sip(u64::from_le_bytes(cell.to_le_bytes()), 8 << 56)
    }

    /// The embedder's selection hash when redundancy is below 1:
    /// `SipHash-2-4(cell key, cell index as i64 little-endian || 0x01)`.
    #[must_use]
    pub fn selection_hash(&self, cell: i64) -> u64 {
        self.sip(u64::from_le_bytes(cell.to_le_bytes()), (9 << 56) | 0x01)
    }

    /// SipHash-2-4 of one full 8-byte block `block` followed by the final block `last` (the
    /// message length in the top byte and the remaining bytes below it).
    #[inline]
    const fn sip(&self, block: u64, last: u64) -> u64 {
        let mut v = [
            self.k0 ^ 0x736f_6d65_7073_6575,
            self.k1 ^ 0x646f_7261_6e64_6f6d,
            self.k0 ^ 0x6c79_6765_6e65_7261,
            self.k1 ^ 0x7465_6462_7974_6573,
        ];
        sip_absorb(&mut v, block);
        sip_absorb(&mut v, last);
        v[2] ^= 0xff;
        sip_round(&mut v);
        sip_round(&mut v);
        sip_round(&mut v);
        sip_round(&mut v);
        v[0] ^ v[1] ^ v[2] ^ v[3]
    }
}

/// One message block with two SipRounds (the "2" of SipHash-2-4).
#[inline]
const fn sip_absorb(v: &mut [u64; 4], m: u64) {
    v[3] ^= m;
    sip_round(v);
    sip_round(v);
    v[0] ^= m;
}

/// One SipRound.
#[inline]
const fn sip_round(v: &mut [u64; 4]) {
    v[0] = v[0].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(13) ^ v[0];
    v[0] = v[0].rotate_left(32);
    v[2] = v[2].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(16) ^ v[2];
    v[0] = v[0].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(21) ^ v[0];
    v[2] = v[2].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(17) ^ v[2];
    v[2] = v[2].rotate_left(32);
}

impl core::fmt::Debug for CellKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("CellKey(..)")
    }
}

/// Bit `index` of a payload, most significant bit of each byte first.
#[must_use]
pub fn payload_bit(payload: &[u8; PAYLOAD_LEN], index: usize) -> u8 {
    (payload[index / 8] >> (7 - index % 8)) & 1
}

#[cfg(test)]
mod tests {
    use siphasher::sip::SipHasher24;

    use super::*;

    fn key() -> SellerKey {
        let mut bytes = [0; 32];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = u8::try_from(i).unwrap();
        }
        SellerKey::new(bytes)
    }

    /// RFC 4231 test case 2 checks the HMAC-SHA256 wiring itself (key "Jefe").
    #[test]
    fn hmac_sha256_matches_rfc_4231_case_2() {
        let mut mac = <Hmac<Sha256> as hmac::digest::KeyInit>::new_from_slice(b"Jefe").unwrap();
        mac.update(b"what do ya want for nothing?");
        assert_eq!(
            hex::encode(mac.finalize().into_bytes()),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    /// The reference SipHash-2-4 vector for key 00..0f and the 8-byte message 00..07
    /// (`vectors.h` of the reference implementation, entry 8), through both the `siphasher`
    /// crate and this crate's own SipHash.
    #[test]
    fn siphash_2_4_matches_the_reference_vector() {
        let mut key = [0; 16];
        for (i, b) in key.iter_mut().enumerate() {
            *b = u8::try_from(i).unwrap();
        }
        let message = [0u8, 1, 2, 3, 4, 5, 6, 7];
        let expected = [0x62, 0x24, 0x93, 0x9a, 0x79, 0xf5, 0xf5, 0x93];
        let oracle = SipHasher24::new_with_key(&key);
        assert_eq!(oracle.hash(&message).to_le_bytes(), expected);
        let (k0, k1) = oracle.keys();
        let cell = i64::from_le_bytes(message);
        assert_eq!(CellKey { k0, k1 }.hash(cell).to_le_bytes(), expected);
    }

    proptest::proptest! {
        /// The hand-written SipHash equals the `siphasher` crate on both message forms.
        #[test]
        fn own_siphash_equals_the_siphasher_crate(k0: u64, k1: u64, cell: i64) {
            let oracle = SipHasher24::new_with_keys(k0, k1);
            let own = CellKey { k0, k1 };
            proptest::prop_assert_eq!(own.hash(cell), oracle.hash(&cell.to_le_bytes()));
            let mut nine = [1u8; 9];
            nine[..8].copy_from_slice(&cell.to_le_bytes());
            proptest::prop_assert_eq!(own.selection_hash(cell), oracle.hash(&nine));
        }
    }

    /// Known answers of the scheme's own derivations for seller key 00..1f (docs/watermark.md
    /// §2 lists the same values; an independent implementation must reproduce them).
    #[test]
    fn derivations_match_known_answers() {
        let key = key();
        let buyer = key.buyer_hash(b"buyer-42");
        assert_eq!(hex::encode(buyer), KAT_BUYER);
        assert_eq!(hex::encode(key.tag(&buyer)), KAT_TAG);
        let cell_key = key.cell_key(-10);
        assert_eq!(format!("{:016x}", cell_key.hash(1234)), KAT_CELL_HASH);
        assert_eq!(
            format!("{:016x}", cell_key.selection_hash(1234)),
            KAT_SELECTION_HASH
        );
    }

    const KAT_BUYER: &str = "3639a3bdeed2efb88408abe4124d5e19484c61dbffd6d2dca0a848f24ac7f89a";
    const KAT_TAG: &str = "9315bf44d6bead6a";
    const KAT_CELL_HASH: &str = "cc4f95c69de0e224";
    const KAT_SELECTION_HASH: &str = "a628a00f5b526f66";

    #[test]
    fn payload_is_buyer_hash_then_tag_msb_first() {
        let key = key();
        let buyer = [0x80; 32];
        let payload = key.payload(&buyer);
        assert_eq!(&payload[..32], &buyer);
        assert_eq!(payload_bit(&payload, 0), 1);
        assert_eq!(payload_bit(&payload, 1), 0);
        assert!(TagChecker::new(&key).verifies(&payload));
        let mut forged = payload;
        forged[39] ^= 1;
        assert!(!TagChecker::new(&key).verifies(&forged));
    }

    #[test]
    fn debug_does_not_print_the_secret() {
        assert_eq!(format!("{:?}", key()), "SellerKey(..)");
    }
}
