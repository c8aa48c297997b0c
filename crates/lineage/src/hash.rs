//! SHA-256 digests and the domain-tagged Merkle construction shared by the dataset and lineage
//! trees (004 §II.F `dataset_node_v1`, §II.G `lineage_node_v1`).
//!
//! The tree is built level by level: leaves in the given order, neighbours paired, the last node
//! duplicated when a level has an odd count, a single node is the root. [`MerkleFrontier`]
//! computes the same root incrementally in O(log n) memory, which is what makes the snapshot
//! checkpoint small.

use std::fmt;

use sha2::{Digest as _, Sha256};

use crate::cbor::Value;
use crate::error::Error;

/// A SHA-256 digest. In CBOR it is a byte string of the 32 raw bytes; shown to people as
/// lowercase hex.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Digest(pub [u8; 32]);

impl Digest {
    /// The digest as a CBOR byte string.
    #[must_use]
    pub fn to_cbor(self) -> Value {
        Value::Bytes(self.0.to_vec())
    }

    /// Lowercase hex, 64 characters.
    #[must_use]
    pub fn to_hex(self) -> String {
        self.to_string()
    }

    /// Parses 64 hex digits (either case).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `s` is not 64 hex digits.
    ///
    /// # Examples
    /// ```
    /// use lineage::Digest;
    /// let d = Digest::from_hex(&"ab".repeat(32))?;
    /// assert_eq!(d.0[0], 0xab);
    /// # Ok::<(), lineage::Error>(())
    /// ```
    pub fn from_hex(s: &str) -> Result<Self, Error> {
        let mut out = [0u8; 32];
        hex::decode_to_slice(s, &mut out).map_err(|e| Error::InvalidArgument {
            what: "hash",
            reason: "expected 64 hex digits",
            source: Some(e),
        })?;
        Ok(Self(out))
    }

    /// The digest from a CBOR byte string of exactly 32 bytes.
    #[must_use]
    pub fn from_slice(b: &[u8]) -> Option<Self> {
        <[u8; 32]>::try_from(b).ok().map(Self)
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({self})")
    }
}

/// SHA-256 of raw bytes.
///
/// # Examples
/// ```
/// assert_eq!(
///     lineage::hash::sha256(b"abc").to_hex(),
///     "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
/// );
/// ```
#[must_use]
pub fn sha256(bytes: &[u8]) -> Digest {
    Digest(Sha256::digest(bytes).into())
}

/// `SHA-256(CBOR_CANONICAL(value))`, the shape of every commitment in the contract.
#[must_use]
pub fn sha256_cbor(value: &Value) -> Digest {
    sha256(&value.to_canonical_bytes())
}

/// `SHA-256(CBOR_CANONICAL([tag, left, right]))`: a Merkle parent.
#[must_use]
pub fn node_hash(node_tag: &str, left: Digest, right: Digest) -> Digest {
    sha256_cbor(&Value::Array(vec![
        Value::text(node_tag),
        left.to_cbor(),
        right.to_cbor(),
    ]))
}

/// The Merkle root of `leaves` with parents tagged `node_tag`; `None` for zero leaves.
///
/// # Examples
/// ```
/// use lineage::hash::{merkle_root, node_hash, sha256};
/// let (a, b, c) = (sha256(b"a"), sha256(b"b"), sha256(b"c"));
/// let ab = node_hash("dataset_node_v1", a, b);
/// let cc = node_hash("dataset_node_v1", c, c);
/// assert_eq!(merkle_root("dataset_node_v1", &[a, b, c]), Some(node_hash("dataset_node_v1", ab, cc)));
/// assert_eq!(merkle_root("dataset_node_v1", &[a]), Some(a));
/// ```
#[must_use]
pub fn merkle_root(node_tag: &str, leaves: &[Digest]) -> Option<Digest> {
    let mut level: Vec<Digest> = leaves.to_vec();
    if level.is_empty() {
        return None;
    }
    while level.len() > 1 {
        if level.len() % 2 == 1 {
            let last = level[level.len() - 1];
            level.push(last);
        }
        level = level
            .chunks_exact(2)
            .map(|p| node_hash(node_tag, p[0], p[1]))
            .collect();
    }
    level.first().copied()
}

