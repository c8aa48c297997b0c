//! Element types of aligned arrays and tensors, and the backend hints stored with them.
//!
//! The two specs number element types differently: `.apr` tensors (003 §9.2) use
//! `0=f32, 1=f16, 2=bf16, 3=i8, 4=u8`, `.ald` arrays (000 §10.2) use
//! `0=f32, 1=f64, 2=i32, 3=i64, 4=u8`. One [`DType`] serves both; the code is read and written
//! through the file's [`Format`].

use envelope_core::Format;

/// The element type of an array or tensor. Elements are stored little-endian.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// IEEE 754 binary32.
    F32,
    /// IEEE 754 binary16 (`.apr`).
    F16,
    /// bfloat16 (`.apr`).
    Bf16,
    /// Signed byte (`.apr`).
    I8,
    /// Unsigned byte (both).
    U8,
    /// IEEE 754 binary64 (`.ald`).
    F64,
    /// 32-bit signed integer (`.ald`).
    I32,
    /// 64-bit signed integer (`.ald`).
    I64,
}

impl DType {
    /// Bytes per element.
    #[must_use]
    pub const fn size(self) -> usize {
        match self {
            Self::I8 | Self::U8 => 1,
            Self::F16 | Self::Bf16 => 2,
            Self::F32 | Self::I32 => 4,
            Self::F64 | Self::I64 => 8,
        }
    }

    /// Lower-case name (`f32`, `bf16`, ...).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::F32 => "f32",
            Self::F16 => "f16",
            Self::Bf16 => "bf16",
            Self::I8 => "i8",
            Self::U8 => "u8",
            Self::F64 => "f64",
            Self::I32 => "i32",
            Self::I64 => "i64",
        }
    }

    /// The code of this type in `format`'s table, if that format has it.
    #[must_use]
    pub const fn code(self, format: Format) -> Option<u8> {
        match (format, self) {
            (_, Self::F32) => Some(0),
            (Format::Model, Self::F16) => Some(1),
            (Format::Model, Self::Bf16) => Some(2),
            (Format::Model, Self::I8) => Some(3),
            (_, Self::U8) => Some(4),
            (Format::Dataset, Self::F64) => Some(1),
            (Format::Dataset, Self::I32) => Some(2),
            (Format::Dataset, Self::I64) => Some(3),
            _ => None,
        }
    }

    /// The type with code `code` in `format`'s table.
    #[must_use]
    pub const fn from_code(format: Format, code: u8) -> Option<Self> {
        match (format, code) {
            (_, 0) => Some(Self::F32),
            (_, 4) => Some(Self::U8),
            (Format::Model, 1) => Some(Self::F16),
            (Format::Model, 2) => Some(Self::Bf16),
            (Format::Model, 3) => Some(Self::I8),
            (Format::Dataset, 1) => Some(Self::F64),
            (Format::Dataset, 2) => Some(Self::I32),
            (Format::Dataset, 3) => Some(Self::I64),
            _ => None,
        }
    }
}

impl core::fmt::Display for DType {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// Which SIMD backend a tensor was laid out for (003 §9.3, 000 §10.3). A hint: readers may
/// dispatch on it or ignore it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum BackendHint {
    /// 0x00: let the runtime decide.
    #[default]
    Auto,
    /// 0x01: scalar fallback.
    Scalar,
    /// 0x02: SSE2, 128-bit.
    Sse2,
    /// 0x03: AVX, 256-bit.
    Avx,
    /// 0x04: AVX2 + FMA, 256-bit.
    Avx2,
    /// 0x05: AVX-512, 512-bit.
    Avx512,
    /// 0x06: NEON, 128-bit.
    Neon,
    /// 0x07: WebAssembly SIMD, 128-bit.
    WasmSimd,
    /// 0x08: GPU (wgpu compute).
    Gpu,
}

impl BackendHint {
    const ALL: [Self; 9] = [
        Self::Auto,
        Self::Scalar,
        Self::Sse2,
        Self::Avx,
        Self::Avx2,
        Self::Avx512,
        Self::Neon,
        Self::WasmSimd,
        Self::Gpu,
    ];

    /// The stored byte.
    #[must_use]
    pub fn code(self) -> u8 {
        // The enum's order is the table's order; the position always fits a byte.
        Self::ALL
            .iter()
            .position(|hint| *hint == self)
            .and_then(|i| u8::try_from(i).ok())
            .unwrap_or(0)
    }

    /// The hint stored as `code`.
    #[must_use]
    pub fn from_code(code: u8) -> Option<Self> {
        Self::ALL.get(usize::from(code)).copied()
    }

    /// The hint whose [`BackendHint::name`] is `name`.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|hint| hint.name() == name)
    }

    /// Lower-case name (`auto`, `avx2`, ...).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Scalar => "scalar",
            Self::Sse2 => "sse2",
            Self::Avx => "avx",
            Self::Avx2 => "avx2",
            Self::Avx512 => "avx512",
            Self::Neon => "neon",
            Self::WasmSimd => "wasm-simd",
            Self::Gpu => "gpu",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [DType; 8] = [
        DType::F32,
        DType::F16,
        DType::Bf16,
        DType::I8,
        DType::U8,
        DType::F64,
        DType::I32,
        DType::I64,
    ];

    #[test]
    fn codes_follow_each_format_table() {
        for format in [Format::Model, Format::Dataset] {
            for code in 0..=255u8 {
                if let Some(dtype) = DType::from_code(format, code) {
                    assert_eq!(dtype.code(format), Some(code));
                }
            }
            for dtype in ALL {
                if let Some(code) = dtype.code(format) {
                    assert_eq!(DType::from_code(format, code), Some(dtype));
                }
            }
        }
        assert_eq!(DType::from_code(Format::Model, 1), Some(DType::F16));
        assert_eq!(DType::from_code(Format::Dataset, 1), Some(DType::F64));
        assert_eq!(DType::from_code(Format::Model, 5), None);
        assert_eq!(DType::F64.code(Format::Model), None);
    }

    #[test]
    fn backend_hints_round_trip() {
        for code in 0..=8 {
            assert_eq!(BackendHint::from_code(code).unwrap().code(), code);
        }
        assert_eq!(BackendHint::from_code(9), None);
    }
}
