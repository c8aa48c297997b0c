//! Distributed SQL over `.ald` datasets with Apache Ballista: the plan codecs that ship
//! `ald-datafusion`'s tables and scans from a client to Ballista's scheduler, and from the
//! scheduler to its executors.
//!
//! Key decisions (the user's page is `docs/datafusion.md` §7):
//! - **No secret in a plan.** A shipped table or scan holds the files as planned (paths, or
//!   objects' store URLs, keys and ETags; sizes, chunk indexes), the schema, the projection, the
//!   limit, each partition's chunks and the signature policy the scan was planned under (public
//!   keys). Keys for encrypted files and object store credentials are the executor's own
//!   ([`AldPhysicalCodec::with_options`], its `RuntimeEnv`'s stores); the client's `ald.*`
//!   secrets never leave it.
//! - **The stricter policy.** An executor reads a shipped scan under both its own signature
//!   policy and the plan's ([`effective_options`]).
//! - **Untrusted bytes.** Decoding a node is bounded ([`MAX_NODE_BYTES`], every count checked
//!   against the bytes present), typed ([`Error`], its Andon signal first) and panic-free; the
//!   decoded parts are checked for consistency by `ald-datafusion`, and against the files
//!   themselves when the executor opens them (schema, rows, chunk index, flags: `Changed`).
//! - **Partitions Ballista can cut.** Ballista 55 gives each task only its partitions of the
//!   leaves it knows; an unknown leaf would be read whole by every task. On the scheduler, a
//!   decoded table ([`DistributedAldTable`]) plans scans whose units are an in-memory input
//!   Ballista does cut ([`AldUnitsScanExec`]).
//! - **Everything else is Ballista's.** Both codecs wrap Ballista's own and hand it every node that
//!   is not an `.ald` one.
//!
//! Native only: Ballista brings tokio and gRPC, which no format crate may reach (`deny.toml`).

mod codec;
mod distributed;
mod error;
pub mod local;
mod wire;

pub use codec::{AldLogicalCodec, AldPhysicalCodec, effective_options};
pub use distributed::{AldUnitsScanExec, DistributedAldTable};
pub use error::{Error, Result};
pub use wire::MAX_NODE_BYTES;
