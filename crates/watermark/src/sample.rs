//! The value types a mark lives in: f64 and f32 columns, f32 and f16 tensors, and integer columns
//! (docs/watermark.md §3, "Integer slices").
//!
//! **Integers stay integers.** An integer slice is read as binary64 (exact for `|x| ≤ 2^53`;
//! larger magnitudes are ignored like NaN) and marked on the same grid as a float slice, with the
//! moved value rounded to the nearest integer (ties to even). Rounding moves a value by at most
//! half a unit, so the grid's step must be at least `2^PRECISION_MARGIN_BITS = 32` units for the
//! rounding to stay within `Δ/64`, the bound the precision rule gives floats
//! ([`Sample::MIN_EXPONENT`]): integer columns whose interquartile range is at least
//! `32 / strength` units (32,000 at the default strength: timestamps, amounts in cents) can carry
//! a mark; ids, counts and small codes cannot.

/// A value type the engine reads and writes. Sealed: the scheme's precision rule
/// ([`crate::PRECISION_MARGIN_BITS`]) is stated per format (IEEE floats and two's-complement
/// integers), so only those formats implement it.
pub trait Sample: Copy + sealed::Sealed {
    /// Explicit mantissa bits of the format the value is read in (52, 23, 10; integers are read
    /// as binary64: 52).
    const MANTISSA_BITS: u32;
    /// The smallest cell exponent `E` a slice of this type is marked or read at: none for floats
    /// (their precision rule bounds the step from below), [`crate::PRECISION_MARGIN_BITS`] for
    /// integers (a step of at least 32 units, so rounding to an integer moves a value by at most
    /// `Δ/64`).
    const MIN_EXPONENT: i32 = FLOAT_MIN_EXPONENT;
    /// The value, exactly, as f64 (NaN for an integer that binary64 cannot hold exactly, which
    /// the engine then ignores).
    fn to_f64(self) -> f64;
    /// `value` rounded to nearest in this format (integers: ties to even, saturating at the
    /// type's bounds; the embedder keeps a rounded value only if it is still in its target cell).
    fn from_f64(value: f64) -> Self;
    /// The bit pattern, widened (what keyless detection reads the low bits of): the IEEE
    /// encoding of a float, the two's-complement encoding of an integer.
    fn bits(self) -> u64;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f64 {}
    impl Sealed for f32 {}
    #[cfg(feature = "f16")]
    impl Sealed for half::f16 {}
    impl Sealed for i8 {}
    impl Sealed for i16 {}
    impl Sealed for i32 {}
    impl Sealed for i64 {}
    impl Sealed for u8 {}
    impl Sealed for u16 {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
}

/// Floats have no minimum exponent beyond the grid's own range.
const FLOAT_MIN_EXPONENT: i32 = i32::MIN;

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

/// Integers binary64 holds exactly: `|x| ≤ 2^53`.
const EXACT_INTEGER: u128 = 1 << 53;

macro_rules! integer_sample {
    ($($t:ty),*) => {$(
        impl Sample for $t {
            const MANTISSA_BITS: u32 = 52;
            #[allow(clippy::cast_possible_wrap, reason = "5 fits every integer type")]
            const MIN_EXPONENT: i32 = crate::PRECISION_MARGIN_BITS as i32;
            #[allow(
                clippy::cast_precision_loss,
                clippy::cast_lossless,
                reason = "exact up to 2^53 in magnitude, checked first"
            )]
            fn to_f64(self) -> f64 {
                if i128::from(self).unsigned_abs() <= EXACT_INTEGER {
                    self as f64
                } else {
                    f64::NAN
                }
            }
            #[allow(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                reason = "`as` saturates at the type's bounds (NaN gives 0); the embedder keeps the \
                          result only if it is still in its target cell"
            )]
            fn from_f64(value: f64) -> Self {
                value.round_ties_even() as Self
            }
            #[allow(
                clippy::cast_sign_loss,
                clippy::cast_possible_wrap,
                clippy::cast_lossless,
                reason = "the two's-complement pattern, sign-extended to 64 bits"
            )]
            fn bits(self) -> u64 {
                self as i64 as u64
            }
        }
    )*};
}

