//! Whole datasets and models: many named slices (columns, tensors) marked with one payload and
//! read by one extractor, with what each slice gave. `ald` and `apr` drive these two types; the
//! CLIs and the evidence report read their per-slice records.

use crate::blocks::{BlockEmbedder, BlockFormat, LevelTally};
use crate::embed::{Embedder, SliceReport};
use crate::error::Error;
use crate::extract::{Extracted, Extractor, SliceEvidence, Verification};
use crate::keys::SellerKey;
use crate::sample::Sample;
use crate::{Traceability, Watermark};

/// What embedding did to one named slice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedReport {
    /// The column or tensor name.
    pub name: String,
    /// Values offered and marked, and the cell exponent.
    pub report: SliceReport,
}

/// What embedding did to a whole dataset or model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkReport {
    /// Every slice offered, in order (skipped ones say why).
    pub slices: Vec<NamedReport>,
    /// How the seller can trace the result.
    pub traceability: Traceability,
}

impl MarkReport {
    /// Values that carry a mark bit, over all slices.
    #[must_use]
    pub fn marked_values(&self) -> u64 {
        self.slices
            .iter()
            .map(|s| u64::try_from(s.report.marked).unwrap_or(u64::MAX))
            .sum()
    }
}

/// Embeds one buyer's mark into any number of named slices, then checks that the key reads the
/// buyer back from all of them together ([`Marking::finish`]).
#[derive(Debug)]
pub struct Marking {
    embedder: Embedder,
    blocks: BlockEmbedder,
    reading: Reading,
    buyer_hash: [u8; 32],
    slices: Vec<NamedReport>,
}

impl Marking {
    /// A marking of `watermark` under `seller_key`.
    ///
    /// # Errors
    /// [`Error::StrengthOutOfRange`], [`Error::RedundancyOutOfRange`].
    pub fn new(seller_key: &SellerKey, watermark: &Watermark) -> Result<Self, Error> {
        Ok(Self {
            embedder: Embedder::new(seller_key, watermark)?,
            blocks: BlockEmbedder::new(seller_key, watermark),
            reading: Reading::new(seller_key),
            buyer_hash: watermark.buyer_hash,
            slices: Vec::new(),
        })
    }

    /// Marks one slice in place and reads it back into the check of [`Marking::finish`].
    pub fn embed<T: Sample>(&mut self, name: &str, values: &mut [T]) -> &SliceReport {
        let report = self.embedder.embed(values);
        if report.marked > 0 {
            self.reading.add(name, values);
        }
        self.record(name, report)
    }

    /// Keeps one slice's report in order and returns it.
    fn record(&mut self, name: &str, report: SliceReport) -> &SliceReport {
        self.slices.push(NamedReport {
            name: name.to_owned(),
            report,
        });
        &self.slices[self.slices.len() - 1].report
    }

    /// Marks one tensor of quantized blocks in place (docs/watermark.md §12) and reads it back
    /// into the check of [`Marking::finish`]. `report.marked` counts the quants that carry a bit.
    ///
    /// # Errors
    /// [`Error::NotWholeBlocks`] (nothing was changed).
    pub fn embed_blocks(
        &mut self,
        name: &str,
        format: BlockFormat,
        data: &mut [u8],
    ) -> Result<&SliceReport, Error> {
        let report = self.blocks.embed(format, data)?;
        if report.marked > 0 {
            self.reading.add_blocks(name, format, data)?;
        }
        Ok(self.record(name, report))
    }

    /// The report, once the marked slices together read back as the buyer: extracted
    /// ([`Traceability::Extractable`]) or at least verified ([`Traceability::VerifyOnly`]).
    ///
    /// # Errors
    /// [`Error::NotTraceable`]: the changed values must be discarded and the data must not be
    /// called watermarked.
    pub fn finish(self) -> Result<MarkReport, Error> {
        let traceability = if self
            .reading
            .extract()
            .is_some_and(|found| found.buyer_hash == self.buyer_hash)
        {
            Traceability::Extractable
        } else if self.reading.verify(&self.buyer_hash).matched {
            Traceability::VerifyOnly
        } else {
            let count = |f: fn(&SliceReport) -> usize| {
                self.slices
                    .iter()
                    .map(|s| u64::try_from(f(&s.report)).unwrap_or(u64::MAX))
                    .sum()
            };
            return Err(Error::NotTraceable {
                values: count(|r| r.values),
                marked: count(|r| r.marked),
            });
        };
        Ok(MarkReport {
            slices: self.slices,
            traceability,
        })
    }
}

/// What reading one named slice found.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedEvidence {
    /// The column or tensor name.
    pub name: String,
    /// Its exponent, votes and cell energy.
    pub evidence: SliceEvidence,
}

/// Reads any number of named slices under one seller key; then extract, verify or identify over
/// all of them together.
#[derive(Debug)]
pub struct Reading {
    extractor: Extractor,
    /// Votes of quantized blocks per format ([`BlockFormat::ALL`]) and level; each format's level
    /// is chosen over all of its tensors together, and a format adds votes only when its best
    /// level passes the energy gate (a mark lives in one format; the others read noise).
    blocks: [LevelTally; 3],
    block_key: crate::keys::CellKey,
    /// Every slice read, in order.
    pub slices: Vec<NamedEvidence>,
}

