//! The one error type of `apr`: the envelope's failures ([`envelope_core::Error`], joined by
//! `From`, as rustls joins its sub-enums) and the model format's own, each with typed context.
//!
//! Every message starts with its Andon signal's name (001 §5.1, §6.2.9), as the envelope's do, and
//! [`Error::signal`] gives that signal, so a caller (or a CLI) acts on the class of failure without
//! matching every variant. Where a failure has an underlying cause (MessagePack, JSON,
//! SafeTensors, the operating system), it is kept as the error's `source`.

use alloc::borrow::ToOwned;
use alloc::string::String;
use alloc::vec::Vec;

use envelope_core::Signal;

use crate::card::PayloadKind;

/// Result alias of this crate.
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// Every failure of the `.apr` format. See [`Error::signal`] for the Andon signal of each.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A failure of the envelope (structure, checksum, version, signature, decryption, license,
    /// limits, I/O): its own message and signal.
    #[error(transparent)]
    Envelope(#[from] envelope_core::Error),
    /// A model's type is not the expected one (001 §5.1).
    #[error("ModelTypeMismatch: expected model type {expected:#06x}, found {found:#06x}")]
    ModelTypeMismatch {
        /// The type id the caller expects.
        expected: u16,
        /// The type id in the header.
        found: u16,
    },
    /// A quantization type is unknown or unsupported (001 §6.2.9 "invalid type byte").
    #[error("UnsupportedQuantization: quantization type {type_id:#04x}")]
    UnsupportedQuantization {
        /// The type id found (0x00 for a name that is no type).
        type_id: u8,
    },
    /// Quantized data is inconsistent, or values cannot be quantized (001 §6.2.9).
    #[error("QuantizationCorrupt: tensor {tensor:?}: {reason}")]
    QuantizationCorrupt {
        /// The tensor's name (empty where a quantizer works on values without a name).
        tensor: String,
        /// Which rule failed.
        reason: &'static str,
    },
    /// A tensor cannot be written in another format as it is (001 §6.2.9 `ExportFailed`).
    #[error("Usage: ExportFailed: tensor {tensor:?} cannot be written as {target}: {reason}")]
    ExportFailed {
        /// The target format (`"GGUF"`, `"SafeTensors"`, `".apr"` for an import).
        target: &'static str,
        /// The tensor's name.
        tensor: String,
        /// Which rule of the target it breaks.
        reason: &'static str,
    },
    /// A Hugging Face model's source files (`config.json`, the tokenizer files kept by the import)
    /// ask for something GGUF export cannot write as llama.cpp's converter would (an architecture
    /// it does not map, a RoPE scaling, a tokenizer kind), or lack what it needs: refused rather
    /// than written half-right (`docs/apr.md` §6.1).
    #[error("Usage: ExportFailed: {file}: {item}: {reason}")]
    ExportSource {
        /// The source file (`"config.json"`, `"tokenizer.json"`, ...; a tensor's name for tensors).
        file: &'static str,
        /// What in it (a key and its value, a token).
        item: String,
        /// Why it cannot be exported.
        reason: &'static str,
    },
    /// A kept source file is not what its name says (not JSON, not a SentencePiece model).
    #[error("Usage: ExportFailed: {file} cannot be read: {reason}")]
    ExportSourceMalformed {
        /// The source file.
        file: &'static str,
        /// Which rule it breaks.
        reason: &'static str,
        /// The decoder's error.
        #[source]
        source: DecodeError,
    },
    /// The file breaks a rule of the format that a decoder found (the metadata or payload is not
    /// the MessagePack it must be, a SafeTensors file or sidecar is malformed); the decoder's error
    /// is kept. The same message as the envelope's `FormatError::Inconsistent`.
    #[error("InvalidFormat: {}", envelope_core::FormatError::Inconsistent { reason })]
    Malformed {
        /// Which rule (a fixed sentence from the format documentation).
        reason: &'static str,
        /// The decoder's error.
        #[source]
        source: DecodeError,
    },
    /// A value cannot be encoded as MessagePack (a non-string map key in a hyperparameter, or a
    /// serde model whose `Serialize` fails).
    #[cfg(feature = "std")]
    #[error("Usage: the {what} cannot be encoded as MessagePack")]
    Encode {
        /// What was encoded (`"model"`, `"model card"`).
        what: &'static str,
        /// The encoder's error.
        #[source]
        source: rmp_serde::encode::Error,
    },
    /// The model card cannot be written as JSON (for GGUF's `apr.model_card`).
    #[cfg(feature = "std")]
    #[error("Usage: the model card cannot be written as JSON")]
    CardJson(#[source] serde_json::Error),
    /// The `safetensors` crate refused to serialize the tensors.
    #[cfg(feature = "std")]
    #[error("Usage: the safetensors crate refused the tensors")]
    SafeTensorsRefused(#[source] safetensors::SafeTensorError),
    /// Two tensors of a model have the same name.
    #[error("Usage: two tensors have the same name")]
    DuplicateName {
        /// The name.
        name: String,
    },
    /// A tensor name is empty or longer than [`crate::MAX_NAME_BYTES`].
    #[error("Usage: a tensor name must be 1 to 1024 bytes")]
    NameLength {
        /// The name's length in bytes.
        bytes: usize,
    },
    /// A tensor has more than [`crate::MAX_DIMS`] dimensions.
    #[error("Usage: a tensor has at most 8 dimensions")]
    TooManyDims {
        /// The tensor's name.
        tensor: String,
        /// How many it has.
        dims: usize,
    },
    /// A tensor's data does not have the length its dtype and shape require.
    #[error("Usage: a tensor's data length does not match its dtype and shape")]
    DataLength {
        /// The tensor's name.
        tensor: String,
        /// The length dtype and shape require (`None` when it overflows).
        expected: Option<u64>,
        /// The data's length.
        found: u64,
    },
    /// Values handed to a quantizer do not have the length of the shape given with them.
    #[error("Usage: the data does not have the shape's length")]
    ShapeLength {
        /// The shape's element count (`None` when it overflows).
        elements: Option<usize>,
        /// How many values were given.
        values: usize,
    },
    /// A block quantizer was given rows that are not whole blocks.
    #[error("Usage: block quantization needs the last dimension to be a multiple of 32")]
    NotWholeBlocks {
        /// The last dimension (`None` for a scalar).
        last: Option<usize>,
    },
    /// A tensor was handed to quantization that is quantized already.
    #[error("Usage: the model is already quantized")]
    AlreadyQuantized {
        /// The tensor's name.
        tensor: String,
    },
    /// A tensor's size does not fit this platform's `usize`.
    #[error("Usage: a tensor is too large for this platform")]
    TooLargeForPlatform {
        /// The tensor's name.
        tensor: String,
    },
    /// The caller asked for a tensor position the model does not have.
    #[error("Usage: the model has no tensor at this position")]
    NoTensorAt {
        /// The position asked for.
        position: usize,
        /// How many tensors there are.
        count: usize,
    },
    /// The caller asked for a tensor name the model does not have.
    #[error("Usage: the model has no tensor of that name")]
    NoTensorNamed {
        /// The name asked for.
        name: String,
    },
    /// The payload is not the kind the caller asked for (a serde model loaded as tensors, or the
    /// other way round).
    #[error("Usage: {}", payload_mismatch(*found))]
    WrongPayload {
        /// What the file holds.
        found: PayloadKind,
    },
    /// A model type name that is not in the catalog (001 §3.1).
    #[error("Usage: unknown model type name")]
    UnknownModelType {
        /// The name given.
        name: String,
    },
    /// A file that is not TRUENO_NATIVE where one is required.
    #[error("Usage: the file is not TRUENO_NATIVE: it has no aligned tensors")]
    NotTruenoNative,
    /// `general.alignment` that GGUF does not allow.
    #[error("Usage: the GGUF alignment must be a power of two, at least 8")]
    GgufAlignment {
        /// The alignment asked for.
        alignment: u32,
    },
    /// The GGUF data section would pass `u64::MAX` bytes.
    #[error("Usage: the GGUF data section overflows u64")]
    GgufTooLarge {
        /// The tensor at which it overflows.
        tensor: String,
    },
    /// A tensor fetched for a lazy export (GGUF, SafeTensors) differs from its directory entry.
    #[error("Usage: a fetched tensor differs from its directory entry")]
    FetchedTensorDiffers {
        /// The entry's name.
        tensor: String,
    },
    /// A watermark that cannot be embedded (strength or redundancy out of range), or that the
    /// model cannot carry (`NotTraceable`: the marked tensors do not read back as the buyer).
    #[cfg(feature = "std")]
    #[error("Usage: {0}")]
    Watermark(#[from] watermark::Error),
    /// A tensor chosen explicitly for a watermark is of a type that cannot carry one.
    #[error("Usage: tensor {tensor:?} ({dtype}) cannot carry a watermark: {reason}")]
    WatermarkUnsupported {
        /// The tensor's name.
        tensor: String,
        /// Its dtype's name.
        dtype: &'static str,
        /// Why.
        reason: &'static str,
    },
    /// A license claims WATERMARKED but no watermark was given to embed (issue 16: the flag is
    /// set only by an actual embedding).
    #[error(
        "Usage: the license has the WATERMARKED flag but no watermark was given: pass the \
         watermark and seller key, which set the flag after embedding"
    )]
    WatermarkClaimWithoutMark,
    /// A Hugging Face model directory that cannot be imported (`docs/apr.md` §11): its own
    /// message and signal, naming the file, shard or tensor at fault.
    #[cfg(feature = "std")]
    #[error(transparent)]
    HfDirectory(#[from] crate::hf::HfError),
    /// Calibration samples that cannot be used (`crate::quant::calibration`).
    #[cfg(feature = "std")]
    #[error("Usage: {0}")]
    Calibration(#[from] crate::quant::calibration::SamplesError),
    /// The calibration file cannot be read.
    #[cfg(all(feature = "fs", not(target_arch = "wasm32")))]
    #[error("Io: reading the calibration data {}: {source}", path.display())]
    CalibrationRead {
        /// The file.
        path: std::path::PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
}

/// The error of a decoder that refused a file's bytes ([`Error::Malformed`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// MessagePack (metadata, serde payloads).
    #[cfg(feature = "std")]
    #[error(transparent)]
    MessagePack(#[from] rmp_serde::decode::Error),
    /// MessagePack, as the `no_std` build's decoder (`messagepack-serde`) refused it.
    #[cfg(not(feature = "std"))]
    #[error(transparent)]
    MessagePack(
        #[from] messagepack_serde::de::Error<messagepack_serde::messagepack_core::io::RError>,
    ),
    /// JSON (SafeTensors sidecars).
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The `safetensors` crate.
    #[cfg(feature = "std")]
    #[error(transparent)]
    SafeTensors(#[from] safetensors::SafeTensorError),
    /// Protocol Buffers (a SentencePiece `tokenizer.model`).
    #[cfg(feature = "std")]
    #[error(transparent)]
    Protobuf(#[from] prost::DecodeError),
}

const fn payload_mismatch(found: PayloadKind) -> &'static str {
    match found {
        PayloadKind::Serde => "this file holds a serde model, not named tensors",
        PayloadKind::Tensors => "this file holds named tensors; load it as a tensor model",
    }
}

impl Error {
    /// The Andon signal this failure raises.
    #[must_use]
    pub const fn signal(&self) -> Signal {
        match self {
            Self::Envelope(error) => error.signal(),
            Self::Malformed { .. } => Signal::InvalidFormat,
            Self::ModelTypeMismatch { .. } => Signal::ModelTypeMismatch,
            Self::UnsupportedQuantization { .. } => Signal::UnsupportedQuantization,
            Self::QuantizationCorrupt { .. } => Signal::QuantizationCorrupt,
            #[cfg(feature = "std")]
            Self::HfDirectory(error) => error.signal(),
            #[cfg(all(feature = "fs", not(target_arch = "wasm32")))]
            Self::CalibrationRead { .. } => Signal::Io,
            // Every other variant refuses the request (`ExportFailed`, `DuplicateName`,
            // `DataLength`, ...): its message starts with `Usage:`, which the test
            // `every_error_message_starts_with_its_signal_name` holds them to.
            _ => Signal::Usage,
        }
    }

    /// Whether the failure is about the model or its data, not the request, although its signal
    /// is `Usage`: a tensor the target format cannot hold (`ExportFailed`), a file over the
    /// reader's limits (`LimitExceeded`) or a model too small to carry a watermark
    /// (`NotTraceable`) is a failure of the operation (a CLI exits 1), not of the command line.
    #[cfg(feature = "std")]
    #[must_use]
    pub const fn is_operation_failure(&self) -> bool {
        matches!(
            self,
            Self::ExportFailed { .. }
                | Self::ExportSource { .. }
                | Self::ExportSourceMalformed { .. }
                | Self::Envelope(envelope_core::Error::LimitExceeded(_))
                | Self::Watermark(watermark::Error::NotTraceable { .. })
        )
    }

    /// Whether the failure is about the model or its data, not the request (see the `std`
    /// build's; without `std` only the reader's limits qualify).
    #[cfg(not(feature = "std"))]
    #[must_use]
    pub const fn is_operation_failure(&self) -> bool {
        matches!(self, Self::Envelope(envelope_core::Error::LimitExceeded(_)))
    }

    /// `InvalidFormat`: the file breaks rule `reason` (the envelope's `FormatError::Inconsistent`).
    pub(crate) fn inconsistent(reason: &'static str) -> Self {
        Self::Envelope(envelope_core::FormatError::Inconsistent { reason }.into())
    }

    /// `Malformed`: the file breaks rule `reason`, as `source` found.
    pub(crate) fn malformed(reason: &'static str, source: impl Into<DecodeError>) -> Self {
        Self::Malformed {
            reason,
            source: source.into(),
        }
    }

    /// `QuantizationCorrupt` naming `tensor`.
    pub(crate) fn corrupt(tensor: impl Into<String>, reason: &'static str) -> Self {
        Self::QuantizationCorrupt {
            tensor: tensor.into(),
            reason,
        }
    }
}

#[cfg(feature = "std")]
impl From<std::io::Error> for Error {
    fn from(error: std::io::Error) -> Self {
        Self::Envelope(error.into())
    }
}

/// The first two names of `names` that are the same, if any (the duplicate check of every writer).
pub(crate) fn check_unique<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<()> {
    let mut names: Vec<&str> = names.into_iter().collect();
    names.sort_unstable();
    match names.windows(2).find(|pair| pair[0] == pair[1]) {
        Some(pair) => Err(Error::DuplicateName {
            name: pair[0].to_owned(),
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_message_starts_with_its_signal_name() {
        let errors = [
            Error::from(envelope_core::Error::from(
                envelope_core::FormatError::BadMagic { found: *b"XXXX" },
            )),
            Error::ModelTypeMismatch {
                expected: 1,
                found: 2,
            },
            Error::UnsupportedQuantization { type_id: 9 },
            Error::corrupt("w", "x"),
            Error::ExportFailed {
                target: "GGUF",
                tensor: "w".into(),
                reason: "x",
            },
            Error::malformed(
                "x",
                serde_json::from_str::<u8>("[").expect_err("not a number"),
            ),
            Error::ExportSource {
                file: "config.json",
                item: "architectures".into(),
                reason: "x",
            },
            Error::ExportSourceMalformed {
                file: "config.json",
                reason: "x",
                source: serde_json::from_str::<u8>("[")
                    .expect_err("not a number")
                    .into(),
            },
            Error::CardJson(serde_json::from_str::<u8>("[").expect_err("not a number")),
            Error::DuplicateName { name: "w".into() },
            Error::NameLength { bytes: 0 },
            Error::TooManyDims {
                tensor: "w".into(),
                dims: 9,
            },
            Error::DataLength {
                tensor: "w".into(),
                expected: Some(4),
                found: 3,
            },
            Error::ShapeLength {
                elements: Some(4),
                values: 3,
            },
            Error::NotWholeBlocks { last: Some(40) },
            Error::AlreadyQuantized { tensor: "w".into() },
            Error::TooLargeForPlatform { tensor: "w".into() },
            Error::NoTensorAt {
                position: 3,
                count: 1,
            },
            Error::NoTensorNamed { name: "w".into() },
            Error::WrongPayload {
                found: PayloadKind::Serde,
            },
            Error::WrongPayload {
                found: PayloadKind::Tensors,
            },
            Error::UnknownModelType { name: "x".into() },
            Error::NotTruenoNative,
            Error::GgufAlignment { alignment: 3 },
            Error::GgufTooLarge { tensor: "w".into() },
            Error::FetchedTensorDiffers { tensor: "w".into() },
            Error::from(crate::quant::calibration::SamplesError::NoRows),
            Error::from(watermark::Error::NotTraceable {
                values: 3,
                marked: 0,
            }),
            Error::WatermarkUnsupported {
                tensor: "w".into(),
                dtype: "f16",
                reason: "x",
            },
            Error::WatermarkClaimWithoutMark,
            Error::from(crate::hf::HfError::NoConfig { dir: "m".into() }),
            Error::from(crate::hf::HfError::TooLarge {
                file: "tokenizer.json".into(),
                limit: 1,
            }),
        ];
        for error in errors {
            let message = error.to_string();
            assert!(message.starts_with(error.signal().name()), "{message}");
        }
    }

    #[test]
    fn the_four_model_signals_read_as_they_did_in_envelope_core() {
        assert_eq!(
            Error::ModelTypeMismatch {
                expected: 0x0009,
                found: 0x0001
            }
            .to_string(),
            "ModelTypeMismatch: expected model type 0x0009, found 0x0001"
        );
        assert_eq!(
            Error::UnsupportedQuantization { type_id: 0x7e }.to_string(),
            "UnsupportedQuantization: quantization type 0x7e"
        );
        assert_eq!(
            Error::corrupt("w", "the Q8_TENSOR header is missing").to_string(),
            "QuantizationCorrupt: tensor \"w\": the Q8_TENSOR header is missing"
        );
        let export = Error::ExportFailed {
            target: "GGUF",
            tensor: "mask".into(),
            reason: "GGML has no unsigned 8-bit type",
        };
        assert_eq!(
            export.to_string(),
            "Usage: ExportFailed: tensor \"mask\" cannot be written as GGUF: GGML has no \
             unsigned 8-bit type"
        );
        assert_eq!(export.signal(), Signal::Usage);
        assert!(export.is_operation_failure());
    }

    #[test]
    fn a_duplicate_name_is_named() {
        let error = check_unique(["b", "a", "b"]).unwrap_err();
        assert!(matches!(error, Error::DuplicateName { name } if name == "b"));
        assert!(check_unique(["a", "b"]).is_ok());
    }
}
