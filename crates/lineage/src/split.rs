//! Split definitions, `split_hashes`, and the deterministic split derivation (004 §II.F).
//!
//! The seeded permutation is the contract's own: each sample's key is
//! `SHA-256(CBOR_CANONICAL([split_seed, sample_index]))` and samples are sorted by key bytes (ties
//! by index). No Philox stream is involved: §II.F defines this operator completely. Splits are
//! assigned in the committed (name-sorted) order, so `split_hashes` alone fixes the assignment.

use std::collections::BTreeMap;

use crate::cbor::Value;
use crate::error::Error;
use crate::hash::{Digest, sha256_cbor};

/// `EPS_EQ` of 004 §0.Z: fractions must sum to 1 within it.
pub const EPS_EQ: f64 = 1e-10;
/// Tag of the `split_hashes` preimage.
pub const SPLIT_DEFS_TAG: &str = "split_defs_v1";
/// Name of the default split when none is defined.
pub const DEFAULT_SPLIT_NAME: &str = "all";

/// One split entry `{"split_name", "split_fraction", "split_seed"?}`.
#[derive(Debug, Clone, PartialEq)]
pub struct SplitDef {
    /// Unique, non-empty name.
    pub name: String,
    /// Fraction in [0, 1], binary64.
    pub fraction: f64,
    /// Optional permutation seed.
    pub seed: Option<u64>,
}

impl SplitDef {
    /// The canonical CBOR map of this entry (`split_seed` omitted when absent; the fraction is
    /// always a float, in its shortest exact width).
    #[must_use]
    pub fn to_cbor(&self) -> Value {
        let mut m = BTreeMap::new();
        m.insert("split_name".to_owned(), Value::text(&self.name));
        m.insert("split_fraction".to_owned(), Value::Float(self.fraction));
        if let Some(seed) = self.seed {
            m.insert("split_seed".to_owned(), Value::Unsigned(seed));
        }
        Value::Map(m)
    }
}

/// Validated split definitions, sorted by name (UTF-8 bytes).
#[derive(Debug, Clone, PartialEq)]
pub struct SplitDefs {
    sorted: Vec<SplitDef>,
    seed: Option<u64>,
}

impl Default for SplitDefs {
    /// One split `all` with fraction 1.0 and no seed (the issue's default).
    fn default() -> Self {
        Self {
            sorted: vec![SplitDef {
                name: DEFAULT_SPLIT_NAME.to_owned(),
                fraction: 1.0,
                seed: None,
            }],
            seed: None,
        }
    }
}

impl SplitDefs {
    /// Validates and sorts split entries. Checks, in this order (the first failure wins):
    /// non-empty list; per entry in input order: non-empty name, finite fraction, fraction in
    /// [0, 1]; after sorting: unique names, one seed shared by all entries (or none), and
    /// `abs(sum - 1.0) <= EPS_EQ` with the sum taken left to right in sorted order.
    ///
    /// # Errors
    /// [`Error::InvalidSplitDef`], [`Error::NonFinite`], [`Error::DuplicateSplitName`],
    /// [`Error::SplitSeedConflict`], [`Error::SplitFractionSum`].
    ///
    /// # Examples
    /// ```
    /// use lineage::{SplitDef, SplitDefs};
    /// let d = |n: &str, f| SplitDef { name: n.into(), fraction: f, seed: Some(7) };
    /// assert!(SplitDefs::new(vec![d("train", 0.8), d("test", 0.2)]).is_ok());
    /// assert!(SplitDefs::new(vec![d("train", 0.8), d("test", 0.3)]).is_err());
    /// ```
    pub fn new(defs: Vec<SplitDef>) -> Result<Self, Error> {
        if defs.is_empty() {
            return Err(Error::InvalidSplitDef {
                name: String::new(),
                reason: "no split entries",
            });
        }
        for d in &defs {
            if d.name.is_empty() {
                return Err(Error::InvalidSplitDef {
                    name: String::new(),
                    reason: "empty split_name",
                });
            }
            if !d.fraction.is_finite() {
                return Err(Error::NonFinite {
                    field: format!("split_fraction of {:?}", d.name),
                    value: d.fraction,
                });
            }
            if !(0.0..=1.0).contains(&d.fraction) {
                return Err(Error::InvalidSplitDef {
                    name: d.name.clone(),
                    reason: "split_fraction outside [0, 1]",
                });
            }
        }
        let mut sorted = defs;
        sorted.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        if let Some(w) = sorted.windows(2).find(|w| w[0].name == w[1].name) {
            return Err(Error::DuplicateSplitName {
                name: w[0].name.clone(),
            });
        }
        let seed = sorted[0].seed;
        if let Some(d) = sorted.iter().find(|d| d.seed != seed) {
            return Err(Error::SplitSeedConflict {
                name: d.name.clone(),
                expected: seed,
                found: d.seed,
            });
        }
        let sum = sorted.iter().fold(0.0f64, |acc, d| acc + d.fraction);
        if (sum - 1.0).abs() > EPS_EQ {
            return Err(Error::SplitFractionSum { sum });
        }
        Ok(Self { sorted, seed })
    }