impl Reading {
    /// A reading under `seller_key`.
    #[must_use]
    pub fn new(seller_key: &SellerKey) -> Self {
        Self {
            extractor: Extractor::new(seller_key),
            blocks: [LevelTally::new(), LevelTally::new(), LevelTally::new()],
            block_key: seller_key.block_key(),
            slices: Vec::new(),
        }
    }

    /// Reads one slice ([`Extractor::add`]).
    pub fn add<T: Sample>(&mut self, name: &str, values: &[T]) -> &SliceEvidence {
        let evidence = self.extractor.add(values);
        self.record(name, evidence)
    }

    /// Keeps one slice's evidence in order and returns it.
    fn record(&mut self, name: &str, evidence: SliceEvidence) -> &SliceEvidence {
        self.slices.push(NamedEvidence {
            name: name.to_owned(),
            evidence,
        });
        &self.slices[self.slices.len() - 1].evidence
    }

    /// Reads one tensor of quantized blocks (docs/watermark.md §12). Its evidence: `values` its
    /// quants, `votes` the carrier quants at every level, `energy` the best level's cell energy
    /// of this tensor alone, `exponent` none. Which level votes is decided over every block
    /// tensor read, when the reading extracts or verifies.
    ///
    /// # Errors
    /// [`Error::NotWholeBlocks`].
    pub fn add_blocks(
        &mut self,
        name: &str,
        format: BlockFormat,
        data: &[u8],
    ) -> Result<&SliceEvidence, Error> {
        let tally = LevelTally::read(&self.block_key, format, data)?;
        let evidence = SliceEvidence {
            values: data.len() / format.block_bytes() * crate::blocks::BLOCK_VALUES,
            exponent: None,
            votes: tally.carriers(),
            energy: tally.best().map_or(0.0, |(_, energy, _)| energy),
        };
        self.blocks[format.index()].merge(&tally);
        Ok(self.record(name, evidence))
    }

    /// [`Extractor::extract`] over every slice read.
    #[must_use]
    pub fn extract(&self) -> Option<Extracted> {
        self.extractor().extract()
    }

    /// [`Extractor::verify`] over every slice read.
    #[must_use]
    pub fn verify(&self, buyer_hash: &[u8; 32]) -> Verification {
        self.extractor().verify(buyer_hash)
    }

    /// [`Extractor::identify`] over every slice read.
    #[must_use]
    pub fn identify(&self, buyers: &[[u8; 32]]) -> Option<(usize, Verification)> {
        self.extractor().identify(buyers)
    }

    /// An extractor holding every vote of the reading: the float slices' and, at the level the
    /// search chose, the quantized blocks' (for merging readings or custom decisions).
    #[must_use]
    pub fn extractor(&self) -> Extractor {
        let mut extractor = self.extractor.clone();
        for votes in self.blocks.iter().filter_map(LevelTally::votes) {
            extractor.merge_tally(&votes);
        }
        extractor
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic;

    #[test]
    fn a_marking_over_several_slices_reads_back_and_a_reading_names_each_slice() {
        let seller = SellerKey::new([3; 32]);
        let watermark = Watermark::for_buyer(&seller, b"acme");
        let normal = synthetic::Dist::Normal {
            mean: 50.0,
            sd: 10.0,
        };
        let mut rng = synthetic::Rng::new(1);
        let mut a: Vec<f64> = normal.column(&mut rng, 4_000);
        #[allow(clippy::cast_possible_truncation, reason = "test data as f32")]
        let mut b: Vec<f32> = normal
            .column(&mut rng, 4_000)
            .into_iter()
            .map(|v| v as f32)
            .collect();
        let mut marking = Marking::new(&seller, &watermark).unwrap();
        assert!(marking.embed("a", &mut a).marked > 3_000);
        assert!(marking.embed("b", &mut b).marked > 3_000);
        let report = marking.finish().unwrap();
        assert_eq!(report.traceability, Traceability::Extractable);
        assert_eq!(report.slices[1].name, "b");

        let mut reading = Reading::new(&seller);
        reading.add("a", &a);
        reading.add("b", &b);
        assert_eq!(reading.extract().unwrap().buyer_hash, watermark.buyer_hash);
        assert!(reading.verify(&watermark.buyer_hash).matched);
        assert!(reading.slices.iter().all(|s| s.evidence.votes > 3_000));
        assert!(Reading::new(&SellerKey::new([4; 32])).extract().is_none());
    }

    #[test]
    fn a_marking_that_cannot_carry_the_mark_is_refused() {
        let seller = SellerKey::new([3; 32]);
        let watermark = Watermark::for_buyer(&seller, b"acme");
        let mut tiny = vec![1.0_f64, 2.0, 3.0];
        let mut marking = Marking::new(&seller, &watermark).unwrap();
        marking.embed("tiny", &mut tiny);
        assert!(matches!(
            marking.finish(),
            Err(Error::NotTraceable { values: 3, .. })
        ));
    }
}
