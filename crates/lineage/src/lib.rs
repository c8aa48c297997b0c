//! Dataset lineage (`UML_OS.Data.Lineage_v1`, spec 004): content-addressed commitments that make
//! a training or evaluation run's data replayable and verifiable.
//!
//! The commitments of §II.F and §II.G are all `SHA-256(CBOR_CANONICAL(...))` of small tagged
//! arrays:
//!
//! - [`dataset_root_hash`]: a Merkle tree over `(relative path, SHA-256(file))` leaves, in path
//!   order; [`fs::dataset_root_hash_dir`] walks a directory (feature `fs`);
//! - [`SplitDefs::split_hashes`] and the deterministic split derivation [`SplitDefs::assign`];
//! - [`TransformChain::transform_chain_hash`];
//! - [`dataset_snapshot_id`], [`data_access_plan_hash`];
//! - [`object::lineage_object_hash`] and [`lineage_root_hash`];
//! - the run's access plan ([`plan::AccessPlan`]: the sampler configuration's hash and the
//!   `data_access_plan_hash` a run emits beside the snapshot ID), and the execution certificate
//!   binding both with the lineage root ([`certificate::Certificate`], signed and verified with
//!   Ed25519 behind the `certificate` feature).
//!
//! **Key design decision:** the canonical CBOR encoder is this crate's own ([`cbor`]), not a
//! general-purpose CBOR crate, because every ID depends on RFC 8949 §4.2.1 details (shortest
//! floats down to binary16, key order by encoded bytes) that general encoders do not promise; it
//! is checked against RFC 8949 Appendix A and, in CI, against Python `cbor2`. Likewise JSON input
//! is read by a small strict parser ([`json`]) so that integers stay integers and floats are
//! correctly rounded. The core is pure computation over bytes and builds for
//! `wasm32-unknown-unknown` without default features; the directory walker, the multi-core file
//! hasher and checkpoint files live behind the default feature `fs`.
//!
//! `docs/lineage.md` is the byte-level specification this crate implements.
//!
//! ```
//! use lineage::{SnapshotInputs, SplitDefs, TransformChain, build_snapshot, dataset_root_hash};
//! let data = dataset_root_hash([("train/a.txt", &b"one"[..]), ("train/b.txt", &b"two"[..])])?;
//! let inputs = SnapshotInputs {
//!     tenant_id: "acme".into(),
//!     version: "v1".into(),
//!     splits: SplitDefs::from_json(r#"[{"split_name":"train","split_fraction":1.0}]"#)?,
//!     transforms: TransformChain::from_json(r#"[{"seq":0,"op":"lowercase"}]"#)?,
//! };
//! let snap = build_snapshot(&inputs, &data)?;
//! println!("{}", snap.dataset_snapshot_id);
//! # Ok::<(), lineage::Error>(())
//! ```

pub mod cbor;
pub mod certificate;
pub mod dataset;
pub mod error;
#[cfg(feature = "fs")]
pub mod fs;
pub mod hash;
pub mod json;
pub mod object;
pub mod plan;
pub mod records;
pub mod retention;
pub mod snapshot;
pub mod split;
pub mod trace;
pub mod transform;

pub use dataset::{Checkpoint, DatasetBuilder, DatasetDigest, RelPath, dataset_root_hash};
pub use error::{Error, FailureCode};
pub use hash::Digest;
pub use object::{LineageObject, ObjectType, lineage_root_hash};
pub use snapshot::{
    AccessPlanInputs, Metrics, Snapshot, SnapshotInputs, build_snapshot, data_access_plan_hash,
    dataset_snapshot_id, validate_snapshot,
};
pub use split::{EPS_EQ, SplitDef, SplitDefs};
pub use transform::{Transform, TransformChain};
