//! An `.apr` model read over object storage: opened from its head and tail
//! (`apr::RangedOpening`), each tensor fetched by the range of its chunk and checked before it is
//! decoded.

use std::ops::Range;

use apr::{AprFile, LoadOptions, RangedModel, RangedOpening, Tensor};
use envelope_core::Format;

use crate::fetch::RemoteFile;
use crate::location::Location;
use crate::ranged::{InFlight, ReadOptions, RemoteEnvelope};
use crate::{Error, Result};

enum Inner {
    /// A STREAMING file (a tensor model, TRUENO_NATIVE ones included): head and tail held,
    /// tensors fetched on demand.
    Ranged(Box<RangedModel<Vec<u8>>>),
    /// A file only its whole-file CRC32 verifies (a serde model): fetched whole, read by the
    /// local reader.
    Whole(Box<AprFile<Vec<u8>>>),
}

/// A verified `.apr` file over object storage (or a local path, through the same code).
pub struct RemoteModel {
    file: RemoteFile,
    inner: Inner,
    options: ReadOptions,
    in_flight: InFlight,
}

impl std::fmt::Debug for RemoteModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteModel")
            .field("file", &self.file)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl RemoteModel {
    /// Opens `location` (a URL or a local path, see [`Location::parse`]) and verifies everything
    /// but the tensors, in the local loader's order (`apr::LoadOptions`: signature policy,
    /// license, model type, then the metadata and tensor directory against the chunk index and,
    /// TRUENO_NATIVE, the tensor index). A tensor model costs two requests (first and last
    /// [`ReadOptions::first_read`] bytes, in parallel), more only when its sections are larger;
    /// under `RequireSignature` the payload is streamed through the signature check as well. A
    /// serde model (not STREAMING) is fetched whole: only its CRC32 verifies it.
    ///
    /// # Errors
    /// `Location`; what [`RemoteFile`] returns; `HeadTooLarge`; `Model` for a file the loader
    /// refuses (integrity, signature, license, model type, metadata).
    pub async fn open(
        location: &str,
        load: &LoadOptions<'_>,
        options: ReadOptions,
    ) -> Result<Self> {
        Self::open_location(Location::parse(location)?, load, options).await
    }

    /// As [`RemoteModel::open`], for a location already parsed.
    ///
    /// # Errors
    /// As [`RemoteModel::open`].
    pub async fn open_location(
        location: Location,
        load: &LoadOptions<'_>,
        options: ReadOptions,
    ) -> Result<Self> {
        let opened = RemoteEnvelope::open_location(location, Format::Model, options).await?;
        Self::from_envelope(opened, load, options).await
    }

    /// As [`RemoteModel::open`], for an envelope already opened as a model (a tool that reports
    /// on the envelope first, as `apr inspect` does).
    ///
    /// # Errors
    /// As [`RemoteModel::open`].
    pub async fn from_envelope(
        opened: RemoteEnvelope,
        load: &LoadOptions<'_>,
        options: ReadOptions,
    ) -> Result<Self> {
        let (file, envelope) = opened.into_parts();
        let inner = match envelope {
            Some(envelope) => {
                let mut opening = RangedOpening::begin(envelope, load)?;
                if let Some(range) = opening.signed_payload() {
                    file.stream(range, |piece| Ok(opening.update(piece)?))
                        .await?;
                }
                Inner::Ranged(Box::new(opening.finish()?))
            }
            None => {
                // The whole file: its CRC32 is checked by the local reader over these bytes.
                let whole = file.range(0..file.size(), |_| Ok(())).await?;
                Inner::Whole(Box::new(AprFile::open(whole.to_vec(), load)?))
            }
        };
        Ok(Self {
            file,
            inner,
            options,
            in_flight: InFlight::new(options.max_in_flight),
        })
    }

    /// This model able to read the tensors of its encrypted payload with `key` (derived once),
    /// as `AprFile::decrypt_tensors` reads a local file's.
    ///
    /// # Errors
    /// `Model`: `Usage` if the file is not encrypted or is a serde model (read it with
    /// [`RemoteModel::whole`] and `AprFile::decrypt_model`), `DecryptionFailed` for a key that
    /// is not the file's.
    #[cfg(feature = "format-encryption")]
    pub fn with_key(mut self, key: envelope_crypto::DecryptionKey<'_>) -> Result<Self> {
        self.inner = match self.inner {
            Inner::Ranged(model) => Inner::Ranged(Box::new(model.with_key(key)?)),
            Inner::Whole(_) => {
                return Err(Error::Model(
                    envelope_core::Error::InvalidArgument(
                        "a serde model is decrypted whole: use AprFile::decrypt_model",
                    )
                    .into(),
                ));
            }
        };
        Ok(self)
    }

    /// The object read (size, ETag, requests sent).
    #[must_use]
    pub fn file(&self) -> &RemoteFile {
        &self.file
    }

    /// The model opened from ranges (a tensor model), if it is one.
    #[must_use]
    pub fn ranged(&self) -> Option<&RangedModel<Vec<u8>>> {
        match &self.inner {
            Inner::Ranged(model) => Some(model),
            Inner::Whole(_) => None,
        }
    }

    /// The model fetched whole (a serde model), if it is one: `AprFile::model` decodes it.
    #[must_use]
    pub fn whole(&self) -> Option<&AprFile<Vec<u8>>> {
        match &self.inner {
            Inner::Ranged(_) => None,
            Inner::Whole(file) => Some(file),
        }
    }

    /// The header.
    #[must_use]
    pub fn header(&self) -> &envelope_core::Header {
        match &self.inner {
            Inner::Ranged(model) => model.envelope().header(),
            Inner::Whole(file) => file.envelope().header(),
        }
    }

    /// The metadata (model card, tensor directory, quantization record).
    #[must_use]
    pub fn metadata(&self) -> &apr::ModelMetadata {
        match &self.inner {
            Inner::Ranged(model) => model.metadata(),
            Inner::Whole(file) => file.metadata(),
        }
    }

    /// What `apr inspect` shows of the model, as `apr::summarize` of the local file.
    #[must_use]
    pub fn summary(&self) -> apr::ModelSummary {
        match &self.inner {
            Inner::Ranged(model) => model.summary(),
            Inner::Whole(file) => apr::summarize(file),
        }
    }

    /// Number of tensors (0 for a serde model).
    #[must_use]
    pub fn num_tensors(&self) -> usize {
        self.metadata().tensors.len()
    }

    /// Tensor `position` (payload order): one range request, its chunk (more only on retries).
    ///
    /// # Errors
    /// As [`RemoteModel::tensors`].
    pub async fn tensor_at(&self, position: usize) -> Result<Tensor> {
        let mut tensors = self.tensors(position..position + 1).await?;
        tensors.pop().ok_or(Error::Model(apr::Error::NoTensorAt {
            position,
            count: self.num_tensors(),
        }))
    }

    /// The tensor named `name`: one range request.
    ///
    /// # Errors
    /// `Model` (`NoTensorNamed`); as [`RemoteModel::tensors`].
    pub async fn tensor(&self, name: &str) -> Result<Tensor> {
        let position = match &self.inner {
            Inner::Ranged(model) => model.position(name)?,
            Inner::Whole(file) => return Ok(file.tensor(name)?),
        };
        self.tensor_at(position).await
    }

    /// Tensors `positions`, in order, fetched in parallel: at most [`ReadOptions::max_requests`]
    /// requests and [`ReadOptions::max_in_flight`] bytes fetched and not yet decoded at once.
    /// Each tensor's chunk is checked (length and CRC-32C, or AES-GCM) before it is decoded; a
    /// chunk whose bytes do not match is requested again (a body changed in transit), within
    /// the retry budget.
    ///
    /// # Errors
    /// `ObjectChanged`; `RetriesExhausted` (its signal is the last failure's:
    /// `ChecksumMismatch` for a chunk that never matched); `Model` for a chunk that does not
    /// decode (`InvalidFormat`, `DecryptionFailed`, `QuantizationCorrupt`) or a position the
    /// model does not have (`NoTensorAt`).
    pub async fn tensors(&self, positions: Range<usize>) -> Result<Vec<Tensor>> {
        let model = match &self.inner {
            Inner::Ranged(model) => model,
            Inner::Whole(file) => {
                return positions
                    .map(|position| file.tensor_at(position).map_err(Error::from))
                    .collect();
            }
        };
        self.in_flight
            .fetch_chunks(
                &self.file,
                self.options.max_requests,
                positions,
                |position| Ok(model.chunk_range(position)?),
                |position, bytes| Ok(model.check_chunk(position, bytes)?),
                |position, stored| Ok(model.decode_tensor(position, &stored)?),
            )
            .await
    }
}
