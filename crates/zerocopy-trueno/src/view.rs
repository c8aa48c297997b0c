//! Typed views of one tensor's bytes: borrowed slices where the memory allows it, one documented
//! copy otherwise, and the hand-off to trueno.

use bytemuck::Pod;
use envelope_core::{Error, Result};
use half::{bf16, f16};

use crate::dtype::DType;
use crate::index::TensorEntry;

/// One tensor: its index entry and its bytes (verified as the reader's integrity mode says).
#[derive(Debug, Clone, Copy)]
pub struct TensorView<'a> {
    entry: &'a TensorEntry,
    bytes: &'a [u8],
}

/// Element types a view can be borrowed as, with the [`DType`] they must be stored as.
pub trait Element: Pod {
    /// The stored type this Rust type reads.
    const DTYPE: DType;
}

macro_rules! element {
    ($($rust:ty => $dtype:ident),* $(,)?) => {
        $(impl Element for $rust {
            const DTYPE: DType = DType::$dtype;
        })*
    };
}

element!(f32 => F32, f16 => F16, bf16 => Bf16, i8 => I8, u8 => U8, f64 => F64, i32 => I32, i64 => I64);

impl<'a> TensorView<'a> {
    pub(crate) fn new(entry: &'a TensorEntry, bytes: &'a [u8]) -> Self {
        Self { entry, bytes }
    }