    /// Parses a JSON array of split entries (`split_seed` optional, no other keys) and
    /// validates it with [`new`](Self::new). A fraction may be written as an integer (`1`).
    ///
    /// # Errors
    /// [`Error::InvalidJson`], [`Error::InvalidSplitDef`] for a wrong shape, then those of
    /// [`new`](Self::new).
    pub fn from_json(text: &str) -> Result<Self, Error> {
        let Value::Array(items) = crate::json::parse(text)? else {
            return Err(Error::InvalidSplitDef {
                name: String::new(),
                reason: "splits JSON must be an array",
            });
        };
        let mut defs = Vec::with_capacity(items.len());
        for item in items {
            defs.push(split_def_from_value(item)?);
        }
        Self::new(defs)
    }

    /// The entries in committed (name-sorted) order.
    #[must_use]
    pub fn entries(&self) -> &[SplitDef] {
        &self.sorted
    }

    /// The shared seed, if any.
    #[must_use]
    pub const fn seed(&self) -> Option<u64> {
        self.seed
    }

    /// `split_hashes = SHA-256(CBOR_CANONICAL(["split_defs_v1", split_defs_sorted]))`.
    #[must_use]
    pub fn split_hashes(&self) -> Digest {
        sha256_cbor(&Value::Array(vec![
            Value::text(SPLIT_DEFS_TAG),
            Value::Array(self.sorted.iter().map(SplitDef::to_cbor).collect()),
        ]))
    }

    /// Sample counts per split (sorted order) for `total` samples: `floor(fraction * total)` for
    /// every split but the last (binary64 product; clamped to what remains), the rest to the last.
    #[must_use]
    pub fn counts(&self, total: u64) -> Vec<u64> {
        let mut remaining = total;
        let mut counts = Vec::with_capacity(self.sorted.len());
        let last = self.sorted.len().saturating_sub(1);
        for (i, d) in self.sorted.iter().enumerate() {
            let c = if i == last {
                remaining
            } else {
                floor_to_u64(d.fraction * to_f64(total)).min(remaining)
            };
            remaining -= c;
            counts.push(c);
        }
        counts
    }

    /// Derives the split of every sample: `result[sample_index]` is the index (in
    /// [`entries`](Self::entries)) of its split.
    ///
    /// # Examples
    /// ```
    /// use lineage::{SplitDef, SplitDefs};
    /// let defs = SplitDefs::new(vec![
    ///     SplitDef { name: "a".into(), fraction: 0.5, seed: None },
    ///     SplitDef { name: "b".into(), fraction: 0.5, seed: None },
    /// ])?;
    /// assert_eq!(defs.assign(5), [0, 0, 1, 1, 1]); // floor(2.5) = 2 to "a", the rest to "b"
    /// # Ok::<(), lineage::Error>(())
    /// ```
    #[must_use]
    pub fn assign(&self, total: u64) -> Vec<usize> {
        let order = shuffled_order(total, self.seed);
        let counts = self.counts(total);
        let mut out = vec![0usize; order.len()];
        let mut it = order.into_iter();
        for (split, &c) in counts.iter().enumerate() {
            for idx in it.by_ref().take(usize::try_from(c).unwrap_or(usize::MAX)) {
                if let Some(slot) = usize::try_from(idx).ok().and_then(|i| out.get_mut(i)) {
                    *slot = split;
                }
            }
        }
        out
    }
}

fn to_f64(n: u64) -> f64 {
    // Round to nearest (exact below 2^53), as Python's int * float does.
    #[expect(
        clippy::cast_precision_loss,
        reason = "binary64 product is the contract's rule"
    )]
    let f = n as f64;
    f
}

#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "floor of a finite non-negative product; `as` saturates and counts are clamped"
)]
fn floor_to_u64(x: f64) -> u64 {
    x.floor() as u64
}

/// `shuffle_key = SHA-256(CBOR_CANONICAL([split_seed, sample_index]))`.
#[must_use]
pub fn shuffle_key(seed: u64, sample_index: u64) -> Digest {
    sha256_cbor(&Value::Array(vec![
        Value::Unsigned(seed),
        Value::Unsigned(sample_index),
    ]))
}

/// Sample indices in shuffled order (identity without a seed).
#[must_use]
pub fn shuffled_order(total: u64, seed: Option<u64>) -> Vec<u64> {
    match seed {
        None => (0..total).collect(),
        Some(seed) => {
            let mut keyed: Vec<(Digest, u64)> =
                (0..total).map(|i| (shuffle_key(seed, i), i)).collect();
            keyed.sort_unstable();
            keyed.into_iter().map(|(_, i)| i).collect()
        }
    }
}

