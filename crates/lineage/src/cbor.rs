//! `CBOR_CANONICAL`: RFC 8949 §4.2.1 core deterministic encoding, plus a bounded strict decoder.
//!
//! Written here rather than taken from a crate because no CBOR crate in the workspace guarantees
//! §4.2.1 output: integers and lengths in their shortest form, floats in the shortest of
//! binary16/32/64 that keeps the value exactly, definite lengths only, and map keys sorted by
//! their encoded bytes. Maps hold text keys only ([`Value::Map`] is a `BTreeMap<String, _>`), so
//! duplicate keys cannot be represented; for text keys, "sorted by encoded bytes" is the same as
//! RFC 7049's "shorter first, then bytewise", which is what `cbor2`'s `canonical=True` does.

use std::collections::BTreeMap;

use crate::error::{CborProblem, Error};

/// Nesting limit of the decoder (the encoder has none: values are built by trusted code).
pub const MAX_DECODE_DEPTH: usize = 64;

/// A CBOR data item of the subset the lineage contract uses.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Major type 0: an unsigned integer.
    Unsigned(u64),
    /// Major type 1: the integer `-1 - n` for the carried `n`.
    Negative(u64),
    /// Major type 2: a byte string (every hash is one, holding the 32 raw bytes).
    Bytes(Vec<u8>),
    /// Major type 3: a UTF-8 text string.
    Text(String),
    /// Major type 4: an array.
    Array(Vec<Value>),
    /// Major type 5: a map with text keys.
    Map(BTreeMap<String, Value>),
    /// Major type 7: a float, encoded in the shortest IEEE 754 width that keeps the value.
    Float(f64),
    /// Major type 7: `false` / `true`.
    Bool(bool),
    /// Major type 7: `null`.
    Null,
}

impl Value {
    /// A text item.
    #[must_use]
    pub fn text(s: &str) -> Self {
        Self::Text(s.to_owned())
    }

    /// A byte-string item.
    #[must_use]
    pub fn bytes(b: &[u8]) -> Self {
        Self::Bytes(b.to_vec())
    }

    /// A signed integer, as major type 0 or 1.
    #[must_use]
    pub fn int(i: i64) -> Self {
        match u64::try_from(i) {
            Ok(u) => Self::Unsigned(u),
            // -1 - n = i  =>  n = -(i + 1) = !i as unsigned.
            Err(_) => Self::Negative(!i.cast_unsigned()),
        }
    }

    /// The canonical encoding of this item.
    ///
    /// # Examples
    /// ```
    /// use lineage::cbor::Value;
    /// assert_eq!(Value::Float(1.5).to_canonical_bytes(), [0xf9, 0x3e, 0x00]);
    /// assert_eq!(Value::Unsigned(1000).to_canonical_bytes(), [0x19, 0x03, 0xe8]);
    /// ```
    #[must_use]
    pub fn to_canonical_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_into(&mut out);
        out
    }

    /// Appends the canonical encoding of this item to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        match self {
            Self::Unsigned(n) => head(out, 0, *n),
            Self::Negative(n) => head(out, 1, *n),
            Self::Bytes(b) => {
                head(out, 2, len_u64(b.len()));
                out.extend_from_slice(b);
            }
            Self::Text(s) => {
                head(out, 3, len_u64(s.len()));
                out.extend_from_slice(s.as_bytes());
            }
            Self::Array(items) => {
                head(out, 4, len_u64(items.len()));
                for item in items {
                    item.encode_into(out);
                }
            }
            Self::Map(map) => {
                head(out, 5, len_u64(map.len()));
                // RFC 8949 §4.2.1: keys sorted by their encoded bytes. For text keys that is
                // "shorter encoding first, then bytewise", which differs from BTreeMap's order.
                let mut entries: Vec<(Vec<u8>, &Value)> = map
                    .iter()
                    .map(|(k, v)| (Self::Text(k.clone()).to_canonical_bytes(), v))
                    .collect();
                entries.sort_by(|a, b| a.0.cmp(&b.0));
                for (k, v) in entries {
                    out.extend_from_slice(&k);
                    v.encode_into(out);
                }
            }
            Self::Float(f) => encode_float(out, *f),
            Self::Bool(false) => out.push(0xf4),
            Self::Bool(true) => out.push(0xf5),
            Self::Null => out.push(0xf6),
        }
    }
}

