//! The dataset types of 000 §3.1: the header's `dataset_type` field (offset 6, u16 LE).

use core::fmt;
use core::str::FromStr;

use envelope_core::{Error as EnvelopeError, FormatError, Section};

use crate::{Error, Result};

/// The rule a header's `dataset_type` breaks when it names no type of 000 §3.1.
const UNDEFINED_TYPE: FormatError = FormatError::MalformedBlock {
    section: Section::Header,
    reason: "dataset_type is not one of the ids of 000 §3.1",
};

macro_rules! dataset_types {
    ($($(#[$doc:meta])* $variant:ident = $id:literal, $name:literal;)*) => {
        /// What a dataset holds (000 §3.1). The ids are the spec's table exactly; there is no
        /// reserved range, so any other id is refused with `InvalidFormat`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        #[non_exhaustive]
        pub enum DatasetType {
            $($(#[$doc])* $variant,)*
        }

        impl DatasetType {
            /// Every type, in id order.
            pub const ALL: [Self; 26] = [$(Self::$variant,)*];

            /// The u16 stored in the header.
            #[must_use]
            pub const fn id(self) -> u16 {
                match self {
                    $(Self::$variant => $id,)*
                }
            }

            /// The spec's name (`TABULAR`, `TIME_SERIES`, ...).
            #[must_use]
            pub const fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => $name,)*
                }
            }

            /// The type with this header id.
            ///
            /// # Errors
            /// `InvalidFormat` for an id the spec does not define.
            pub const fn from_id(id: u16) -> Result<Self> {
                match id {
                    $($id => Ok(Self::$variant),)*
                    _ => Err(Error::Envelope(EnvelopeError::InvalidFormat(UNDEFINED_TYPE))),
                }
            }
        }
    };
}

dataset_types! {
    /// Generic columnar data.
    #[default]
    Tabular = 0x0001, "TABULAR";
    /// Temporal sequences.
    TimeSeries = 0x0002, "TIME_SERIES";
    /// Node/edge structures.
    Graph = 0x0003, "GRAPH";
    /// Geospatial coordinates.
    Spatial = 0x0004, "SPATIAL";
    /// Raw text documents.
    TextCorpus = 0x0010, "TEXT_CORPUS";
    /// Labeled text.
    TextClassification = 0x0011, "TEXT_CLASSIFICATION";
    /// Sentence pairs (NLI, STS).
    TextPairs = 0x0012, "TEXT_PAIRS";
    /// Token-level labels (NER).
    SequenceLabeling = 0x0013, "SEQUENCE_LABELING";
    /// QA datasets (SQuAD-style).
    QuestionAnswering = 0x0014, "QUESTION_ANSWERING";
    /// Document + summary pairs.
    Summarization = 0x0015, "SUMMARIZATION";
    /// Parallel corpora.
    Translation = 0x0016, "TRANSLATION";
    /// Images + class labels.
    ImageClassification = 0x0020, "IMAGE_CLASSIFICATION";
    /// Images + bounding boxes.
    ObjectDetection = 0x0021, "OBJECT_DETECTION";
    /// Images + pixel masks.
    Segmentation = 0x0022, "SEGMENTATION";
    /// Image matching/similarity.
    ImagePairs = 0x0023, "IMAGE_PAIRS";
    /// Sequential frames.
    Video = 0x0024, "VIDEO";
    /// Audio + class labels.
    AudioClassification = 0x0030, "AUDIO_CLASSIFICATION";
    /// Audio + transcripts (ASR).
    SpeechRecognition = 0x0031, "SPEECH_RECOGNITION";
    /// Audio + speaker labels.
    SpeakerIdentification = 0x0032, "SPEAKER_IDENTIFICATION";
    /// Collaborative filtering.
    UserItemRatings = 0x0040, "USER_ITEM_RATINGS";
    /// Click/view interactions.
    ImplicitFeedback = 0x0041, "IMPLICIT_FEEDBACK";
    /// Session-based sequences.
    SequentialRecs = 0x0042, "SEQUENTIAL_RECS";
    /// Image captioning/VQA.
    ImageText = 0x0050, "IMAGE_TEXT";
    /// Speech-to-text pairs.
    AudioText = 0x0051, "AUDIO_TEXT";
    /// Video descriptions.
    VideoText = 0x0052, "VIDEO_TEXT";
    /// User extensions.
    Custom = 0x00FF, "CUSTOM";
}

impl fmt::Display for DatasetType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Parses a spec name in any case, with `-` or `_` (`time-series`, `TIME_SERIES`), or a numeric
/// id (`0x0002`, `2`).
impl FromStr for DatasetType {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        let normalized = text.trim().to_ascii_uppercase().replace('-', "_");
        if let Some(found) = Self::ALL.into_iter().find(|kind| kind.name() == normalized) {
            return Ok(found);
        }
        let id = match normalized.strip_prefix("0X") {
            Some(hex) => u16::from_str_radix(hex, 16),
            None => normalized.parse(),
        }
        .map_err(|_| Error::UnknownDatasetType {
            name: text.to_owned(),
        })?;
        Self::from_id(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_match_the_spec_table() {
        let expected: [(u16, &str); 26] = [
            (0x0001, "TABULAR"),
            (0x0002, "TIME_SERIES"),
            (0x0003, "GRAPH"),
            (0x0004, "SPATIAL"),
            (0x0010, "TEXT_CORPUS"),
            (0x0011, "TEXT_CLASSIFICATION"),
            (0x0012, "TEXT_PAIRS"),
            (0x0013, "SEQUENCE_LABELING"),
            (0x0014, "QUESTION_ANSWERING"),
            (0x0015, "SUMMARIZATION"),
            (0x0016, "TRANSLATION"),
            (0x0020, "IMAGE_CLASSIFICATION"),
            (0x0021, "OBJECT_DETECTION"),
            (0x0022, "SEGMENTATION"),
            (0x0023, "IMAGE_PAIRS"),
            (0x0024, "VIDEO"),
            (0x0030, "AUDIO_CLASSIFICATION"),
            (0x0031, "SPEECH_RECOGNITION"),
            (0x0032, "SPEAKER_IDENTIFICATION"),
            (0x0040, "USER_ITEM_RATINGS"),
            (0x0041, "IMPLICIT_FEEDBACK"),
            (0x0042, "SEQUENTIAL_RECS"),
            (0x0050, "IMAGE_TEXT"),
            (0x0051, "AUDIO_TEXT"),
            (0x0052, "VIDEO_TEXT"),
            (0x00FF, "CUSTOM"),
        ];
        for (kind, (id, name)) in DatasetType::ALL.into_iter().zip(expected) {
            assert_eq!((kind.id(), kind.name()), (id, name));
            assert_eq!(DatasetType::from_id(id).unwrap(), kind);
            assert_eq!(name.parse::<DatasetType>().unwrap(), kind);
            assert_eq!(
                name.to_lowercase()
                    .replace('_', "-")
                    .parse::<DatasetType>()
                    .unwrap(),
                kind
            );
        }
    }

    #[test]
    fn every_undefined_id_is_invalid_format() {
        let defined = DatasetType::ALL.map(DatasetType::id);
        for id in 0..=u16::MAX {
            if !defined.contains(&id) {
                let error = DatasetType::from_id(id).unwrap_err();
                assert_eq!(error.signal(), envelope_core::Signal::InvalidFormat);
            }
        }
    }
}