integer_sample!(i8, i16, i32, i64, u8, u16, u32, u64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_round_to_even_saturate_and_hide_what_binary64_cannot_hold() {
        assert_eq!(i64::from_f64(2.5), 2);
        assert_eq!(i64::from_f64(3.5), 4);
        assert_eq!(i64::from_f64(-2.5), -2);
        assert_eq!(u8::from_f64(300.0), 255);
        assert_eq!(u32::from_f64(-3.0), 0);
        assert!(i64::MAX.to_f64().is_nan());
        assert_eq!((1i64 << 53).to_f64(), 9_007_199_254_740_992.0);
        assert!(((1i64 << 53) + 1).to_f64().is_nan());
        assert!((-(1i64 << 53) - 1).to_f64().is_nan());
        assert!(u64::MAX.to_f64().is_nan());
        assert_eq!((-1i32).bits(), u64::MAX);
    }
}

#[cfg(test)]
mod integer_marks {
    use crate::{SellerKey, Skip, Traceability, Watermark, embed, extract};

    /// Millisecond timestamps over about a day: step 2^16 ms at strength 1e-3.
    fn timestamps() -> Vec<i64> {
        let mut rng = crate::synthetic::Rng::new(5);
        (0..20_000)
            .map(|_| {
                #[allow(clippy::cast_possible_truncation, reason = "test data")]
                let offset = (rng.uniform() * 86_400_000.0) as i64;
                1_750_000_000_000 + offset
            })
            .collect()
    }

    #[test]
    fn an_integer_column_is_marked_with_integers_and_read_back() {
        let seller = SellerKey::new([9; 32]);
        let mark = Watermark::for_buyer(&seller, b"acme");
        let original = timestamps();
        let mut marked = original.clone();
        let (report, traceability) = embed(&mut marked, &mark, &seller).unwrap();
        assert_eq!(traceability, Traceability::Extractable);
        assert!(report.marked > 19_000, "{report:?}");
        let step = 1i64 << report.exponent.unwrap();
        assert!(
            original
                .iter()
                .zip(&marked)
                .all(|(a, b)| (a - b).abs() <= 2 * step)
        );
        let mut leaked: Vec<i64> = marked.iter().step_by(2).copied().collect();
        leaked.reverse();
        assert_eq!(
            extract(&leaked, &seller).unwrap().buyer_hash,
            mark.buyer_hash
        );
        assert!(extract(&leaked, &SellerKey::new([8; 32])).is_none());
        assert!(extract(&original, &seller).is_none());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

        /// Any integer column with a spread the step rule accepts is marked with integers that
        /// moved by at most two steps, and reads back as the buyer.
        #[test]
        fn integer_columns_with_enough_spread_read_back(
            seed in proptest::prelude::any::<u64>(),
            offset in -(1i64 << 45)..(1i64 << 45),
            spread in 100_000u32..50_000_000,
        ) {
            let seller = SellerKey::new([3; 32]);
            let mark = Watermark::for_buyer(&seller, &seed.to_le_bytes());
            let mut rng = crate::synthetic::Rng::new(seed);
            #[allow(clippy::cast_possible_truncation, reason = "below the spread")]
            let original: Vec<i64> = (0..6_000)
                .map(|_| offset + (rng.uniform() * f64::from(spread)) as i64)
                .collect();
            let mut marked = original.clone();
            let (report, _) = embed(&mut marked, &mark, &seller).unwrap();
            let step = 1i64 << report.exponent.unwrap();
            proptest::prop_assert!(step >= 32);
            proptest::prop_assert!(original.iter().zip(&marked).all(|(a, b)| (a - b).abs() <= 2 * step));
            proptest::prop_assert_eq!(extract(&marked, &seller).map(|f| f.buyer_hash), Some(mark.buyer_hash));
        }
    }

    #[test]
    fn an_integer_step_under_32_units_is_skipped_and_says_why() {
        let seller = SellerKey::new([9; 32]);
        let mark = Watermark::for_buyer(&seller, b"acme");
        let mut codes: Vec<i32> = (0..10_000).map(|i| i % 1000).collect();
        let report = crate::Embedder::new(&seller, &mark)
            .unwrap()
            .embed(&mut codes);
        assert_eq!(
            report.skipped,
            Some(Skip::StepTooFine {
                exponent: -1,
                min_exponent: 5
            })
        );
        assert!(
            codes
                .iter()
                .enumerate()
                .all(|(i, &c)| c == i32::try_from(i % 1000).unwrap())
        );
    }
}
