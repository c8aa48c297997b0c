//! The `.apr` model format (spec 001 v1.7.0, with 003 §7-§8 for GGUF export and licensing): a
//! model in the verified envelope of `envelope-core`, as either a serde value of any type or a
//! list of named tensors; GGUF-compatible quantization; GGUF and SafeTensors export; SafeTensors
//! import, of one file or of a Hugging Face model directory ([`hf`], `fs::import_hf_dir`). The
//! byte-level specification is `docs/apr.md`.
//!
//! Key decisions:
//! - **Named tensors are first-class.** A [`TensorModel`] is stored as a STREAMING payload with
//!   one chunk per tensor and the tensor directory (name, dtype, shape) in the metadata, so one
//!   tensor loads without the others and a model may pass 4 GiB (u64 chunk offsets). Serde models
//!   ([`save_to_bytes`] / [`load_from_bytes`]) are one MessagePack value.
//! - **Quantization is bit-exact with ggml** (`quant::kernels`): the same bytes as
//!   `quantize_row_q{8_0,4_0,4_1}_ref` for every finite input, and as the Python `gguf.quants`
//!   except the sign of a zero scale in one Q4_1 corner where numpy itself depends on SIMD lane
//!   order (`docs/apr.md` §5.2). Explicit: nothing is quantized unless
//!   [`TensorModel::quantize`] (or a sibling) is called. NaN and infinities are refused
//!   (`QuantizationCorrupt`), never quantized; tensors whose last dimension is not a multiple of
//!   32 are kept as they are by the block types, and the reason recorded.
//! - **Export is strict where ggml is strict.** The GGUF writer ([`gguf`]) enforces ggml's loader
//!   rules (name length, dimensions, block multiples, alignment) with typed errors, rather than
//!   writing a file only the lenient Python reader accepts.
//! - **Leak tracing is an embedding, not a flag** ([`watermark`], issue 16): a buyer's mark goes
//!   into F32 tensors (keyed QIM) and Q8_0/Q4_x blocks (keyed quant parity), the whole model is
//!   read back before it counts, and only then may a license say WATERMARKED.
//! - **Memory, not files, is the core.** Everything loads from `&[u8]` (`include_bytes!`,
//!   wasm32); the [`fs`] module (feature `fs`, native only) adds atomic saves and mapped loads.
//!
//! ```
//! use apr::{ModelType, SaveOptions, Tensor, TensorModel, QuantType};
//!
//! let weights: Vec<f32> = (0..64).map(|i| i as f32 / 64.0).collect();
//! let model = TensorModel::new(vec![Tensor::from_f32("w", vec![2, 32], &weights)?])?;
//! let quantized = model.quantize(QuantType::Q8_0)?;
//! let bytes = apr::save_tensors_to_bytes(&quantized, ModelType::NeuralSequential, &SaveOptions::default())?;
//! let back = apr::load_tensors_from_bytes(&bytes, ModelType::NeuralSequential)?;
//! assert_eq!(back.tensors, quantized.tensors);
//! # Ok::<(), apr::Error>(())
//! ```
//!
//! # Features
//! - `format-compression` (default): zstd/LZ4 payloads.
//! - `format-encryption` (default): encrypted models through `envelope-crypto`
//!   ([`AprFile::decrypt_model`], [`AprFile::decrypt_tensors`]).
//! - `format-signing` (default): signature policy on load ([`load_verified`]).
//! - `fs` (default, native only): [`fs`].
//!
//! - `commercial` (default; implies both): [`commercial`] packages and loads licensed models
//!   (003 §8.5).
//! - `std` (default; implied by all the above): everything but [`load_from_bytes`] and
//!   [`AprFile`]'s metadata. Without it the crate is `no_std` + `alloc` (bare-metal targets such
//!   as `thumbv7em-none-eabihf`): a serde model from the bytes of an uncompressed, unencrypted
//!   file, after the same checks (`docs/apr.md`, "Reading without std").

#![cfg_attr(not(feature = "std"), no_std)]

extern crate alloc;

mod card;
mod codec;
#[cfg(feature = "commercial")]
pub mod commercial;
mod error;
#[cfg(feature = "std")]
pub mod gguf;
#[cfg(feature = "std")]
pub mod hf;
#[cfg(feature = "std")]
mod load;
#[cfg(feature = "std")]
mod model;
mod model_type;
pub mod quant;
#[cfg(feature = "std")]
mod ranged;
#[cfg(feature = "std")]
pub mod regression;
#[cfg(feature = "std")]
pub mod safetensors;
#[cfg(feature = "std")]
mod summary;
mod tensor;
#[cfg(feature = "std")]
pub mod trueno;
#[cfg(feature = "std")]
pub mod watermark;

#[cfg(all(feature = "fs", not(target_arch = "wasm32")))]
pub mod fs;
#[cfg(feature = "std")]
mod secure;

pub use card::{
    MAX_METADATA_DEPTH, ModelCard, ModelMetadata, PayloadKind, SourceFiles, TensorEntry,
};
pub use codec::{AprFile, MAX_PAYLOAD_DEPTH, load_from_bytes};
#[cfg(feature = "std")]
pub use codec::{
    SaveOptions, load_tensors_from_bytes, model_parts, save_tensors_to_bytes, save_to_bytes,
    tensor_parts,
};
pub use error::{DecodeError, Error, Result};
#[cfg(feature = "std")]
pub use load::LoadOptions;
#[cfg(feature = "std")]
pub use model::{Progress, QuantizationSession, TensorModel};
pub use model_type::ModelType;
#[cfg(feature = "std")]
pub use quant::{
    MixedPrecisionHooks, QuantizationHooks, QuantizedBlock, Quantizer, QuantizerRegistry,
    TensorRole, UniformQuantization,
};
pub use quant::{QuantType, QuantizationInfo};
#[cfg(feature = "std")]
pub use ranged::{RangedModel, RangedOpening};
#[cfg(feature = "format-signing")]
pub use secure::load_verified;
#[cfg(feature = "std")]
pub use summary::{ModelSummary, TensorSummary, summarize};
pub use tensor::{DType, MAX_DIMS, MAX_NAME_BYTES, Tensor};
