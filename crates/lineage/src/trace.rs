//! Trace records (`run_header`, `iter`, `run_end`) and the error trace record (004 §0.Z
//! "Error trace rule", §7), each a canonical CBOR map, and the trace of a whole snapshot run
//! ([`run_trace`]): which records, in which order, as one CBOR sequence.

use std::collections::BTreeMap;

use crate::cbor::Value;
use crate::error::{Error, FailureCode};
use crate::hash::{Digest, sha256_cbor};
use crate::snapshot::{Snapshot, map};

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
    /// every file hash), the `transform_chain_hash` and the run's replay token.
    RunHeader {
        /// Source hashes.
        source_hashes: Vec<Digest>,
        /// Transform chain commitment.
        transform_chain_hash: Digest,
        /// The run's replay token.
        replay_token: Digest,
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
    /// `run_end`: the snapshot ID and the access-plan hash (004 §II.F: both MUST be emitted in
    /// the trace), and the run's replay token.
    RunEnd {
        /// The snapshot ID.
        dataset_snapshot_id: Digest,
        /// The run's `data_access_plan_hash`.
        data_access_plan_hash: Digest,
        /// The run's replay token.
        replay_token: Digest,
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
                replay_token,
            } => map([
                ("record", Value::text("run_header")),
                (
                    "source_hashes",
                    Value::Array(source_hashes.iter().map(|d| d.to_cbor()).collect()),
                ),
                ("transform_chain_hash", transform_chain_hash.to_cbor()),
                ("replay_token", replay_token.to_cbor()),
            ]),
            Self::Iter { step, hash, status } => map([
                ("record", Value::text("iter")),
                ("step", Value::Unsigned(*step)),
                ("hash", hash.to_cbor()),
                ("status", Value::text(status)),
            ]),
            Self::RunEnd {
                dataset_snapshot_id,
                data_access_plan_hash,
                replay_token,
            } => map([
                ("record", Value::text("run_end")),
                ("dataset_snapshot_id", dataset_snapshot_id.to_cbor()),
                ("data_access_plan_hash", data_access_plan_hash.to_cbor()),
                ("replay_token", replay_token.to_cbor()),
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

/// How a snapshot run ended, as its trace records it.
#[derive(Debug, Clone, Copy)]
pub enum RunOutcome<'a> {
    /// Every file was hashed and the snapshot built; `plan` is the run's access plan over it.
    Complete {
        /// The snapshot.
        snapshot: &'a Snapshot,
        /// The run's `data_access_plan_hash` ([`AccessPlan`](crate::plan::AccessPlan)).
        data_access_plan_hash: Digest,
    },
    /// A rule of the contract failed.
    Failed(&'a Error),
}

/// The trace of one snapshot run as a CBOR sequence (RFC 8742: the records' canonical encodings
/// back to back).
///
/// A complete run is `run_header`, one `iter` per entry of `file_hashes` (the files hashed in
/// this run, in `sample_index` order), then `run_end`; the header and the end carry the replay
/// token of `tenant_id` and `run_id`, the end the snapshot ID and the access-plan hash. Files hashed in an earlier, checkpointed
/// run have no `iter` record here: `step` is the `sample_index` counted back from the last file,
/// so the steps end at `source_count - 1` however the run was resumed. A failed run is the one
/// error record, at `t` = the number of files hashed, with the replay token of `tenant_id` and
/// `run_id`.
///
/// # Examples
/// ```
/// use lineage::trace::{RunOutcome, run_trace};
/// let e = lineage::Error::EmptyDataset;
/// let bytes = run_trace(RunOutcome::Failed(&e), &[], "acme", "run-1");
/// let lineage::cbor::Value::Map(record) = lineage::cbor::decode(&bytes)? else { unreachable!() };
/// assert_eq!(record["failure_code"], lineage::cbor::Value::text("EMPTY_DATASET"));
/// # Ok::<(), lineage::Error>(())
/// ```
#[must_use]
pub fn run_trace(
    outcome: RunOutcome<'_>,
    file_hashes: &[Digest],
    tenant_id: &str,
    run_id: &str,
) -> Vec<u8> {
    // A slice length always fits in u64 on the targets Rust supports.
    let hashed = u64::try_from(file_hashes.len()).unwrap_or(u64::MAX);
    let token = replay_token(tenant_id, run_id);
    let mut out = Vec::new();
    match outcome {
        RunOutcome::Complete {
            snapshot: s,
            data_access_plan_hash,
        } => {
            TraceRecord::RunHeader {
                source_hashes: vec![s.dataset_root_hash],
                transform_chain_hash: s.transform_chain_hash,
                replay_token: token,
            }
            .to_cbor()
            .encode_into(&mut out);
            let first = s.metrics.source_count.saturating_sub(hashed);
            for (step, hash) in (first..).zip(file_hashes) {
                TraceRecord::Iter {
                    step,
                    hash: *hash,
                    status: "ok",
                }
                .to_cbor()
                .encode_into(&mut out);
            }
            TraceRecord::RunEnd {
                dataset_snapshot_id: s.dataset_snapshot_id,
                data_access_plan_hash,
                replay_token: token,
            }
            .to_cbor()
            .encode_into(&mut out);
        }
        RunOutcome::Failed(e) => {
            ErrorRecord::from_error(e, e.operator(), hashed, token)
                .to_cbor()
                .encode_into(&mut out);
        }
    }
    out
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

    #[test]
    fn run_trace_is_header_iters_from_the_resumed_cursor_then_end() -> Result<(), Error> {
        let data =
            crate::dataset_root_hash([("a", &b"1"[..]), ("b", &b"22"[..]), ("c", &b"333"[..])])?;
        let s = crate::build_snapshot(
            &crate::SnapshotInputs::new("t", "v", Default::default(), Default::default())?,
            &data,
        )?;
        // A resumed run that hashed only the last two files.
        let hashes = [crate::hash::sha256(b"22"), crate::hash::sha256(b"333")];
        let plan = Digest([9; 32]);
        let complete = RunOutcome::Complete {
            snapshot: &s,
            data_access_plan_hash: plan,
        };
        let bytes = run_trace(complete, &hashes, "t", "r");
        let mut want = TraceRecord::RunHeader {
            source_hashes: vec![s.dataset_root_hash],
            transform_chain_hash: s.transform_chain_hash,
            replay_token: replay_token("t", "r"),
        }
        .to_cbor()
        .to_canonical_bytes();
        for (step, hash) in [(1, hashes[0]), (2, hashes[1])] {
            want.extend(
                TraceRecord::Iter {
                    step,
                    hash,
                    status: "ok",
                }
                .to_cbor()
                .to_canonical_bytes(),
            );
        }
        want.extend(
            TraceRecord::RunEnd {
                dataset_snapshot_id: s.dataset_snapshot_id,
                data_access_plan_hash: plan,
                replay_token: replay_token("t", "r"),
            }
            .to_cbor()
            .to_canonical_bytes(),
        );
        assert_eq!(bytes, want);
        Ok(())
    }

    #[test]
    fn run_trace_of_a_failure_is_the_error_record_alone() {
        let e = Error::TransformSeqTie { seq: 1 };
        let hashes = [crate::hash::sha256(b"x")];
        assert_eq!(
            run_trace(RunOutcome::Failed(&e), &hashes, "t", "r"),
            ErrorRecord::from_error(&e, e.operator(), 1, replay_token("t", "r"))
                .to_cbor()
                .to_canonical_bytes()
        );
    }
}