    /// The index entry: name, type, shape, strides, hint, offset.
    #[must_use]
    pub fn entry(&self) -> &'a TensorEntry {
        self.entry
    }

    /// The raw little-endian bytes.
    #[must_use]
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The elements, borrowed from the file with no copy.
    ///
    /// # Errors
    /// `Usage` (`WrongType`) if the tensor is not stored as `T`; `Usage` if the bytes are not
    /// aligned for `T` in memory (a byte vector rather than a memory map: use
    /// [`TensorView::to_vec`]) or the host is big-endian.
    pub fn as_slice<T: Element>(&self) -> Result<&'a [T]> {
        if self.entry.dtype != T::DTYPE {
            return Err(Error::WrongType {
                name: self.entry.name.clone(),
                stored: self.entry.dtype.name(),
                requested: T::DTYPE.name(),
            });
        }
        if cfg!(target_endian = "big") {
            return Err(Error::InvalidArgument(
                "zero-copy views need a little-endian host",
            ));
        }
        bytemuck::try_cast_slice(self.bytes).map_err(|_| {
            Error::InvalidArgument(
                "the tensor's bytes are not aligned in memory for a borrowed view (use to_vec)",
            )
        })
    }

    /// `f32` elements, borrowed.
    ///
    /// # Errors
    /// As [`TensorView::as_slice`].
    pub fn as_f32(&self) -> Result<&'a [f32]> {
        self.as_slice()
    }

    /// The elements as an owned vector: borrowed-then-copied when aligned, decoded byte by byte
    /// otherwise (the in-memory and wasm32 path). One copy either way.
    ///
    /// # Errors
    /// `Usage` (`WrongType`) if the tensor is not stored as `T`.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        if let Ok(slice) = self.as_slice::<T>() {
            return Ok(slice.to_vec());
        }
        if self.entry.dtype != T::DTYPE {
            return Err(Error::WrongType {
                name: self.entry.name.clone(),
                stored: self.entry.dtype.name(),
                requested: T::DTYPE.name(),
            });
        }
        Ok(self
            .bytes
            .chunks_exact(core::mem::size_of::<T>())
            .map(|element| {
                let mut value = T::zeroed();
                let target = bytemuck::bytes_of_mut(&mut value);
                target.copy_from_slice(element);
                if cfg!(target_endian = "big") {
                    target.reverse();
                }
                value
            })
            .collect())
    }

    /// Every element converted to `f32` (f16, bf16, integers and f64 included), in storage order:
    /// one copy.
    #[must_use]
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        reason = "conversion to f32 is the point; f64 and 64-bit integers round to nearest"
    )]
    pub fn to_f32_vec(&self) -> Vec<f32> {
        let convert = |chunk: &[u8]| -> f32 {
            match self.entry.dtype {
                DType::F32 => f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]),
                DType::F16 => f16::from_le_bytes([chunk[0], chunk[1]]).to_f32(),
                DType::Bf16 => bf16::from_le_bytes([chunk[0], chunk[1]]).to_f32(),
                DType::I8 => f32::from(i8::from_le_bytes([chunk[0]])),
                DType::U8 => f32::from(chunk[0]),
                DType::F64 => f64::from_le_bytes(chunk.try_into().unwrap_or([0; 8])) as f32,
                DType::I32 => i32::from_le_bytes(chunk.try_into().unwrap_or([0; 4])) as f32,
                DType::I64 => i64::from_le_bytes(chunk.try_into().unwrap_or([0; 8])) as f32,
            }
        };
        self.bytes
            .chunks_exact(self.entry.dtype.size())
            .map(convert)
            .collect()
    }

    /// The element at `indices` (one per dimension), through the strides, converted to `f32`.
    ///
    /// # Errors
    /// `Usage` if the number of indices differs from the number of dimensions or one is out of
    /// range.
    pub fn get_f32(&self, indices: &[u64]) -> Result<f32> {
        if indices.len() != self.entry.shape.len() {
            return Err(Error::ArgumentMismatch {
                what: "indices against the tensor's dimensions",
                expected: self.entry.shape.len() as u64,
                found: indices.len() as u64,
            });
        }
        if let Some((&index, &len)) = indices
            .iter()
            .zip(&self.entry.shape)
            .find(|(i, dim)| i >= dim)
        {
            return Err(Error::OutOfRange {
                what: "index along a dimension of the tensor",
                index,
                len,
            });
        }
        let element: u64 = indices
            .iter()
            .zip(&self.entry.strides)
            .map(|(i, stride)| i * stride)
            .sum();
        let size = self.entry.dtype.size();
        let start = usize::try_from(element)
            .unwrap_or(usize::MAX)
            .saturating_mul(size);
        let bytes = self
            .bytes
            .get(start..start.saturating_add(size))
            .ok_or(Error::OutOfRange {
                what: "byte of the tensor",
                index: start as u64,
                len: self.bytes.len() as u64,
            })?;
        Ok(TensorView::new(self.entry, bytes).to_f32_vec()[0])
    }

    /// Rows and columns of a 2-D contiguous tensor.
    ///
    /// # Errors
    /// `Usage` if the tensor is not 2-D and row-major contiguous.
    pub fn matrix_shape(&self) -> Result<(usize, usize)> {
        match self.entry.shape.as_slice() {
            [rows, cols] if self.entry.is_contiguous() => Ok((
                Error::fit_in_memory("a matrix's rows", *rows)?,
                Error::fit_in_memory("a matrix's columns", *cols)?,
            )),
            _ => Err(Error::InvalidArgument(
                "a matrix view needs a 2-D row-major tensor",
            )),
        }
    }
}

/// Hand-off to `trueno` (feature `trueno`). trueno's `Vector` and `Matrix` own a `Vec<f32>`, so
/// each conversion is exactly one copy of the tensor (from the mapped pages into that vector),
/// converting f16/bf16/integers to f32 on the way; the file itself is never copied.
#[cfg(feature = "trueno")]
impl TensorView<'_> {
    /// The tensor as a trueno `Vector<f32>` (any shape, storage order).
    #[must_use]
    pub fn to_trueno_vector(&self) -> trueno::Vector<f32> {
        match self.as_f32() {
            Ok(slice) => trueno::Vector::from_slice(slice),
            Err(_) => trueno::Vector::from_vec(self.to_f32_vec()),
        }
    }

    /// A 2-D row-major tensor as a trueno `Matrix<f32>`.
    ///
    /// # Errors
    /// As [`TensorView::matrix_shape`].
    pub fn to_trueno_matrix(&self) -> Result<trueno::Matrix<f32>> {
        let (rows, cols) = self.matrix_shape()?;
        let data = match self.as_f32() {
            Ok(slice) => slice.to_vec(),
            Err(_) => self.to_f32_vec(),
        };
        trueno::Matrix::from_vec(rows, cols, data)
            .map_err(|_| Error::InvalidArgument("trueno refused the matrix shape"))
    }
}
