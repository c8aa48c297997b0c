//! 001 §1.1's single binary on each deployment target of 001 §1.1.1: an `.apr` model compiled in
//! with `include_bytes!`, verified (magic, version, header rules, section bounds, CRC32 of the
//! whole file, each tensor chunk's CRC-32C) and listed chunk by chunk (one chunk per tensor,
//! `docs/apr.md`), with nothing but `envelope-core` built without default features: `no_std` +
//! `alloc`, no compression.
//!
//! Hosted (x86_64 and aarch64 Linux) it prints the listing. On `thumbv7em-none-eabihf` (Cortex-M4F
//! and M7, no operating system) the same check runs from the reset entry point
//! (`bare_metal.rs`), and its result is kept alive for the optimizer with `black_box`, since a bare
//! chip has nowhere to print. `scripts/target-sizes.sh` builds it for each target and reports the
//! sizes (BENCHMARKS.md).
//!
//! What it does not do: read tensor names, dtypes and shapes. They are in the `.apr` metadata, a
//! MessagePack map that `apr` decodes with `rmp-serde`, which needs `std` (ARCHITECTURE.md,
//! "no_std"); a device that knows its model's layout reads the tensors by position.

#![cfg_attr(target_os = "none", no_std, no_main)]

extern crate alloc;

#[cfg(target_os = "none")]
mod bare_metal;

use alloc::vec::Vec;

use envelope_core::{Envelope, Format};

/// The model: the Q4_0 golden file of `apr`'s tests (uncompressed, with a model card), verified
/// every time the program starts.
const MODEL: &[u8] = include_bytes!("../../../crates/apr/tests/data/golden_q4_0.apr");

/// What the device learns from its model.
struct Listing {
    /// The `.apr` model type id (001 §4).
    model_type: u16,
    /// Per chunk (tensor), in payload order: stored and decoded bytes.
    chunks: Vec<(u64, u64)>,
}

/// Verifies `bytes` as an `.apr` file and lists its chunks, decoding each one (which checks its
/// CRC-32C and its declared size).
fn list(bytes: &[u8]) -> envelope_core::Result<Listing> {
    let envelope = Envelope::parse(bytes, Format::Model)?;
    let mut chunks = Vec::new();
    if let Some(index) = envelope.chunk_index() {
        for (number, entry) in index.entries().iter().enumerate() {
            let decoded = envelope.decode_chunk(number)?;
            chunks.push((entry.stored_size, decoded.len() as u64));
        }
    }
    Ok(Listing {
        model_type: envelope.header().type_id(),
        chunks,
    })
}

#[cfg(not(target_os = "none"))]
fn main() -> envelope_core::Result<()> {
    #![allow(clippy::print_stdout, reason = "the hosted build prints its listing")]
    let listing = list(MODEL)?;
    println!(
        "verified .apr: {} bytes, model type 0x{:04x}, {} tensor chunks",
        MODEL.len(),
        listing.model_type,
        listing.chunks.len()
    );
    for (number, (stored, decoded)) in listing.chunks.iter().enumerate() {
        println!("  chunk {number}: {stored} bytes stored, {decoded} decoded");
    }
    Ok(())
}