/// Incremental Merkle root: push leaves in order, then [`finish`](Self::finish). Same result as
/// [`merkle_root`], in O(log n) memory; its state is what a checkpoint stores.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MerkleFrontier {
    node_tag: &'static str,
    /// `pending[i]`: the left node waiting for its right sibling at level `i`.
    pending: Vec<Option<Digest>>,
    count: u64,
}

impl MerkleFrontier {
    /// An empty frontier for parents tagged `node_tag`.
    #[must_use]
    pub const fn new(node_tag: &'static str) -> Self {
        Self {
            node_tag,
            pending: Vec::new(),
            count: 0,
        }
    }

    /// Rebuilds a frontier from its parts (as stored in a checkpoint).
    #[must_use]
    pub const fn from_parts(
        node_tag: &'static str,
        pending: Vec<Option<Digest>>,
        count: u64,
    ) -> Self {
        Self {
            node_tag,
            pending,
            count,
        }
    }

    /// The pending nodes per level (for a checkpoint).
    #[must_use]
    pub fn pending(&self) -> &[Option<Digest>] {
        &self.pending
    }

    /// How many leaves have been pushed.
    #[must_use]
    pub const fn count(&self) -> u64 {
        self.count
    }

    /// Appends the next leaf.
    pub fn push(&mut self, leaf: Digest) {
        self.count += 1;
        let mut carry = leaf;
        for slot in &mut self.pending {
            match slot.take() {
                Some(left) => carry = node_hash(self.node_tag, left, carry),
                None => {
                    *slot = Some(carry);
                    return;
                }
            }
        }
        self.pending.push(Some(carry));
    }

    /// The root; `None` if no leaf was pushed.
    #[must_use]
    pub fn finish(&self) -> Option<Digest> {
        let mut carry: Option<Digest> = None;
        for (i, slot) in self.pending.iter().enumerate() {
            let higher = self.pending.iter().skip(i + 1).any(Option::is_some);
            carry = match (*slot, carry) {
                (None, None) => None,
                (Some(left), Some(right)) => Some(node_hash(self.node_tag, left, right)),
                // The last node of an odd level: duplicated, unless it is the only node left.
                (Some(last), None) | (None, Some(last)) => {
                    if higher {
                        Some(node_hash(self.node_tag, last, last))
                    } else {
                        return Some(last);
                    }
                }
            };
        }
        carry
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frontier_matches_level_by_level_construction_for_every_size_up_to_70() {
        let leaves: Vec<Digest> = (0u32..70).map(|i| sha256(&i.to_be_bytes())).collect();
        for n in 0..=leaves.len() {
            let mut f = MerkleFrontier::new("t");
            for l in &leaves[..n] {
                f.push(*l);
            }
            assert_eq!(f.finish(), merkle_root("t", &leaves[..n]), "n = {n}");
        }
    }

    #[test]
    fn node_hash_is_sha256_of_the_canonical_tagged_triple() {
        let (l, r) = (Digest([1; 32]), Digest([2; 32]));
        let mut pre = vec![0x83, 0x6f];
        pre.extend_from_slice(b"dataset_node_v1");
        pre.extend_from_slice(&[0x58, 0x20]);
        pre.extend_from_slice(&[1; 32]);
        pre.extend_from_slice(&[0x58, 0x20]);
        pre.extend_from_slice(&[2; 32]);
        assert_eq!(node_hash("dataset_node_v1", l, r), sha256(&pre));
    }

    #[test]
    fn hex_round_trips_and_rejects_bad_digits() {
        let d = sha256(b"x");
        assert_eq!(Digest::from_hex(&d.to_hex()).ok(), Some(d));
        assert!(Digest::from_hex("zz").is_err());
        assert!(Digest::from_hex(&"g".repeat(64)).is_err());
    }
}