fn len_u64(n: usize) -> u64 {
    // usize is at most 64 bits on every supported target.
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// Writes a major type and argument in the shortest form (RFC 8949 §4.2.1, first rule).
fn head(out: &mut Vec<u8>, major: u8, arg: u64) {
    let mt = major << 5;
    if let Ok(small) = u8::try_from(arg) {
        if small < 24 {
            out.push(mt | small);
        } else {
            out.push(mt | 24);
            out.push(small);
        }
    } else if let Ok(v) = u16::try_from(arg) {
        out.push(mt | 25);
        out.extend_from_slice(&v.to_be_bytes());
    } else if let Ok(v) = u32::try_from(arg) {
        out.push(mt | 26);
        out.extend_from_slice(&v.to_be_bytes());
    } else {
        out.push(mt | 27);
        out.extend_from_slice(&arg.to_be_bytes());
    }
}

/// Shortest float that keeps the value (RFC 8949 §4.2.1 and §4.2.2: NaN as `f97e00`).
fn encode_float(out: &mut Vec<u8>, f: f64) {
    if f.is_nan() {
        out.extend_from_slice(&[0xf9, 0x7e, 0x00]);
    } else if let Some(h) = f64_to_f16_exact(f) {
        out.push(0xf9);
        out.extend_from_slice(&h.to_be_bytes());
    } else if let Some(s) = f64_to_f32_exact(f) {
        out.push(0xfa);
        out.extend_from_slice(&s.to_bits().to_be_bytes());
    } else {
        out.push(0xfb);
        out.extend_from_slice(&f.to_bits().to_be_bytes());
    }
}

#[expect(
    clippy::cast_possible_truncation,
    reason = "the round trip below proves the narrowing exact"
)]
fn f64_to_f32_exact(f: f64) -> Option<f32> {
    let s = f as f32;
    // Infinity narrows to infinity, and -0.0 keeps its sign: both are exact.
    (f64::from(s).to_bits() == f.to_bits()).then_some(s)
}

/// The binary16 bit pattern of `f` when binary16 represents it exactly (non-NaN input: the
/// caller writes NaN's canonical form). `half` rounds to nearest; the round trip proves the
/// narrowing exact (infinities and signed zeros included).
fn f64_to_f16_exact(f: f64) -> Option<u16> {
    let h = half::f16::from_f64(f);
    (h.to_f64().to_bits() == f.to_bits()).then_some(h.to_bits())
}

/// Decodes a binary16 bit pattern (used by the decoder and the tests).
#[must_use]
pub fn f16_to_f64(h: u16) -> f64 {
    half::f16::from_bits(h).to_f64()
}

/// Decodes exactly one canonical CBOR item that spans all of `bytes`.
///
/// Strict: anything [`Value::to_canonical_bytes`] would not produce is refused (indefinite
/// lengths, non-shortest forms, unsorted or non-text map keys, tags, trailing bytes), by decoding
/// and re-encoding. No allocation is sized by a length field beyond the bytes that remain.
///
/// # Errors
/// [`Error::Cbor`] with the offset of the problem.
///
/// # Examples
/// ```
/// use lineage::cbor::{decode, Value};
/// let v = Value::Array(vec![Value::Unsigned(1), Value::text("a")]);
/// assert_eq!(decode(&v.to_canonical_bytes())?, v);
/// assert!(decode(&[0x18, 0x01]).is_err()); // 1 in a two-byte form: not canonical
/// # Ok::<(), lineage::Error>(())
/// ```
pub fn decode(bytes: &[u8]) -> Result<Value, Error> {
    let mut cur = Cursor { bytes, pos: 0 };
    let v = cur.item(0)?;
    if cur.pos != bytes.len() {
        return Err(Error::Cbor {
            offset: cur.pos,
            problem: CborProblem::TrailingBytes,
            source: None,
        });
    }
    if v.to_canonical_bytes() != bytes {
        return Err(Error::Cbor {
            offset: 0,
            problem: CborProblem::NotCanonical,
            source: None,
        });
    }
    Ok(v)
}

struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn err(&self, problem: CborProblem) -> Error {
        Error::Cbor {
            offset: self.pos,
            problem,
            source: None,
        }
    }

    fn take(&mut self, n: usize) -> Result<&[u8], Error> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or_else(|| self.err(CborProblem::Truncated))?;
        let s = self
            .bytes
            .get(self.pos..end)
            .ok_or_else(|| self.err(CborProblem::Truncated))?;
        self.pos = end;
        Ok(s)
    }

    fn remaining(&self) -> usize {
        self.bytes.len().saturating_sub(self.pos)
    }

    fn arg(&mut self, info: u8) -> Result<u64, Error> {
        Ok(match info {
            0..=23 => u64::from(info),
            24 => u64::from(self.take(1)?[0]),
            25 => u64::from(u16::from_be_bytes(self.fixed::<2>()?)),
            26 => u64::from(u32::from_be_bytes(self.fixed::<4>()?)),
            27 => u64::from_be_bytes(self.fixed::<8>()?),
            _ => return Err(self.err(CborProblem::Unsupported)),
        })
    }

    fn fixed<const N: usize>(&mut self) -> Result<[u8; N], Error> {
        let s = self.take(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    fn len(&mut self, info: u8) -> Result<usize, Error> {
        let n = self.arg(info)?;
        // Every element takes at least one byte: a length past what remains is refused before
        // anything is allocated.
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= self.remaining())
            .ok_or_else(|| self.err(CborProblem::Truncated))
    }

    fn item(&mut self, depth: usize) -> Result<Value, Error> {
        if depth > MAX_DECODE_DEPTH {
            return Err(self.err(CborProblem::TooDeep));
        }
        let ib = self.take(1)?[0];
        let (major, info) = (ib >> 5, ib & 0x1f);
        match major {
            0 => Ok(Value::Unsigned(self.arg(info)?)),
            1 => Ok(Value::Negative(self.arg(info)?)),
            2 => {
                let n = self.len(info)?;
                Ok(Value::Bytes(self.take(n)?.to_vec()))
            }
            3 => {
                let n = self.len(info)?;
                let start = self.pos;
                let s = self.take(n)?;
                let s = std::str::from_utf8(s).map_err(|e| Error::Cbor {
                    offset: start,
                    problem: CborProblem::InvalidUtf8,
                    source: Some(e),
                })?;
                Ok(Value::Text(s.to_owned()))
            }
            4 => {
                let n = self.len(info)?;
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.item(depth + 1)?);
                }
                Ok(Value::Array(items))
            }
            5 => {
                let n = self.len(info)?;
                let mut map = BTreeMap::new();
                for _ in 0..n {
                    let key = match self.item(depth + 1)? {
                        Value::Text(k) => k,
                        _ => return Err(self.err(CborProblem::NonTextKey)),
                    };
                    let v = self.item(depth + 1)?;
                    if map.insert(key, v).is_some() {
                        return Err(self.err(CborProblem::DuplicateKey));
                    }
                }
                Ok(Value::Map(map))
            }
            7 => match info {
                20 => Ok(Value::Bool(false)),
                21 => Ok(Value::Bool(true)),
                22 => Ok(Value::Null),
                25 => Ok(Value::Float(f16_to_f64(u16::from_be_bytes(
                    self.fixed::<2>()?,
                )))),
                26 => Ok(Value::Float(f64::from(f32::from_be_bytes(
                    self.fixed::<4>()?,
                )))),
                27 => Ok(Value::Float(f64::from_be_bytes(self.fixed::<8>()?))),
                _ => Err(self.err(CborProblem::Unsupported)),
            },
            _ => Err(self.err(CborProblem::Unsupported)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(v: &Value) -> String {
        v.to_canonical_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// RFC 8949 Appendix A, every example inside the subset this encoder covers.
    #[test]
    fn rfc8949_appendix_a_examples_encode_exactly() {
        let cases: &[(Value, &str)] = &[
            (Value::Bool(false), "f4"),
            (Value::Bool(true), "f5"),
            (Value::Null, "f6"),
            (Value::Bytes(vec![]), "40"),
            (Value::Bytes(vec![1, 2, 3, 4]), "4401020304"),
            (Value::text(""), "60"),
            (Value::text("a"), "6161"),
            (Value::text("IETF"), "6449455446"),
            (Value::text("\"\\"), "62225c"),
            (Value::text("\u{00fc}"), "62c3bc"),
            (Value::text("\u{6c34}"), "63e6b0b4"),
            (Value::text("\u{10151}"), "64f0908591"),
            (Value::Array(vec![]), "80"),
            (
                Value::Array(vec![
                    Value::Unsigned(1),
                    Value::Unsigned(2),
                    Value::Unsigned(3),
                ]),
                "83010203",
            ),
            (
                Value::Array((1..=25).map(Value::Unsigned).collect()),
                "98190102030405060708090a0b0c0d0e0f101112131415161718181819",
            ),
            (Value::Map(BTreeMap::new()), "a0"),
            (
                Value::Map(
                    [("a", 1u64), ("b", 2)]
                        .into_iter()
                        .map(|(k, v)| (k.to_owned(), Value::Unsigned(v)))
                        .collect(),
                ),
                "a2616101616202",
            ),
            (
                Value::Map(
                    ["a", "b", "c", "d", "e"]
                        .iter()
                        .map(|k| ((*k).to_owned(), Value::text(&k.to_uppercase())))
                        .collect(),
                ),
                "a56161614161626142616361436164614461656145",
            ),
        ];
        for (v, want) in cases {
            assert_eq!(hex(v), *want, "{v:?}");
        }
        let numbers: Vec<&str> = APPENDIX_A_NUMBERS.split_whitespace().collect();
        for pair in numbers.chunks(2) {
            let [diagnostic, want] = pair else {
                panic!("unpaired {pair:?}")
            };
            assert_eq!(hex(&number(diagnostic)), *want, "{diagnostic}");
        }
    }

    /// RFC 8949 Appendix A's number examples inside the subset, as `diagnostic hex` pairs.
    const APPENDIX_A_NUMBERS: &str = "
        0 00  1 01  10 0a  23 17  24 1818  25 1819  100 1864  1000 1903e8  1000000 1a000f4240
        1000000000000 1b000000e8d4a51000  18446744073709551615 1bffffffffffffffff
        -18446744073709551616 3bffffffffffffffff  -1 20  -10 29  -100 3863  -1000 3903e7
        0.0 f90000  -0.0 f98000  1.0 f93c00  1.1 fb3ff199999999999a  1.5 f93e00  65504.0 f97bff
        100000.0 fa47c35000  3.4028234663852886e+38 fa7f7fffff  1.0e+300 fb7e37e43c8800759c
        5.960464477539063e-8 f90001  0.00006103515625 f90400  -4.0 f9c400
        -4.1 fbc010666666666666  Infinity f97c00  NaN f97e00  -Infinity f9fc00";

    /// A number in diagnostic notation: an integer literal is an integer item, the rest floats.
    fn number(diagnostic: &str) -> Value {
        match diagnostic.parse::<i128>() {
            Ok(n) if n >= 0 => Value::Unsigned(u64::try_from(n).expect("in range")),
            Ok(n) => Value::Negative(u64::try_from(-1 - n).expect("in range")),
            Err(_) => Value::Float(diagnostic.parse().expect("a float")),
        }
    }

    #[test]
    fn map_keys_sort_shorter_encoding_first_not_alphabetically() {
        let map: BTreeMap<String, Value> = [("bb", 1u64), ("a", 2), ("c", 3)]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), Value::Unsigned(v)))
            .collect();
        // BTreeMap order would be a, bb, c; canonical order is a, c, bb.
        assert_eq!(hex(&Value::Map(map)), "a361610261630362626201");
    }

    #[test]
    fn floats_take_the_shortest_width_that_keeps_the_value() {
        // binary16 edge values the `cbor2` C extension gets wrong (it emits binary32).
        assert_eq!(hex(&Value::Float(32768.0)), "f97800");
        assert_eq!(hex(&Value::Float(65472.0)), "f97bfe");
        // 4095 needs 12 significant bits: binary32.
        assert_eq!(hex(&Value::Float(4095.0)), "fa457ff000");
        // The largest binary16 subnormal and the smallest normal.
        assert_eq!(hex(&Value::Float(1023.0 * 2f64.powi(-24))), "f903ff");
        // Just beyond binary16's range.
        assert_eq!(hex(&Value::Float(65536.0)), "fa47800000");
        // binary32 subnormal.
        assert_eq!(
            hex(&Value::Float(f64::from(f32::from_bits(1)))),
            "fa00000001"
        );
        assert_eq!(hex(&Value::Float(0.1)), "fb3fb999999999999a");
    }

    #[test]
    fn every_binary16_pattern_round_trips_through_the_encoder() {
        for h in 0..=u16::MAX {
            let f = f16_to_f64(h);
            if f.is_nan() {
                continue;
            }
            let mut want = vec![0xf9];
            want.extend_from_slice(&h.to_be_bytes());
            assert_eq!(Value::Float(f).to_canonical_bytes(), want, "{h:#06x}");
        }
    }

    #[test]
    fn decoder_round_trips_and_refuses_non_canonical_input() {
        let v = Value::Array(vec![
            Value::Float(0.25),
            Value::Negative(5),
            Value::Bytes(vec![9; 40]),
            Value::Map([("k".to_owned(), Value::Null)].into_iter().collect()),
        ]);
        assert_eq!(decode(&v.to_canonical_bytes()).ok(), Some(v));
        for bad in [
            &[0x18, 0x05][..],                                       // non-shortest integer
            &[0xfb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0],                   // 1.5 as binary64
            &[0x9f, 0xff],                                           // indefinite array
            &[0xa2, 0x61, 0x62, 0x00, 0x61, 0x61, 0x00],             // unsorted keys
            &[0x01, 0x01],                                           // trailing byte
            &[0x5b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], // huge length
            &[0xc0, 0x00],                                           // tag
            &[0x62, 0xff, 0xfe],                                     // invalid UTF-8
        ] {
            assert!(decode(bad).is_err(), "{bad:02x?}");
        }
    }

    #[test]
    fn decoder_refuses_deep_nesting_without_overflowing_the_stack() {
        let bytes = vec![0x81; 10_000];
        assert!(matches!(
            decode(&bytes),
            Err(Error::Cbor {
                problem: CborProblem::TooDeep | CborProblem::Truncated,
                ..
            })
        ));
    }
}
