//! The per-chunk ECC algorithms (`ecc_algo` in the index) and the multi-codeword layout.
//!
//! `rs(N)`: the stored payload is cut into pieces of `255 - N` bytes (the last may be shorter);
//! each piece gets the N parity bytes of its Reed-Solomon codeword ([`crate::rs`]); the ECC bytes
//! are those parities concatenated in piece order, so `ecc_len = ceil(comp_len / (255 - N)) * N`.
//! For one piece this is exactly what pyfolds writes. For more pieces pyfolds stores the tail of
//! reedsolo's interleaved output instead, which its own reader cannot decode; this crate writes
//! the layout above (see docs/fold.md) and still reads pyfolds' multi-piece files when they are
//! intact, because ECC decoding is skipped when the bytes already match their CRC32C.

use std::fmt;
use std::sync::OnceLock;

use crate::rs::{CODEWORD_LEN, ReedSolomon};

/// An `ecc_algo` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ecc {
    /// `"none"`: no ECC bytes, detection only (CRC32C / SHA-256).
    None,
    /// `"rs(N)"`: Reed-Solomon with N parity bytes per 255-byte codeword, `1 <= N <= 254`.
    Rs(u8),
}

impl fmt::Display for Ecc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::None => f.write_str("none"),
            Self::Rs(n) => write!(f, "rs({n})"),
        }
    }
}

impl Ecc {
    /// The protection levels of pyfolds' `ecc_from_protection`: off, low (rs(16)), med (rs(32)),
    /// high (rs(64)).
    #[must_use]
    pub fn from_protection(level: &str) -> Option<Self> {
        match level.to_ascii_lowercase().as_str() {
            "off" | "none" | "0" => Some(Self::None),
            "low" => Some(Self::Rs(16)),
            "med" => Some(Self::Rs(32)),
            "high" => Some(Self::Rs(64)),
            _ => None,
        }
    }

    /// Parses `"none"` or `"rs(N)"` (N in canonical decimal, 1..=254).
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        if s == "none" {
            return Some(Self::None);
        }
        let n = s.strip_prefix("rs(")?.strip_suffix(')')?;
        if n.is_empty() || n.starts_with('0') || !n.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let n: u8 = n.parse().ok()?;
        (1..=254).contains(&n).then_some(Self::Rs(n))
    }

    /// `ecc_len` for a stored payload of `comp_len` bytes.
    #[must_use]
    pub fn ecc_len(self, comp_len: u64) -> u64 {
        match self {
            Self::None => 0,
            Self::Rs(n) => {
                let k = 255 - u64::from(n);
                comp_len.div_ceil(k) * u64::from(n)
            }
        }
    }

    /// The ECC bytes of `comp`.
    #[must_use]
    pub fn encode(self, comp: &[u8]) -> Vec<u8> {
        match self {
            Self::None => Vec::new(),
            Self::Rs(n) => {
                let rs = codec(n);
                let nsym = usize::from(n);
                let k = rs.data_per_codeword();
                let mut out = vec![0_u8; comp.len().div_ceil(k) * nsym];
                for (piece, parity) in comp.chunks(k).zip(out.chunks_mut(nsym)) {
                    rs.encode_into(piece, parity);
                }
                out
            }
        }
    }

    /// Corrects `comp` and `ecc` in place (`ecc.len()` must be [`Ecc::ecc_len`]); returns the
    /// number of bytes corrected.
    ///
    /// # Errors
    /// The index of the first codeword that could not be corrected.
    pub fn correct(self, comp: &mut [u8], ecc: &mut [u8]) -> Result<usize, u64> {
        match self {
            Self::None => Ok(0),
            Self::Rs(n) => {
                let rs = codec(n);
                let k = rs.data_per_codeword();
                let mut fixed = 0;
                for (i, (piece, parity)) in comp
                    .chunks_mut(k)
                    .zip(ecc.chunks_mut(usize::from(n)))
                    .enumerate()
                {
                    fixed += rs.correct_codeword(piece, parity).map_err(|_| i as u64)?;
                }
                Ok(fixed)
            }
        }
    }

    /// Indices of the codewords of `comp || ecc` whose parity does not match their data (damaged
    /// data or damaged ECC bytes); empty when every codeword is intact.
    #[must_use]
    pub fn damaged_codewords(self, comp: &[u8], ecc: &[u8]) -> Vec<u64> {
        match self {
            Self::None => Vec::new(),
            Self::Rs(n) => {
                let rs = codec(n);
                comp.chunks(rs.data_per_codeword())
                    .zip(ecc.chunks(usize::from(n)))
                    .enumerate()
                    .filter(|(_, (piece, parity))| !rs.is_codeword(piece, parity))
                    .map(|(i, _)| i as u64)
                    .collect()
            }
        }
    }

    /// Bytes of stored payload per codeword (`255 - N`), `None` for no ECC.
    #[must_use]
    pub fn data_per_codeword(self) -> Option<u64> {
        match self {
            Self::None => None,
            Self::Rs(n) => Some((CODEWORD_LEN - usize::from(n)) as u64),
        }
    }
}

/// One shared codec per N (tables are built once).
fn codec(n: u8) -> &'static ReedSolomon {
    static CODECS: OnceLock<Vec<OnceLock<ReedSolomon>>> = OnceLock::new();
    let all = CODECS.get_or_init(|| (0..255).map(|_| OnceLock::new()).collect());
    all[usize::from(n)].get_or_init(|| {
        ReedSolomon::new(usize::from(n)).unwrap_or_else(|| unreachable!("1 <= n <= 254"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn algo_strings_round_trip_and_refuse_oddities() {
        for e in [Ecc::None, Ecc::Rs(1), Ecc::Rs(32), Ecc::Rs(254)] {
            assert_eq!(Ecc::parse(&e.to_string()), Some(e));
        }
        for bad in [
            "rs(0)", "rs(255)", "rs(032)", "rs( 32)", "rs(+3)", "RS(3)", "rs()", "",
        ] {
            assert_eq!(Ecc::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn multi_codeword_layout_is_parity_per_piece() {
        let data: Vec<u8> = (0..1000_u32).map(|i| i.to_le_bytes()[0]).collect();
        let ecc = Ecc::Rs(32).encode(&data);
        assert_eq!(ecc.len() as u64, Ecc::Rs(32).ecc_len(1000));
        let rs = codec(32);
        assert_eq!(&ecc[32..64], rs.encode_codeword(&data[223..446]).as_slice());
    }
}
