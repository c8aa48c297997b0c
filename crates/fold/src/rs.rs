//! Reed-Solomon over GF(2^8), bit-compatible with the Python `reedsolo` package's `RSCodec(nsym)`:
//! primitive polynomial 0x11d, generator 2, first consecutive root 0, systematic, parity appended,
//! 255-byte codewords (shortened codes for shorter messages).
//!
//! Written here rather than taken from a crate: the pure-Rust RS crates either fix other field
//! parameters (`reed-solomon-erasure` is an erasure code over another layout) or are unmaintained,
//! and this codec is small. Speed comes from tables: one 256-byte multiplication row per generator
//! coefficient for encoding, log / antilog tables for syndromes and Berlekamp-Massey decoding.

/// Bytes in one codeword (`nsize` in reedsolo).
pub const CODEWORD_LEN: usize = 255;

const PRIM: u16 = 0x11d;

struct Tables {
    exp: [u8; 512],
    log: [u8; 256],
}

#[allow(
    clippy::cast_possible_truncation,
    reason = "x < 256 after reduction by PRIM and i < 255: both fit in u8 (const fn: no TryFrom)"
)]
const fn build_tables() -> Tables {
    let mut exp = [0_u8; 512];
    let mut log = [0_u8; 256];
    let mut x: u16 = 1;
    let mut i = 0;
    while i < 255 {
        exp[i] = x as u8;
        log[x as usize] = i as u8;
        x <<= 1;
        if x & 0x100 != 0 {
            x ^= PRIM;
        }
        i += 1;
    }
    while i < 512 {
        exp[i] = exp[i - 255];
        i += 1;
    }
    Tables { exp, log }
}

static T: Tables = build_tables();

#[inline]
fn mul(a: u8, b: u8) -> u8 {
    if a == 0 || b == 0 {
        0
    } else {
        T.exp[usize::from(T.log[usize::from(a)]) + usize::from(T.log[usize::from(b)])]
    }
}

#[inline]
fn div(a: u8, b: u8) -> u8 {
    // b != 0 is guaranteed by callers (Forney denominators are checked first).
    if a == 0 {
        0
    } else {
        T.exp[(usize::from(T.log[usize::from(a)]) + 255 - usize::from(T.log[usize::from(b)])) % 255]
    }
}

#[inline]
fn alpha_pow(e: usize) -> u8 {
    T.exp[e % 255]
}

/// Evaluates a polynomial given highest degree first at `x`.
fn poly_eval(p: &[u8], x: u8) -> u8 {
    let mut y = 0;
    for &c in p {
        y = mul(y, x) ^ c;
    }
    y
}

/// Why a codeword could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Uncorrectable;

/// A Reed-Solomon codec with `nsym` parity bytes per codeword (reedsolo's `RSCodec(nsym)`).
///
/// ```
/// let rs = fold::rs::ReedSolomon::new(8).unwrap();
/// let mut data = b"hello world".to_vec();
/// let parity = rs.encode_codeword(&data);
/// data[3] ^= 0x55;
/// let mut parity2 = parity.clone();
/// rs.correct_codeword(&mut data, &mut parity2).unwrap();
/// assert_eq!(&data, b"hello world");
/// ```
#[derive(Clone)]
pub struct ReedSolomon {
    nsym: usize,
    /// Generator polynomial, highest degree first, monic (`gen[0] == 1`), length nsym + 1.
    generator: Vec<u8>,
    /// Encoder table, 256 rows of nsym bytes: row f is `f * generator[1..]`, so one LFSR step is
    /// a shift of the parity register XOR one contiguous row (vectorizes).
    enc_table: Vec<u8>,
}

impl std::fmt::Debug for ReedSolomon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReedSolomon")
            .field("nsym", &self.nsym)
            .finish()
    }
}

impl ReedSolomon {
    /// A codec with `nsym` parity bytes per 255-byte codeword; `None` unless `1 <= nsym <= 254`.
    #[must_use]
    pub fn new(nsym: usize) -> Option<Self> {
        if nsym == 0 || nsym >= CODEWORD_LEN {
            return None;
        }
        // g(x) = prod_{i < nsym} (x - alpha^i)  (fcr = 0, generator 2), highest degree first.
        let mut g = vec![1_u8];
        for i in 0..nsym {
            let root = alpha_pow(i);
            let mut next = vec![0_u8; g.len() + 1];
            for (j, &c) in g.iter().enumerate() {
                next[j] ^= c;
                next[j + 1] ^= mul(c, root);
            }
            g = next;
        }
        let mut enc_table = Vec::with_capacity(256 * nsym);
        for f in 0_u8..=255 {
            enc_table.extend(g[1..].iter().map(|&c| mul(c, f)));
        }
        Some(Self {
            nsym,
            generator: g,
            enc_table,
        })
    }

