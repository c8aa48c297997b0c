//! `MappedModel` and `MappedDataset` (003 §9.4, 000 §10.4): a TRUENO_NATIVE `.apr` or `.ald`
//! file mapped from disk, its tensors (or columns) handed out in place.

use std::path::Path;

use envelope_core::{Format, Result};
use mapped_file::MappedFile;

use crate::aligned::{AlignedTensors, Integrity};
use crate::view::TensorView;

macro_rules! mapped_file_type {
    ($name:ident, $format:expr, $item:literal, $what:literal) => {
        #[doc = concat!("A memory-mapped TRUENO_NATIVE ", $what, ": opening reads the header and the index only;")]
        #[doc = concat!("each ", $item, " is verified (by default) and borrowed when first asked for.")]
        #[derive(Debug)]
        pub struct $name {
            tensors: AlignedTensors<MappedFile>,
        }

        impl $name {
            #[doc = concat!("Maps and opens the ", $what, " at `path` with the default integrity")]
            /// ([`Integrity::PerTensor`]).
            ///
            /// # Errors
            /// `Io`, then as [`AlignedTensors::open`].
            pub fn open(path: impl AsRef<Path>) -> Result<Self> {
                Self::open_with(path, Integrity::default())
            }

            /// Maps and opens with the given integrity mode.
            ///
            /// # Errors
            /// As [`Self::open`].
            pub fn open_with(path: impl AsRef<Path>, integrity: Integrity) -> Result<Self> {
                Ok(Self {
                    tensors: AlignedTensors::open(MappedFile::open(path)?, $format, integrity)?,
                })
            }

            /// The aligned tensors (index, envelope, views).
            #[must_use]
            pub fn tensors(&self) -> &AlignedTensors<MappedFile> {
                &self.tensors
            }

            /// The metadata bytes (MessagePack card), as stored.
            #[must_use]
            pub fn metadata(&self) -> &[u8] {
                self.tensors.envelope().metadata()
            }

            #[doc = concat!("The ", $item, " called `name`, borrowed from the map.")]
            ///
            /// # Errors
            /// As [`AlignedTensors::tensor`].
            pub fn get(&self, name: &str) -> Result<TensorView<'_>> {
                self.tensors.tensor(name)
            }

            #[doc = concat!("The ", $item, " called `name` as `&[f32]`, borrowed from the map.")]
            ///
            /// # Errors
            /// As [`AlignedTensors::tensor`], and `Usage` if it is not stored as f32.
            pub fn get_f32(&self, name: &str) -> Result<&[f32]> {
                self.tensors.tensor(name)?.as_f32()
            }

            #[doc = concat!("Reads the pages of the ", $item, " called `name` ahead (`madvise(WILLNEED)`).")]
            pub fn prefetch(&self, name: &str) {
                self.tensors.prefetch(name);
            }

            #[doc = concat!("The ", $item, " called `name` as a trueno `Vector<f32>` (one copy: trueno's")]
            /// vectors own their data).
            ///
            /// # Errors
            /// As [`AlignedTensors::tensor`].
            #[cfg(feature = "trueno")]
            pub fn get_vector(&self, name: &str) -> Result<trueno::Vector<f32>> {
                Ok(self.tensors.tensor(name)?.to_trueno_vector())
            }
        }
    };
}

mapped_file_type!(MappedModel, Format::Model, "tensor", "model");
mapped_file_type!(MappedDataset, Format::Dataset, "column", "dataset");

impl MappedModel {
    /// The `model_type` of the header.
    #[must_use]
    pub fn model_type(&self) -> u16 {
        self.tensors.envelope().header().type_id()
    }

    /// The 2-D tensor called `name` as a trueno `Matrix<f32>` (one copy).
    ///
    /// # Errors
    /// As [`AlignedTensors::tensor`], and `Usage` if it is not a 2-D row-major tensor.
    #[cfg(feature = "trueno")]
    pub fn get_matrix(&self, name: &str) -> Result<trueno::Matrix<f32>> {
        self.tensors.tensor(name)?.to_trueno_matrix()
    }
}

impl MappedDataset {
    /// The `dataset_type` of the header.
    #[must_use]
    pub fn dataset_type(&self) -> u16 {
        self.tensors.envelope().header().type_id()
    }

    /// Number of rows (the header's `num_rows`).
    #[must_use]
    pub fn num_rows(&self) -> u64 {
        self.tensors.envelope().header().num_rows()
    }
}
