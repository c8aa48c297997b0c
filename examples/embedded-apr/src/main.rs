//! 001 §1.1's single binary on each deployment target of 001 §1.1.1: `.apr` models compiled in
//! with `include_bytes!` and read with `apr` built without default features (`no_std` + `alloc`,
//! no compression), the same code hosted and on bare metal:
//!
//! - a tensor model (the Q4_0 golden file of `apr`'s tests): verified (magic, version, header
//!   rules, section bounds, CRC32 of the whole file, the metadata map), then each tensor listed
//!   by name, dtype and shape with its chunk decoded (which checks the chunk's CRC-32C and size);
//! - a serde model (a decision stump, `apr`'s `golden_stump.apr`) decoded with
//!   [`apr::load_from_bytes`] after the same checks, and run on one input.
//!
//! Hosted (x86_64 and aarch64 Linux) it prints what it found. On `thumbv7em-none-eabihf`
//! (Cortex-M4F and M7, no operating system) the same checks run from the reset entry point
//! (`bare_metal.rs`), and the result is kept alive for the optimizer with `black_box`, since a
//! bare chip has nowhere to print. `scripts/target-sizes.sh` builds it for each target and reports
//! the sizes (BENCHMARKS.md).

#![cfg_attr(target_os = "none", no_std, no_main)]

extern crate alloc;

#[cfg(target_os = "none")]
mod bare_metal;

use alloc::string::String;
use alloc::vec::Vec;

use apr::{AprFile, ModelType};

/// The tensor model: the Q4_0 golden file of `apr`'s tests (uncompressed, with a model card),
/// verified every time the program starts.
const TENSORS: &[u8] = include_bytes!("../../../crates/apr/tests/data/golden_q4_0.apr");

/// The serde model: `apr`'s `golden_stump.apr`.
const STUMP: &[u8] = include_bytes!("../../../crates/apr/tests/data/golden_stump.apr");

/// A one-split decision stump, the struct `golden_stump.apr` was saved from (apr's
/// `tests/vectors`).
#[derive(Debug, serde::Deserialize)]
struct Stump {
    feature: u32,
    threshold: f32,
    below: f32,
    above: f32,
}

impl Stump {
    /// The stump's answer for `input`, or `None` if it lacks the feature.
    fn predict(&self, input: &[f32]) -> Option<f32> {
        let value = *input.get(usize::try_from(self.feature).ok()?)?;
        Some(if value < self.threshold {
            self.below
        } else {
            self.above
        })
    }
}

/// One tensor as the device sees it.
struct TensorLine {
    name: String,
    dtype: u8,
    shape: Vec<u64>,
    /// The decoded chunk's length.
    bytes: usize,
}

/// What the device learns from its models.
struct Listing {
    /// The tensor model's type id (001 §4).
    model_type: u16,
    tensors: Vec<TensorLine>,
    /// The stump's answer for the input `[0, 0, 1, 0]`.
    prediction: Option<f32>,
}

/// Verifies both models, lists the tensors (decoding each chunk, which checks its CRC-32C) and
/// runs the stump once.
fn load() -> apr::Result<Listing> {
    let file = AprFile::parse(TENSORS)?;
    let mut tensors = Vec::new();
    for (number, entry) in file.metadata().tensors.iter().enumerate() {
        let decoded = file.envelope().decode_chunk(number)?;
        tensors.push(TensorLine {
            name: entry.name.clone(),
            dtype: entry.dtype,
            shape: entry.shape.clone(),
            bytes: decoded.len(),
        });
    }
    let stump: Stump = apr::load_from_bytes(STUMP, ModelType::DecisionTree)?;
    Ok(Listing {
        model_type: file.model_type_id(),
        tensors,
        prediction: stump.predict(&[0.0, 0.0, 1.0, 0.0]),
    })
}

#[cfg(not(target_os = "none"))]
fn main() -> apr::Result<()> {
    #![allow(clippy::print_stdout, reason = "the hosted build prints its listing")]
    let listing = load()?;
    println!(
        "verified .apr: {} bytes, model type 0x{:04x}, {} tensors",
        TENSORS.len(),
        listing.model_type,
        listing.tensors.len()
    );
    for tensor in &listing.tensors {
        println!(
            "  {} dtype 0x{:02x} shape {:?}: {} bytes",
            tensor.name, tensor.dtype, tensor.shape, tensor.bytes
        );
    }
    println!(
        "verified serde .apr: {} bytes, decision stump, predicts {:?} for [0, 0, 1, 0]",
        STUMP.len(),
        listing.prediction
    );
    Ok(())
}