    /// Parity bytes per codeword.
    #[must_use]
    pub fn nsym(&self) -> usize {
        self.nsym
    }

    /// Data bytes per full codeword (`255 - nsym`).
    #[must_use]
    pub fn data_per_codeword(&self) -> usize {
        CODEWORD_LEN - self.nsym
    }

    /// The generator polynomial, highest degree first (for known-answer tests).
    #[must_use]
    pub fn generator(&self) -> &[u8] {
        &self.generator
    }

    /// Parity of one codeword's data (`data.len() <= 255 - nsym`), as reedsolo's
    /// `rs_encode_msg(data, nsym)[-nsym:]`.
    ///
    /// # Panics
    /// Never for `data.len() <= 255 - nsym`; longer input is the caller's bug and is encoded as if
    /// shortened anyway (the division still terminates), so it does not panic either.
    #[must_use]
    pub fn encode_codeword(&self, data: &[u8]) -> Vec<u8> {
        let mut parity = vec![0_u8; self.nsym];
        self.encode_into(data, &mut parity);
        parity
    }

    /// Writes the parity of `data` into `parity` (length nsym): an LFSR over the generator.
    pub fn encode_into(&self, data: &[u8], parity: &mut [u8]) {
        let n = self.nsym;
        let Some(parity) = parity.get_mut(..n) else {
            return;
        };
        parity.fill(0);
        for &byte in data {
            let feedback = usize::from(byte ^ parity[0]);
            let row = &self.enc_table[feedback * n..feedback * n + n];
            for i in 0..n - 1 {
                parity[i] = parity[i + 1] ^ row[i];
            }
            parity[n - 1] = row[n - 1];
        }
    }

    /// Syndromes `S_j = c(alpha^j)`, j < nsym, of the word `data || parity`.
    ///
    /// Computed from the parity difference: `data || encode(data)` is a codeword, so the received
    /// word's syndromes are those of `0…0 || (parity XOR encode(data))`, a polynomial of degree
    /// < nsym. Cost: one encoding pass plus nsym² table operations per codeword.
    fn syndromes(&self, data: &[u8], parity: &[u8]) -> Vec<u8> {
        let mut diff = self.encode_codeword(data);
        for (d, &p) in diff.iter_mut().zip(parity) {
            *d ^= p;
        }
        let mut s = vec![0_u8; self.nsym];
        if diff.iter().all(|&d| d == 0) {
            return s;
        }
        for (j, sj) in s.iter_mut().enumerate() {
            let x = alpha_pow(j);
            *sj = poly_eval(&diff, x);
        }
        s
    }

    /// True when `data || parity` is a codeword (all syndromes zero).
    #[must_use]
    pub fn is_codeword(&self, data: &[u8], parity: &[u8]) -> bool {
        self.syndromes(data, parity).iter().all(|&s| s == 0)
    }

