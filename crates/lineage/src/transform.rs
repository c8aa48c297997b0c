//! Transform specs and `transform_chain_hash` (004 §II.G).

use std::collections::BTreeMap;

use crate::cbor::Value;
use crate::error::Error;
use crate::hash::{Digest, sha256_cbor};

/// Tag of the `transform_chain_hash` preimage.
pub const TRANSFORM_CHAIN_TAG: &str = "transform_chain_v1";

/// One transform: a CBOR map that holds `seq: uint` (the whole map, `seq` included, is
/// committed).
#[derive(Debug, Clone, PartialEq)]
pub struct Transform {
    seq: u64,
    map: BTreeMap<String, Value>,
}

impl Transform {
    /// Wraps a map; `index` is its position in the input (for the error).
    ///
    /// # Errors
    /// [`Error::InvalidTransform`] if `value` is not a map or its `seq` is not an unsigned
    /// integer.
    pub fn new(index: usize, value: Value) -> Result<Self, Error> {
        let Value::Map(map) = value else {
            return Err(Error::InvalidTransform {
                index,
                reason: "a transform must be a map",
            });
        };
        let seq = match map.get("seq") {
            Some(Value::Unsigned(s)) => *s,
            Some(_) => {
                return Err(Error::InvalidTransform {
                    index,
                    reason: "seq must be an integer in [0, 2^64-1]",
                });
            }
            None => {
                return Err(Error::InvalidTransform {
                    index,
                    reason: "missing seq",
                });
            }
        };
        Ok(Self { seq, map })
    }

    /// The transform's `seq`.
    #[must_use]
    pub const fn seq(&self) -> u64 {
        self.seq
    }

    /// The committed map.
    #[must_use]
    pub fn to_cbor(&self) -> Value {
        Value::Map(self.map.clone())
    }
}

/// Transforms sorted by `seq`, ties refused. The default is the empty chain.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TransformChain {
    sorted: Vec<Transform>,
}

impl TransformChain {
    /// Sorts by `seq`.
    ///
    /// # Errors
    /// [`Error::TransformSeqTie`] if two transforms share a `seq`.
    pub fn new(mut transforms: Vec<Transform>) -> Result<Self, Error> {
        transforms.sort_by_key(Transform::seq);
        if let Some(w) = transforms.windows(2).find(|w| w[0].seq == w[1].seq) {
            return Err(Error::TransformSeqTie { seq: w[0].seq });
        }
        Ok(Self { sorted: transforms })
    }

    /// Parses a JSON array of objects, each holding `seq` (integers stay CBOR integers, other
    /// numbers become CBOR floats).
    ///
    /// # Errors
    /// [`Error::InvalidJson`], [`Error::InvalidTransform`], [`Error::TransformSeqTie`].
    ///
    /// # Examples
    /// ```
    /// let c = lineage::TransformChain::from_json(r#"[{"seq":2,"op":"b"},{"seq":1,"op":"a"}]"#)?;
    /// assert_eq!(c.transforms()[0].seq(), 1);
    /// # Ok::<(), lineage::Error>(())
    /// ```
    pub fn from_json(text: &str) -> Result<Self, Error> {
        let Value::Array(items) = crate::json::parse(text)? else {
            return Err(Error::InvalidTransform {
                index: 0,
                reason: "transforms JSON must be an array",
            });
        };
        let transforms = items
            .into_iter()
            .enumerate()
            .map(|(i, v)| Transform::new(i, v))
            .collect::<Result<Vec<_>, _>>()?;
        Self::new(transforms)
    }

    /// The transforms in `seq` order.
    #[must_use]
    pub fn transforms(&self) -> &[Transform] {
        &self.sorted
    }

    /// `transform_chain_hash = SHA-256(CBOR_CANONICAL(["transform_chain_v1", transforms_sorted_by_seq]))`.
    #[must_use]
    pub fn transform_chain_hash(&self) -> Digest {
        sha256_cbor(&Value::Array(vec![
            Value::text(TRANSFORM_CHAIN_TAG),
            Value::Array(self.sorted.iter().map(Transform::to_cbor).collect()),
        ]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_chain_hashes_the_tag_and_an_empty_array() {
        // ["transform_chain_v1", []] = 82 72 "transform_chain_v1" 80
        let mut pre = vec![0x82, 0x72];
        pre.extend_from_slice(b"transform_chain_v1");
        pre.push(0x80);
        assert_eq!(
            TransformChain::default().transform_chain_hash(),
            crate::hash::sha256(&pre)
        );
    }

    #[test]
    fn seq_ties_missing_seq_and_float_seq_fail() {
        use crate::FailureCode as F;
        for (json, code) in [
            (r#"[{"seq":1},{"seq":1}]"#, F::TransformSeqTie),
            (r#"[{"op":"x"}]"#, F::InvalidTransform),
            (r#"[{"seq":1.0}]"#, F::InvalidTransform),
            (r#"[{"seq":-1}]"#, F::InvalidTransform),
            (r#"[1]"#, F::InvalidTransform),
            (r#"{"seq":1}"#, F::InvalidTransform),
        ] {
            assert_eq!(
                TransformChain::from_json(json)
                    .map(|_| ())
                    .map_err(|e| e.failure_code()),
                Err(code),
                "{json}"
            );
        }
    }

    #[test]
    fn input_order_does_not_change_the_hash() -> Result<(), Error> {
        let a = TransformChain::from_json(r#"[{"seq":1,"p":0.5},{"seq":0,"n":-3}]"#)?;
        let b = TransformChain::from_json(r#"[{"seq":0,"n":-3},{"p":0.5,"seq":1}]"#)?;
        assert_eq!(a.transform_chain_hash(), b.transform_chain_hash());
        Ok(())
    }
}
