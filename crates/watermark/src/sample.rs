//! The float types a mark lives in: f64 and f32 columns, f32 and f16 tensors.

/// A float type the engine reads and writes. Sealed: the scheme's precision rule
/// ([`crate::PRECISION_MARGIN_BITS`]) is stated per IEEE format, so only IEEE formats implement it.
pub trait Sample: Copy + sealed::Sealed {
    /// Explicit mantissa bits of the IEEE format (52, 23, 10).
    const MANTISSA_BITS: u32;
    /// The value, exactly, as f64.
    fn to_f64(self) -> f64;
    /// `value` rounded to nearest in this format.
    fn from_f64(value: f64) -> Self;
    /// The IEEE bit pattern, widened (what keyless detection reads the low bits of).
    fn bits(self) -> u64;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f64 {}
    impl Sealed for f32 {}
    #[cfg(feature = "f16")]
    impl Sealed for half::f16 {}
}

impl Sample for f64 {
    const MANTISSA_BITS: u32 = 52;
    fn to_f64(self) -> f64 {
        self
    }
    fn from_f64(value: f64) -> Self {
        value
    }
    fn bits(self) -> u64 {
        self.to_bits()
    }
}

impl Sample for f32 {
    const MANTISSA_BITS: u32 = 23;
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    #[allow(
        clippy::cast_possible_truncation,
        reason = "rounding to the nearest f32 is the point; the precision rule keeps it far below the step"
    )]
    fn from_f64(value: f64) -> Self {
        value as Self
    }
    fn bits(self) -> u64 {
        u64::from(self.to_bits())
    }
}

#[cfg(feature = "f16")]
impl Sample for half::f16 {
    const MANTISSA_BITS: u32 = 10;
    fn to_f64(self) -> f64 {
        Self::to_f64(self)
    }
    fn from_f64(value: f64) -> Self {
        Self::from_f64(value)
    }
    fn bits(self) -> u64 {
        u64::from(self.to_bits())
    }
}