fn split_def_from_value(v: Value) -> Result<SplitDef, Error> {
    let shape = |reason| Error::InvalidSplitDef {
        name: String::new(),
        reason,
    };
    let Value::Map(mut m) = v else {
        return Err(shape("split entry must be an object"));
    };
    let name = match m.remove("split_name") {
        Some(Value::Text(s)) => s,
        _ => return Err(shape("split_name must be a string")),
    };
    let bad = |reason| Error::InvalidSplitDef {
        name: name.clone(),
        reason,
    };
    let fraction = match m.remove("split_fraction") {
        Some(Value::Float(f)) => f,
        Some(Value::Unsigned(n)) => to_f64(n),
        Some(Value::Negative(_)) => return Err(bad("split_fraction outside [0, 1]")),
        _ => return Err(bad("split_fraction must be a number")),
    };
    let seed = match m.remove("split_seed") {
        None => None,
        Some(Value::Unsigned(s)) => Some(s),
        Some(_) => return Err(bad("split_seed must be an integer in [0, 2^64-1]")),
    };
    if !m.is_empty() {
        return Err(bad("unknown key in split entry"));
    }
    Ok(SplitDef {
        name,
        fraction,
        seed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(name: &str, fraction: f64, seed: Option<u64>) -> SplitDef {
        SplitDef {
            name: name.to_owned(),
            fraction,
            seed,
        }
    }

    #[test]
    fn validation_failures_carry_their_codes() {
        use crate::FailureCode as F;
        let cases: Vec<(Vec<SplitDef>, F)> = vec![
            (vec![], F::InvalidSplitDef),
            (
                vec![d("a", 0.5, None), d("a", 0.5, None)],
                F::DuplicateSplitName,
            ),
            (vec![d("a", f64::NAN, None)], F::NonFinite),
            (vec![d("a", f64::INFINITY, None)], F::NonFinite),
            (
                vec![d("a", 0.7, None), d("b", 0.2, None)],
                F::SplitFractionSum,
            ),
            (
                vec![d("a", 0.5, Some(1)), d("b", 0.5, Some(2))],
                F::SplitSeedConflict,
            ),
            (
                vec![d("a", 0.5, Some(1)), d("b", 0.5, None)],
                F::SplitSeedConflict,
            ),
            (
                vec![d("a", -0.5, None), d("b", 1.5, None)],
                F::InvalidSplitDef,
            ),
            (vec![d("", 1.0, None)], F::InvalidSplitDef),
        ];
        for (defs, code) in cases {
            let got = SplitDefs::new(defs.clone())
                .map(|_| ())
                .map_err(|e| e.failure_code());
            assert_eq!(got, Err(code), "{defs:?}");
        }
    }

    #[test]
    fn fraction_sum_within_eps_eq_passes() {
        assert!(
            SplitDefs::new(vec![
                d("a", 0.1, None),
                d("b", 0.2, None),
                d("c", 0.7, None)
            ])
            .is_ok()
        );
        assert!(SplitDefs::new(vec![d("a", 0.5, None), d("b", 0.5 + 5e-11, None)]).is_ok());
        assert!(SplitDefs::new(vec![d("a", 0.5, None), d("b", 0.5 + 2e-10, None)]).is_err());
    }

    #[test]
    fn floor_counts_give_the_remainder_to_the_last_split_in_name_order() -> Result<(), Error> {
        let s = SplitDefs::new(vec![
            d("train", 0.7, None),
            d("test", 0.15, None),
            d("val", 0.15, None),
        ])?;
        // Sorted: test, train, val. floor(0.15*10)=1, floor(0.7*10)=7, val gets 2.
        assert_eq!(s.counts(10), [1, 7, 2]);
        assert_eq!(s.counts(0), [0, 0, 0]);
        Ok(())
    }

    #[test]
    fn seeded_assignment_is_a_permutation_of_the_counts() -> Result<(), Error> {
        let s = SplitDefs::new(vec![d("a", 0.3, Some(42)), d("b", 0.7, Some(42))])?;
        let a = s.assign(100);
        assert_eq!(a.iter().filter(|&&x| x == 0).count(), 30);
        assert_ne!(
            a,
            SplitDefs::new(vec![d("a", 0.3, None), d("b", 0.7, None)])?.assign(100)
        );
        Ok(())
    }

    #[test]
    fn shuffle_key_hashes_the_canonical_pair() {
        // [7, 300] = 82 07 19 01 2c
        assert_eq!(
            shuffle_key(7, 300),
            crate::hash::sha256(&[0x82, 0x07, 0x19, 0x01, 0x2c])
        );
    }

    #[test]
    fn json_entries_parse_strictly() {
        assert!(SplitDefs::from_json(r#"[{"split_name":"all","split_fraction":1}]"#).is_ok());
        assert!(
            SplitDefs::from_json(r#"[{"split_name":"all","split_fraction":1,"x":0}]"#).is_err()
        );
        assert!(
            SplitDefs::from_json(r#"[{"split_name":"all","split_fraction":1,"split_seed":-1}]"#)
                .is_err()
        );
        assert!(SplitDefs::from_json(r#"[{"split_name":"all","split_fraction":"1"}]"#).is_err());
    }
}
