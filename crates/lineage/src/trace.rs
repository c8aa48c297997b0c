//! Trace records (`run_header`, `iter`, `run_end`) and the error trace record (004 §0.Z
//! "Error trace rule", §7), each a canonical CBOR map.

use std::collections::BTreeMap;

use crate::cbor::Value;
use crate::error::{Error, FailureCode};
use crate::hash::{Digest, sha256_cbor};
use crate::snapshot::map;

/// Tag of the replay-token preimage (this implementation's, see `docs/lineage.md`).
pub const REPLAY_TOKEN_TAG: &str = "lineage_replay_token_v1";

/// The per-run replay token: `SHA-256(CBOR_CANONICAL(["lineage_replay_token_v1", tenant_id, run_id]))`.
#[must_use]
pub fn replay_token(tenant_id: &str, run_id: &str) -> Digest {
    sha256_cbor(&Value::Array(vec![
        Value::text(REPLAY_TOKEN_TAG),
        Value::text(tenant_id),
        Value::text(run_id),
    ]))
}

/// One deterministic lineage trace record (§7 trace schema).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TraceRecord {
    /// `run_header`: the source hashes (here: `[dataset_root_hash]`, the Merkle commitment to
    /// every file hash) and the `transform_chain_hash`.
    RunHeader {
        /// Source hashes.
        source_hashes: Vec<Digest>,
        /// Transform chain commitment.
        transform_chain_hash: Digest,
    },
    /// `iter`: one hashed file.
    Iter {
        /// The file's `sample_index`.
        step: u64,
        /// The file's SHA-256.
        hash: Digest,
        /// `"ok"`.
        status: &'static str,
    },
    /// `run_end`: the snapshot ID.
    RunEnd {
        /// The snapshot ID.
        dataset_snapshot_id: Digest,
    },
}

impl TraceRecord {
    /// The record as a canonical CBOR map with a `record` field naming its kind.
    #[must_use]
    pub fn to_cbor(&self) -> Value {
        match self {
            Self::RunHeader {
                source_hashes,
                transform_chain_hash,
            } => map([
                ("record", Value::text("run_header")),
                (
                    "source_hashes",
                    Value::Array(source_hashes.iter().map(|d| d.to_cbor()).collect()),
                ),
                ("transform_chain_hash", transform_chain_hash.to_cbor()),
            ]),
            Self::Iter { step, hash, status } => map([
                ("record", Value::text("iter")),
                ("step", Value::Unsigned(*step)),
                ("hash", hash.to_cbor()),
                ("status", Value::text(status)),
            ]),
            Self::RunEnd {
                dataset_snapshot_id,
            } => map([
                ("record", Value::text("run_end")),
                ("dataset_snapshot_id", dataset_snapshot_id.to_cbor()),
            ]),
        }
    }
}

/// The final failure record: `t`, `failure_code`, `failure_operator`, replay token, minimal
/// diagnostics (the error's message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorRecord {
    /// Logical step at which the failure happened.
    pub t: u64,
    /// The failure code.
    pub failure_code: FailureCode,
    /// The operator that failed (e.g. [`OP_VALIDATE`](crate::snapshot::OP_VALIDATE)).
    pub failure_operator: &'static str,
    /// The run's replay token.
    pub replay_token: Digest,
    /// Minimal diagnostics.
    pub diagnostics: BTreeMap<String, String>,
}

impl ErrorRecord {
    /// The record for `error` raised by `operator` at step `t`.
    ///
    /// # Examples
    /// ```
    /// use lineage::trace::{ErrorRecord, replay_token};
    /// let e = lineage::Error::EmptyDataset;
    /// let r = ErrorRecord::from_error(&e, lineage::snapshot::OP_VALIDATE, 0, replay_token("t", "run-1"));
    /// assert_eq!(r.failure_code.as_str(), "EMPTY_DATASET");
    /// ```
    #[must_use]
    pub fn from_error(error: &Error, operator: &'static str, t: u64, replay_token: Digest) -> Self {
        let mut diagnostics = BTreeMap::new();
        diagnostics.insert("message".to_owned(), error.to_string());
        Self {
            t,
            failure_code: error.failure_code(),
            failure_operator: operator,
            replay_token,
            diagnostics,
        }
    }

    /// The record as a canonical CBOR map.
    #[must_use]
    pub fn to_cbor(&self) -> Value {
        map([
            ("record", Value::text("error")),
            ("t", Value::Unsigned(self.t)),
            ("failure_code", Value::text(self.failure_code.as_str())),
            ("failure_operator", Value::text(self.failure_operator)),
            ("replay_token", self.replay_token.to_cbor()),
            (
                "diagnostics",
                Value::Map(
                    self.diagnostics
                        .iter()
                        .map(|(k, v)| (k.clone(), Value::text(v)))
                        .collect(),
                ),
            ),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_record_carries_code_operator_and_token() {
        let tok = replay_token("t", "r");
        let r = ErrorRecord::from_error(
            &Error::TransformSeqTie { seq: 3 },
            crate::snapshot::OP_VALIDATE,
            2,
            tok,
        );
        let Value::Map(m) = r.to_cbor() else {
            panic!("not a map")
        };
        assert_eq!(m["failure_code"], Value::text("TRANSFORM_SEQ_TIE"));
        assert_eq!(
            m["failure_operator"],
            Value::text("UML_OS.Data.ValidateSnapshot_v1")
        );
        assert_eq!(m["replay_token"], tok.to_cbor());
        assert_eq!(m["t"], Value::Unsigned(2));
    }
}