    /// Corrects up to `nsym / 2` byte errors anywhere in `data || parity` in place; returns how
    /// many bytes were changed.
    ///
    /// # Errors
    /// [`Uncorrectable`] when the errors exceed the capacity (detected, as reedsolo does, by a
    /// locator whose roots do not all lie in the codeword or by non-zero syndromes after
    /// correction). Beyond capacity a decoder may also miscorrect into another codeword; callers
    /// check a hash afterwards.
    pub fn correct_codeword(
        &self,
        data: &mut [u8],
        parity: &mut [u8],
    ) -> Result<usize, Uncorrectable> {
        let n = data.len() + parity.len();
        if parity.len() != self.nsym || n > CODEWORD_LEN {
            return Err(Uncorrectable);
        }
        let synd = self.syndromes(data, parity);
        if synd.iter().all(|&s| s == 0) {
            return Ok(0);
        }
        // Berlekamp-Massey: error locator Lambda(x), lowest degree first.
        let mut lambda = vec![1_u8];
        let mut prev = vec![1_u8];
        let mut l = 0_usize;
        let mut m = 1_usize;
        let mut b = 1_u8;
        for k in 0..self.nsym {
            let mut d = synd[k];
            for i in 1..=l.min(lambda.len() - 1) {
                d ^= mul(lambda[i], synd[k - i]);
            }
            if d == 0 {
                m += 1;
                continue;
            }
            let coef = div(d, b);
            let mut next = lambda.clone();
            if next.len() < prev.len() + m {
                next.resize(prev.len() + m, 0);
            }
            for (i, &p) in prev.iter().enumerate() {
                next[i + m] ^= mul(coef, p);
            }
            if 2 * l <= k {
                prev = lambda;
                l = k + 1 - l;
                b = d;
                m = 1;
            } else {
                m += 1;
            }
            lambda = next;
        }
        while lambda.len() > 1 && lambda.last() == Some(&0) {
            lambda.pop();
        }
        let nerr = lambda.len() - 1;
        if nerr == 0 || 2 * nerr > self.nsym {
            return Err(Uncorrectable);
        }
        // Chien search over the n positions: byte index i has locator X = alpha^(n-1-i); it is in
        // error when Lambda(X^-1) == 0.
        let mut positions = Vec::with_capacity(nerr);
        for i in 0..n {
            let e = n - 1 - i;
            let xinv = alpha_pow(255 - (e % 255));
            let mut y = 0_u8;
            for &c in lambda.iter().rev() {
                y = mul(y, xinv) ^ c;
            }
            if y == 0 {
                positions.push(i);
            }
        }
        if positions.len() != nerr {
            return Err(Uncorrectable);
        }
        // Forney (fcr = 0): e = X * Omega(X^-1) / Lambda'(X^-1), Omega = S * Lambda mod x^nsym.
        let mut omega = vec![0_u8; self.nsym];
        for (i, &li) in lambda.iter().enumerate() {
            for (j, &sj) in synd.iter().enumerate() {
                if i + j < self.nsym {
                    omega[i + j] ^= mul(li, sj);
                }
            }
        }
        let omega_hi: Vec<u8> = omega.iter().rev().copied().collect();
        // Formal derivative: odd-degree terms survive.
        let deriv_hi: Vec<u8> = {
            let mut d = vec![0_u8; lambda.len().saturating_sub(1)];
            for (i, &c) in lambda.iter().enumerate().skip(1) {
                if i % 2 == 1 {
                    d[i - 1] = c;
                }
            }
            d.into_iter().rev().collect()
        };
        for &i in &positions {
            let e = n - 1 - i;
            let x = alpha_pow(e);
            let xinv = alpha_pow(255 - (e % 255));
            let denom = poly_eval(&deriv_hi, xinv);
            if denom == 0 {
                return Err(Uncorrectable);
            }
            let magnitude = mul(x, div(poly_eval(&omega_hi, xinv), denom));
            if i < data.len() {
                data[i] ^= magnitude;
            } else {
                parity[i - data.len()] ^= magnitude;
            }
        }
        if !self.is_codeword(data, parity) {
            return Err(Uncorrectable);
        }
        Ok(nerr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_a_field_of_order_255() {
        assert_eq!(T.exp[0], 1);
        assert_eq!(T.exp[8], 0x1d);
        assert_eq!(mul(0x53, div(1, 0x53)), 1);
    }

    #[test]
    fn generator_roots_are_alpha_powers() {
        let rs = ReedSolomon::new(10).unwrap();
        for i in 0..10 {
            assert_eq!(poly_eval(rs.generator(), alpha_pow(i)), 0);
        }
    }

    #[test]
    fn corrects_up_to_half_the_parity_in_data_and_parity() {
        let rs = ReedSolomon::new(16).unwrap();
        let data: Vec<u8> = (0..200_u32).map(|i| (i * 7 + 3).to_le_bytes()[0]).collect();
        let parity = rs.encode_codeword(&data);
        let (mut d, mut p) = (data.clone(), parity.clone());
        for k in 0..7 {
            d[k * 29] ^= 0xA5;
        }
        p[3] ^= 1;
        assert_eq!(rs.correct_codeword(&mut d, &mut p), Ok(8));
        assert_eq!((d, p), (data, parity));
    }

    #[test]
    fn fail_nine_errors_with_sixteen_parity_is_not_silently_accepted() {
        let rs = ReedSolomon::new(16).unwrap();
        let data = vec![0x42_u8; 100];
        let parity = rs.encode_codeword(&data);
        let (mut d, mut p) = (data.clone(), parity);
        for k in 0..9 {
            d[k * 11] ^= 0xFF;
        }
        // Beyond capacity: either refused or (rarely) miscorrected to another codeword, never the
        // original with a claim of success unless it really is the original.
        if rs.correct_codeword(&mut d, &mut p).is_ok() {
            assert!(rs.is_codeword(&d, &p));
        }
    }

    #[test]
    fn rejects_invalid_nsym() {
        assert!(ReedSolomon::new(0).is_none());
        assert!(ReedSolomon::new(255).is_none());
        assert!(ReedSolomon::new(254).is_some());
    }
}
