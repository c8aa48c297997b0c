//! 64-byte-aligned arrays and tensors inside `.apr` models and `.ald` datasets (the TRUENO_NATIVE
//! flag; 003 §9, 000 §10, 001 §8), read in place.
//!
//! A TRUENO_NATIVE file stores every tensor uncompressed, little-endian, at a multiple of 64 bytes
//! from a payload that itself starts on a 64-byte boundary of the file; its tensor index names
//! each tensor's type, shape, strides, offset, size and CRC-32C. Mapped from disk, a tensor is
//! then a `&[f32]` (or `&[f16]`, `&[i8]`, ...) pointing into the page cache: opening reads the
//! header and index only, and a tensor costs nothing until it is touched. The byte layout is
//! specified in `docs/zerocopy.md`.
//!
//! Key decisions:
//! - **Verified, still zero-copy.** Checking the CRC of a multi-GiB file on every open would undo
//!   the point, so [`Integrity`] offers a choice, and the default is the safe one that stays
//!   O(1) at open: each tensor's CRC-32C is checked the first time it is read
//!   ([`Integrity::PerTensor`]). [`Integrity::AtOpen`] checks the whole file once;
//!   [`Integrity::Trusted`] is for callers that verified the bytes already (a signature).
//! - **No `unsafe` here.** Typed views are `bytemuck` checked casts (alignment and length tested
//!   on the real slice); mapping is the `mapped-file` crate's, which documents what happens if
//!   the file is modified underneath (`MappedFile`).
//! - **One documented copy into trueno.** trueno's `Vector`/`Matrix` own a `Vec<f32>`, so handing
//!   a tensor over copies it once (feature `trueno`; see [`TensorView::to_trueno_vector`]).
//! - **Graceful degradation.** A byte buffer that is not 64-byte aligned in memory (or wasm32,
//!   where there is nothing to map) reads through the same API with a copy
//!   ([`TensorView::to_vec`], [`TensorView::to_f32_vec`]).
//!
//! ```
//! use envelope_core::{EnvelopeParts, Format};
//! use zerocopy_trueno::{AlignedTensors, BackendHint, DType, Integrity, TensorIndex, aligned_parts};
//!
//! let weights: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0].iter().flat_map(|x| x.to_le_bytes()).collect();
//! let bias: Vec<u8> = [0.5f32, -0.5].iter().flat_map(|x| x.to_le_bytes()).collect();
//! let index = TensorIndex::plan(
//!     [("w", DType::F32, &[2u64, 3][..]), ("b", DType::F32, &[2u64][..])],
//!     BackendHint::Auto,
//! )?;
//! let parts = aligned_parts(EnvelopeParts::new(Format::Model, 0x0001), index, &[&weights, &bias], None)?;
//! let bytes = parts.to_bytes()?;
//!
//! let tensors = AlignedTensors::open(&bytes[..], Format::Model, Integrity::PerTensor)?;
//! let w = tensors.tensor("w")?;
//! assert_eq!(w.entry().shape, [2, 3]);
//! assert_eq!(w.to_f32_vec(), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
//! assert_eq!(w.get_f32(&[1, 2])?, 6.0);
//! # Ok::<(), envelope_core::Error>(())
//! ```
//!
//! # Features
//! - `fs` (default, native only): [`MappedTensors::open_path`], memory-mapped.
//! - `trueno`: [`TensorView::to_trueno_vector`] and [`TensorView::to_trueno_matrix`].

mod aligned;
mod dtype;
mod index;
mod view;

pub use aligned::{AlignedTensors, Integrity, aligned_parts};
pub use dtype::{BackendHint, DType};
pub use index::{
    ALIGNMENT, MAX_DIMS, PREFIX_CRC_LEN, TensorEntry, TensorIndex, fnv1a64, row_major_strides,
};
pub use view::{Element, TensorView};

/// Aligned tensors of a memory-mapped file.
#[cfg(all(feature = "fs", not(target_arch = "wasm32")))]
pub type MappedTensors = AlignedTensors<mapped_file::MappedFile>;

#[cfg(all(feature = "fs", not(target_arch = "wasm32")))]
impl AlignedTensors<mapped_file::MappedFile> {
    /// Maps the file at `path` and opens it (see [`AlignedTensors::open`]): header and index
    /// only, whatever the file's size.
    ///
    /// # Errors
    /// `Io` if the file cannot be mapped, then as [`AlignedTensors::open`].
    pub fn open_path(
        path: impl AsRef<std::path::Path>,
        format: envelope_core::Format,
        integrity: Integrity,
    ) -> envelope_core::Result<Self> {
        Self::open(mapped_file::MappedFile::open(path)?, format, integrity)
    }

    /// Asks the kernel to read tensor `name`'s pages ahead (`madvise(WILLNEED)`), so a later pass
    /// over it does not wait for the disk. Unknown names are ignored: it is a hint.
    pub fn prefetch(&self, name: &str) {
        if let Some(entry) = self.index().get(name) {
            let range = self.file_range(entry);
            self.envelope().storage().advise_willneed(range);
        }
    }
}

#[cfg(all(feature = "fs", not(target_arch = "wasm32")))]
mod mapped;
#[cfg(all(feature = "fs", not(target_arch = "wasm32")))]
pub use mapped::{MappedDataset, MappedModel};
