//! The bodies of the `lineage_json` and `lineage_cbor` fuzz targets, shared with the stable corpus
//! replay in `tests.rs` (the targets include this file by path, so an input that once found a bug
//! keeps being checked by `cargo test`).

use lineage::cbor::decode;
use lineage::{Checkpoint, Digest, ObjectType, SplitDefs, TransformChain};

/// `lineage_json`: the JSON inputs of a snapshot (any text). The JSON reader, split definitions
/// and transform chains either refuse the text with a typed error or accept it; whatever they
/// accept is deterministic and consistent:
/// - a parsed value encodes to canonical CBOR that decodes back to the same value;
/// - split definitions assign every sample to one of their splits and hash the same twice;
/// - a transform chain hashes the same twice.
pub(crate) fn lineage_json(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(value) = lineage::json::parse(text) {
        let bytes = value.to_canonical_bytes();
        assert_eq!(
            decode(&bytes).expect("canonical bytes decode"),
            value,
            "JSON value -> canonical CBOR -> the same value"
        );
    }
    if let Ok(defs) = SplitDefs::from_json(text) {
        let again = SplitDefs::from_json(text).expect("parsing is deterministic");
        assert_eq!(defs.split_hashes(), again.split_hashes());
        for n in [0_u64, 1, 7, 1000] {
            let assignment = defs.assign(n);
            assert_eq!(assignment.len() as u64, n);
            assert!(assignment.iter().all(|&s| s < defs.entries().len()));
        }
    }
    if let Ok(chain) = TransformChain::from_json(text) {
        let again = TransformChain::from_json(text).expect("parsing is deterministic");
        assert_eq!(chain.transform_chain_hash(), again.transform_chain_hash());
    }
    let _ = Digest::from_hex(text);
    let _ = ObjectType::parse(text);
}

/// `lineage_cbor`: the CBOR inputs (any bytes). The strict canonical decoder accepts exactly the
/// canonical encoding of what it returns, and a checkpoint that parses writes back to the same
/// bytes: no byte of an accepted input is ignored.
pub(crate) fn lineage_cbor(data: &[u8]) {
    if let Ok(value) = decode(data) {
        assert_eq!(
            value.to_canonical_bytes(),
            data,
            "an accepted CBOR item re-encodes to the same bytes"
        );
    }
    if let Ok(checkpoint) = Checkpoint::from_bytes(data) {
        assert_eq!(
            checkpoint.to_bytes(),
            data,
            "an accepted checkpoint re-encodes to the same bytes"
        );
    }
}
