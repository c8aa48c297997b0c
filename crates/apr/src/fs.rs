//! Models on disk (native only, feature `fs`): atomic saves, mapped lazy opens, and
//! [`TensorFileWriter`], which rewrites a model of any size one tensor at a time.
//!
//! Memory stays bounded by the largest tensor: [`open`] maps the file and checks only what
//! precedes the payload ([`envelope_core::Envelope::parse_lazy`]), each tensor's chunk is checked
//! (CRC-32C) when it is read, and [`TensorFileWriter`] spills each finished tensor to a temporary
//! file next to the destination (or holds it up to a budget, [`TensorFileWriter::with_memory_budget`]), then writes the
//! `.apr` file chunk by chunk ([`envelope_core::EnvelopeParts::begin_chunked`]) and renames it into
//! place. [`quantize_into`] is `apr quantize`'s streaming pass: kernels on every core straight
//! from the mapped chunks, the input's pages released behind it, and, when the output can be
//! planned before the pass, each batch of blocks written into the output file at its final offset
//! by the thread that made it (the writer's placed mode: only the prefix and the trailer are left
//! for [`TensorFileWriter::finish`]).

use std::borrow::Cow;
use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

use envelope_core::fs::Destination;
use envelope_core::{ChunkIndex, Envelope, EnvelopeParts, Format};
pub use mapped_file::MappedFile;
use mapped_file::input::{self, Follow};
use output_file::{PendingFile, PositionalWriter};

use crate::card::{ModelCard, ModelMetadata, PayloadKind, TensorEntry};
use crate::codec::{AprFile, SaveOptions};
use crate::error::{Error, Result};
use crate::model::TensorModel;
use crate::model_type::ModelType;
use crate::quant::QuantizationInfo;
use crate::tensor::{DType, Tensor};
use crate::{gguf, safetensors};

mod hf;
mod quantize;
pub use hf::{HfImportProgress, HfImportReport, import_hf_dir, model_name};
pub use quantize::quantize_into;

/// Opens a model file: mapped, the envelope's prefix (and, for files that are not STREAMING, the
/// whole-file CRC32) verified, the metadata decoded. Tensor chunks are verified as they are read.
///
/// # Errors
/// `Io` if the file cannot be read; otherwise as [`AprFile::parse`].
pub fn open(path: impl AsRef<Path>) -> Result<AprFile<MappedFile>> {
    open_with(path, envelope_core::Limits::DEFAULT)
}

/// [`open`] under the reader's resource policy `limits` (how much a tensor or the metadata may
/// decode to).
///
/// # Errors
/// As [`open`], plus `LimitExceeded`.
pub fn open_with(
    path: impl AsRef<Path>,
    limits: envelope_core::Limits,
) -> Result<AprFile<MappedFile>> {
    let bytes = MappedFile::open(path)?;
    AprFile::from_envelope(Envelope::parse_lazy(bytes, Format::Model)?.with_limits(limits))
}

/// Opens a model file under `options` ([`LoadOptions`](crate::LoadOptions): signature, license, model type, limits).
/// Under a signature requirement the file is first held still (`mapped_file::Mode::Snapshot`: a
/// private copy, mapped), so the tensors read later are the bytes whose signature was checked
/// (SECURITY.md, "What was verified is what is used"); otherwise it is mapped.
///
/// # Errors
/// `Io` if the file cannot be read; otherwise as [`AprFile::open`].
pub fn open_verified(
    path: impl AsRef<Path>,
    options: &crate::LoadOptions<'_>,
) -> Result<AprFile<MappedFile>> {
    let mode = if options.requires_signature() {
        mapped_file::Mode::Snapshot
    } else {
        mapped_file::Mode::Map
    };
    AprFile::open(MappedFile::open_with(path, mode)?, options)
}

/// Maps a TRUENO_NATIVE model zero-copy (`zerocopy_trueno::MappedModel`) after checking what the
/// mapping alone cannot, as it reads only the tensor index: that the index and the `.apr`
/// metadata describe the same tensors (docs/zerocopy.md §9). Opening stays O(tensors).
///
/// # Errors
/// As [`zerocopy_trueno::MappedModel::open`]; `InvalidFormat` if the metadata is not an `.apr`
/// map, or disagrees with the index (naming the tensor); `Usage` for a file that is not
/// TRUENO_NATIVE.
pub fn open_mapped(path: impl AsRef<Path>) -> Result<zerocopy_trueno::MappedModel> {
    let mapped = zerocopy_trueno::MappedModel::open(path)?;
    let envelope = mapped.tensors().envelope();
    let metadata = crate::codec::checked_metadata(envelope)?;
    crate::trueno::aligned_sizes(envelope, &metadata)?.ok_or(Error::NotTruenoNative)?;
    Ok(mapped)
}

/// Loads every tensor of an unencrypted model file.
///
/// # Errors
/// As [`open`], then `ModelTypeMismatch`, then as [`AprFile::tensors`].
pub fn load_tensors(path: impl AsRef<Path>, expected: ModelType) -> Result<TensorModel> {
    let file = open(path)?;
    file.expect_type(expected)?;
    file.tensors()
}

/// Saves envelope parts atomically.
///
/// # Errors
/// `Io`, or the writer's errors.
pub fn save_parts(destination: impl Into<Destination>, parts: &EnvelopeParts<'_>) -> Result<()> {
    Ok(envelope_core::fs::save(destination, parts)?)
}

/// Saves a tensor model atomically.
///
/// # Errors
/// As [`crate::tensor_parts`], plus `Io`.
pub fn save_tensors(
    destination: impl Into<Destination>,
    model: &TensorModel,
    model_type: ModelType,
    options: &SaveOptions,
) -> Result<()> {
    let mut writer = TensorFileWriter::new(destination, options.compression)?;
    for tensor in &model.tensors {
        writer.push(tensor)?;
    }
    writer.finish(model_type, &options.card, model.quantization.clone())
}

/// Writes a GGUF file atomically; returns what was written.
///
/// # Errors
/// As [`gguf::write`], plus `Io`.
pub fn export_gguf(
    destination: impl Into<Destination>,
    model: &TensorModel,
    model_type: ModelType,
    card: &ModelCard,
    options: &gguf::GgufOptions,
) -> Result<gguf::Written> {
    output_file::write(destination, |out| {
        gguf::write(model, model_type, card, options, out)
    })
}

/// Exports an unencrypted model file to GGUF one tensor at a time ([`gguf::write_lazy`]): memory
/// holds one tensor, whatever the model's size. The file is written atomically. A serde linear or
/// logistic regression is written as its `coefficients` and `intercept` tensors
/// ([`crate::regression`], 003 §7.1). Returns what was written.
///
/// # Errors
/// As [`gguf::write_lazy`] and [`AprFile::tensor_at`], plus `Io`; `ExportFailed` for a serde
/// model without a tensor layout.
pub fn export_gguf_from<B: AsRef<[u8]>>(
    destination: impl Into<Destination>,
    file: &AprFile<B>,
    options: &gguf::GgufOptions,
) -> Result<gguf::Written> {
    let model_type = ModelType::from_id(file.model_type_id()).unwrap_or(ModelType::Custom);
    let metadata = file.metadata();
    if metadata.payload == PayloadKind::Serde {
        // 003 §7.1: a regression's coefficients and intercept as tensors; other serde models
        // are refused by `regression_tensors` before anything is written.
        let model = crate::regression::regression_tensors(file)?;
        return export_gguf(
            destination,
            &model,
            model_type,
            &metadata.model_card,
            options,
        );
    }
    output_file::write(destination, |out| {
        gguf::write_lazy(
            &metadata.tensors,
            model_type,
            &metadata.model_card,
            options,
            out,
            |i| file.tensor_at(i),
        )
    })
}

/// Writes a model's SafeTensors export as the directory `destination` ([`safetensors::Plan`]: the
/// layout transformers loads for a model with `config.json`, 001 §6.2.6's otherwise), one tensor
/// in memory at a time. The directory is built beside the destination and moved into place whole
/// ([`output_file::write_dir`]), so an export never mixes new files with an earlier export's (a
/// stale `scales.json` or shard would be read with new weights). An existing directory is
/// replaced (with `Existing::Replace`) only if it holds nothing but files an export writes
/// ([`safetensors::is_export_file`]).
///
/// # Errors
/// As [`safetensors::Plan::new`] and [`safetensors::PlannedFile::write`] (with `tensor` as the
/// source), plus `Io` (`AlreadyExists` for a non-empty directory under `Existing::Keep`;
/// `InvalidInput` for a directory holding files an export does not write).
pub fn export_safetensors_with(
    destination: impl Into<Destination>,
    entries: &[TensorEntry],
    card: &ModelCard,
    options: &safetensors::SafeTensorsOptions,
    mut tensor: impl FnMut(usize) -> Result<Tensor>,
) -> Result<safetensors::Layout> {
    let destination = destination.into();
    let plan = safetensors::Plan::new(entries, card, options)?;
    // Names an earlier export may have left (shards are numbered, so they are listed here).
    let mut replaceable: Vec<String> = std::fs::read_dir(destination.path())
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| safetensors::is_export_file(name))
        .collect();
    replaceable.extend(plan.file_names().map(str::to_owned));
    let replaceable: Vec<&str> = replaceable.iter().map(String::as_str).collect();
    output_file::write_dir(destination, &replaceable, |dir| {
        for file in plan.files() {
            output_file::write(dir.join(file.name()), |out| file.write(out, &mut tensor))?;
        }
        Ok(plan.layout())
    })
}

/// [`export_safetensors_with`] of an unencrypted model file, each tensor read from it when
/// written: memory holds one tensor, whatever the model's size.
///
/// # Errors
/// As [`export_safetensors_with`] and [`AprFile::tensor_at`].
pub fn export_safetensors_from<B: AsRef<[u8]>>(
    destination: impl Into<Destination>,
    file: &AprFile<B>,
    options: &safetensors::SafeTensorsOptions,
) -> Result<safetensors::Layout> {
    let metadata = file.metadata();
    export_safetensors_with(
        destination,
        &metadata.tensors,
        &metadata.model_card,
        options,
        |i| file.tensor_at(i),
    )
}

/// [`export_safetensors_with`] of a model in memory.
///
/// # Errors
/// As [`export_safetensors_with`].
pub fn export_safetensors(
    destination: impl Into<Destination>,
    model: &TensorModel,
    card: &ModelCard,
    options: &safetensors::SafeTensorsOptions,
) -> Result<safetensors::Layout> {
    export_safetensors_with(
        destination,
        &safetensors::entries(model),
        card,
        options,
        |i| {
            model.tensors.get(i).cloned().ok_or(Error::NoTensorAt {
                position: i,
                count: model.tensors.len(),
            })
        },
    )
}

/// Imports a SafeTensors file; `scales.json` / `mins.json` next to it are used when present.
///
/// Every file is opened without blocking and must be a regular file (a FIFO is refused, never
/// waited on). The sidecars are also opened without following a symlink and read only up to
/// [`safetensors::sidecar_limit`] bytes, what the weights' quantized tensors can need: a sidecar
/// that is a link to `/dev/zero`, a FIFO or a huge file is refused, never read whole.
///
/// # Errors
/// `Io` (also for the refusals above), or as [`safetensors::import`].
pub fn import_safetensors(path: impl AsRef<Path>) -> Result<TensorModel> {
    let path = path.as_ref();
    // The weights path is the caller's to choose (a symlink there is followed); its sidecars are
    // found by name beside it, so they are never followed.
    let weights = MappedFile::from_file(
        &input::open(path, Follow::Symlinks)?,
        mapped_file::Mode::Map,
    )?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let limit = safetensors::sidecar_limit(&weights)?;
    let sidecar = |name: &str| read_sidecar(&dir.join(name), limit);
    let scales = sidecar("scales.json")?;
    let mins = sidecar("mins.json")?;
    safetensors::import(&weights, scales.as_deref(), mins.as_deref())
}

/// Reads the sidecar at `path` if it exists: a regular file reached without a symlink, of at
/// most `limit` bytes.
fn read_sidecar(path: &Path, limit: u64) -> Result<Option<Vec<u8>>> {
    let file = match input::open(path, Follow::NoSymlinks) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error.into()),
    };
    input::read_file(file, limit)?.map(Some).ok_or_else(|| {
        Error::from(std::io::Error::other(format!(
            "{}: larger than the {limit} bytes the weights' quantized tensors can need",
            path.display()
        )))
    })
}

/// The memory budget of `apr quantize`'s writer ([`TensorFileWriter::with_memory_budget`]): an
/// output up to 1 GiB (a 1B-parameter model in Q8_0) is held and written once; a larger one holds
/// its first GiB and spills the rest, so memory stays bounded on any model.
pub const QUANTIZE_MEMORY_BUDGET: u64 = 1 << 30;

/// Writes a tensor model one tensor at a time: memory holds one tensor, not the model
/// ([`TensorFileWriter::new`]), or the first stored chunks up to a budget and then one tensor
/// ([`TensorFileWriter::with_memory_budget`]).
pub struct TensorFileWriter {
    destination: Destination,
    compression: envelope_core::Compression,
    chunks: Chunks,
    entries: Vec<TensorEntry>,
    /// The names pushed so far: the duplicate check is O(1) per tensor, not a scan of `entries`
    /// (a scan made writing 100 000 tensors take minutes).
    names: std::collections::HashSet<String>,
    sizes: Vec<(u64, u64, u64)>,
    checksums: Vec<u32>,
    quantized: bool,
}

/// Where the stored chunks wait for [`TensorFileWriter::finish`]: the first ones in memory while
/// they fit the budget (no second write and read of their bytes), every later one in an anonymous
/// temporary file (memory stays bounded whatever the model's size). The file written is the same
/// either way, byte for byte.
struct Chunks {
    held: Vec<Vec<u8>>,
    held_bytes: u64,
    budget: u64,
    /// Created when the first chunk does not fit the budget; from then on every chunk goes here,
    /// so the held chunks are always the first ones.
    spill: Option<BufWriter<File>>,
    scratch_dir: std::path::PathBuf,
    /// Placed mode ([`TensorFileWriter::place`]): every chunk is written straight into the output
    /// at its final offset, and nothing is held or spilled.
    placed: Option<Placed>,
}

/// The output of a [`TensorFileWriter`] in placed mode: the temporary file, open from the start,
/// into which each chunk is written at its final offset, `payload_offset` being where the planned
/// metadata puts the payload.
struct Placed {
    /// Declared before `file`: dropped first, which ends its syncing thread before the file is
    /// committed or removed.
    out: PositionalWriter,
    file: PendingFile,
    payload_offset: u64,
    /// The chunks' bytes written so far.
    written: u64,
    /// Their CRC32 (IEEE), in file order.
    crc32: crc32fast::Hasher,
}

/// How [`TensorFileWriter::finish`] wrote the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Written {
    /// Chunk by chunk, from memory and the spill file.
    Streamed,
    /// Placed: the metadata came out as long as planned, so only the prefix and the trailer were
    /// left to write.
    InPlace,
    /// Placed, but the metadata came out longer or shorter than planned (an accuracy warning, a
    /// different card): the payload was copied after the right prefix into a second temporary
    /// file.
    Copied,
}

impl Placed {
    /// Finishes the file in place when `parts` put the payload where it was planned, else by
    /// copying it into a fresh temporary file for `destination`. Either way the bytes are those
    /// of `parts.begin_chunked(index)` with the chunks written in order.
    fn finish(
        self,
        destination: Destination,
        parts: &EnvelopeParts<'_>,
        index: &ChunkIndex,
    ) -> Result<Written> {
        let layout = parts.placed_layout(index)?;
        let trailer = layout.trailer(&self.crc32);
        let Self {
            out,
            mut file,
            payload_offset,
            written,
            ..
        } = self;
        if layout.payload_offset() == payload_offset {
            out.write_all_at(layout.prefix(), 0)?;
            out.write_all_at(&trailer, layout.trailer_offset())?;
            drop(out);
            file.commit()?;
            return Ok(Written::InPlace);
        }
        drop(out);
        let mut copy = PendingFile::create(destination)?;
        let mut payload = file.writer().get_ref().try_clone()?;
        payload.seek(SeekFrom::Start(payload_offset))?;
        let writer = copy.writer();
        writer.write_all(layout.prefix())?;
        // copy_file_range where the kernel offers it: the payload does not pass through here.
        let copied = std::io::copy(&mut payload.take(written), writer)?;
        if copied != written {
            return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof).into());
        }
        writer.write_all(&trailer)?;
        copy.commit()?;
        // Dropping the first temporary file removes it.
        drop(file);
        Ok(Written::Copied)
    }
}

impl Chunks {
    fn keep(&mut self, stored: Cow<'_, [u8]>) -> Result<()> {
        let len = stored.len() as u64;
        if let Some(placed) = &mut self.placed {
            placed
                .out
                .write_all_at(&stored, placed.payload_offset + placed.written)?;
            placed.crc32.update(&stored);
            placed.written += len;
            return Ok(());
        }
        if self.spill.is_none() && self.held_bytes.saturating_add(len) <= self.budget {
            self.held_bytes += len;
            self.held.push(stored.into_owned());
            return Ok(());
        }
        let spill = match &mut self.spill {
            Some(spill) => spill,
            None => self.spill.insert(Self::spill_file(&self.scratch_dir)?),
        };
        spill.write_all(&stored)?;
        Ok(())
    }

    /// Anonymous (unlinked at creation): nothing to clean up on any exit path.
    fn spill_file(scratch_dir: &Path) -> Result<BufWriter<File>> {
        Ok(BufWriter::with_capacity(
            1 << 20,
            tempfile::tempfile_in(scratch_dir)?,
        ))
    }
}

impl core::fmt::Debug for TensorFileWriter {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TensorFileWriter")
            .field("destination", &self.destination)
            .field("tensors", &self.entries.len())
            .finish_non_exhaustive()
    }
}

impl TensorFileWriter {
    /// Starts a model file at `destination` (nothing appears there until
    /// [`TensorFileWriter::finish`]) whose chunks are spilled to a temporary file as they come:
    /// memory holds one tensor. The destination is checked now, so a refused output fails before
    /// any tensor is read.
    ///
    /// # Errors
    /// `Io` if the destination is refused ([`Destination::check`]) or the spill file cannot be
    /// created.
    pub fn new(
        destination: impl Into<Destination>,
        compression: envelope_core::Compression,
    ) -> Result<Self> {
        let mut writer = Self::with_memory_budget(destination, compression, 0)?;
        writer.chunks.spill = Some(Chunks::spill_file(&writer.chunks.scratch_dir)?);
        Ok(writer)
    }

    /// As [`TensorFileWriter::new`], but the stored chunks are held in memory while their total
    /// stays within `budget` bytes, and only the chunks after that are spilled: an output within
    /// the budget is written once, from memory (`apr quantize`, whose output is a fraction of its
    /// input, uses [`QUANTIZE_MEMORY_BUDGET`]). The file written is the same, byte for byte.
    ///
    /// # Errors
    /// `Io` if the destination is refused ([`Destination::check`]).
    pub fn with_memory_budget(
        destination: impl Into<Destination>,
        compression: envelope_core::Compression,
        budget: u64,
    ) -> Result<Self> {
        let destination = destination.into();
        destination.check()?;
        let scratch_dir = destination.scratch_dir()?;
        Ok(Self::with_chunks(
            destination,
            compression,
            Chunks {
                held: Vec::new(),
                held_bytes: 0,
                budget,
                spill: None,
                scratch_dir,
                placed: None,
            },
        ))
    }

    fn with_chunks(
        destination: Destination,
        compression: envelope_core::Compression,
        chunks: Chunks,
    ) -> Self {
        Self {
            destination,
            compression,
            chunks,
            entries: Vec::new(),
            names: std::collections::HashSet::new(),
            sizes: Vec::new(),
            checksums: Vec::new(),
            quantized: false,
        }
    }

    /// Adds the next tensor (compressed now, then spilled or held).
    ///
    /// # Errors
    /// `DuplicateName` for a duplicate name; `Io`.
    pub fn push(&mut self, tensor: &Tensor) -> Result<()> {
        self.check_name(&tensor.name)?;
        let stored = envelope_core::compression::compress(self.compression, tensor.data())?;
        self.store(tensor, stored)
    }

    /// [`TensorFileWriter::push`] of a tensor the writer may keep: an uncompressed chunk held in
    /// memory is the tensor's own buffer, not a copy.
    ///
    /// # Errors
    /// As [`TensorFileWriter::push`].
    pub fn push_owned(&mut self, tensor: Tensor) -> Result<()> {
        self.check_name(&tensor.name)?;
        if self.compression == envelope_core::Compression::None {
            let entry = self.tensor_entry(&tensor, tensor.data().len() as u64);
            self.keep(Cow::Owned(tensor.into_data()))?;
            self.entries.push(entry);
            Ok(())
        } else {
            let stored = envelope_core::compression::compress(self.compression, tensor.data())?;
            self.store(&tensor, stored)
        }
    }

    /// [`TensorFileWriter::push_owned`] of a tensor whose data's CRC-32C the caller already
    /// computed (`apr quantize` does, on every core, while the blocks are in cache). The chunk
    /// writer checks it again when the file is written.
    ///
    /// # Errors
    /// As [`TensorFileWriter::push`].
    pub(crate) fn push_owned_with_crc32c(&mut self, tensor: Tensor, crc32c: u32) -> Result<()> {
        if self.compression != envelope_core::Compression::None {
            return self.push_owned(tensor);
        }
        self.check_name(&tensor.name)?;
        let entry = self.tensor_entry(&tensor, tensor.data().len() as u64);
        self.keep_checked(Cow::Owned(tensor.into_data()), crc32c)?;
        self.entries.push(entry);
        Ok(())
    }

    /// Switches to placed mode when it applies: no chunk yet, no compression, and a destination
    /// that is a regular file or nothing yet (a device or FIFO is written in order). The output's
    /// temporary file is created now and every later chunk is written into it at its final
    /// offset: after the prefix that `planned` (the metadata the caller expects to pass to
    /// [`TensorFileWriter::finish`], the type not mattering) and one chunk per `sizes` entry give.
    /// If the metadata at `finish` comes out another length, the payload is copied once after the
    /// right prefix; the bytes are the same either way. Returns whether placed mode is on.
    ///
    /// # Errors
    /// `Io`; as [`ModelMetadata::encode`] and [`EnvelopeParts::placed_layout`].
    pub(crate) fn place(&mut self, planned: &ModelMetadata, sizes: &[u64]) -> Result<bool> {
        let placeable = self.entries.is_empty()
            && self.chunks.held.is_empty()
            && self.chunks.spill.is_none()
            && self.chunks.placed.is_none()
            && self.compression == envelope_core::Compression::None
            && matches!(
                self.destination.kind()?,
                output_file::Kind::Missing | output_file::Kind::RegularFile { .. }
            );
        if !placeable {
            return Ok(false);
        }
        let index = ChunkIndex::from_sizes(sizes.iter().map(|&size| (size, size, 1)))?;
        let mut parts = EnvelopeParts::new(Format::Model, 0);
        parts.metadata = Cow::Owned(planned.encode()?);
        let layout = parts.placed_layout(&index)?;
        let mut file = PendingFile::create(self.destination.clone())?;
        let out = file.positional(EARLY_SYNC)?;
        self.chunks.placed = Some(Placed {
            out,
            file,
            payload_offset: layout.payload_offset(),
            written: 0,
            crc32: crc32fast::Hasher::new(),
        });
        Ok(true)
    }

    /// In placed mode, where the next chunk goes: the output and the chunk's offset in it.
    pub(crate) fn next_placed_chunk(&self) -> Option<(&PositionalWriter, u64)> {
        let placed = self.chunks.placed.as_ref()?;
        Some((&placed.out, placed.payload_offset + placed.written))
    }

    /// Records the next tensor (`name`, `dtype`, `shape`) whose `stored_len` bytes the caller
    /// wrote at [`TensorFileWriter::next_placed_chunk`], with their CRC-32C and their CRC32
    /// (`crc32`, a hasher fed exactly those bytes in order).
    ///
    /// # Errors
    /// `DuplicateName`; `Usage` if the writer is not in placed mode.
    pub(crate) fn push_placed(
        &mut self,
        name: &str,
        (dtype, shape): (DType, &[u64]),
        stored_len: u64,
        (crc32c, crc32): (u32, &crc32fast::Hasher),
    ) -> Result<()> {
        self.check_name(name)?;
        let Some(placed) = &mut self.chunks.placed else {
            return Err(envelope_core::Error::InvalidArgument(
                "push_placed on a writer that is not in placed mode",
            )
            .into());
        };
        placed.written += stored_len;
        placed.crc32.combine(crc32);
        let entry = self.entry(name, dtype, shape, "", stored_len);
        if let Some(size) = self.sizes.last_mut() {
            size.0 = stored_len;
        }
        self.checksums.push(crc32c);
        self.entries.push(entry);
        Ok(())
    }

    fn check_name(&self, name: &str) -> Result<()> {
        if self.names.contains(name) {
            return Err(Error::DuplicateName {
                name: name.to_owned(),
            });
        }
        Ok(())
    }

    fn store(&mut self, tensor: &Tensor, stored: Cow<'_, [u8]>) -> Result<()> {
        let entry = self.tensor_entry(tensor, tensor.data().len() as u64);
        self.keep(stored)?;
        self.entries.push(entry);
        Ok(())
    }

    /// Records the directory entry and flags of a tensor whose data is `decoded` bytes long.
    fn entry(
        &mut self,
        name: &str,
        dtype: DType,
        shape: &[u64],
        quantizer: &str,
        decoded: u64,
    ) -> TensorEntry {
        self.quantized |= dtype.is_quantized();
        self.names.insert(name.to_owned());
        self.sizes.push((0, decoded, 1));
        TensorEntry {
            name: name.to_owned(),
            dtype: dtype.code(),
            shape: shape.to_vec(),
            quantizer: quantizer.to_owned(),
        }
    }

    /// [`Self::entry`] of `tensor`.
    fn tensor_entry(&mut self, tensor: &Tensor, decoded: u64) -> TensorEntry {
        self.entry(
            &tensor.name,
            tensor.dtype,
            &tensor.shape,
            &tensor.quantizer,
            decoded,
        )
    }

    /// Keeps the stored bytes of the chunk whose entry was just recorded.
    fn keep(&mut self, stored: Cow<'_, [u8]>) -> Result<()> {
        let crc = crc32c::crc32c(&stored);
        self.keep_checked(stored, crc)
    }

    /// [`Self::keep`] of bytes whose CRC-32C is `crc`.
    fn keep_checked(&mut self, stored: Cow<'_, [u8]>, crc: u32) -> Result<()> {
        if let Some(size) = self.sizes.last_mut() {
            size.0 = stored.len() as u64;
        }
        self.checksums.push(crc);
        self.chunks.keep(stored)
    }

    /// Writes the file atomically: metadata (card, tensor directory, `quantization`), the chunk
    /// index, then the chunks in order.
    ///
    /// # Errors
    /// `Io`, or the envelope writer's errors.
    pub fn finish(
        self,
        model_type: ModelType,
        card: &ModelCard,
        quantization: Option<QuantizationInfo>,
    ) -> Result<()> {
        self.finish_telling(model_type, card, quantization)
            .map(drop)
    }

    /// [`TensorFileWriter::finish`], saying how the file was written.
    pub(crate) fn finish_telling(
        mut self,
        model_type: ModelType,
        card: &ModelCard,
        quantization: Option<QuantizationInfo>,
    ) -> Result<Written> {
        let metadata = ModelMetadata {
            model_card: card.clone(),
            payload: PayloadKind::Tensors,
            tensors: std::mem::take(&mut self.entries),
            quantization,
        };
        let mut index = ChunkIndex::from_sizes(self.sizes.iter().copied())?;
        for (chunk, crc) in self.checksums.iter().enumerate() {
            index.set_stored_crc32c(chunk, *crc)?;
        }
        let mut parts = EnvelopeParts::new(Format::Model, model_type.id());
        parts.compression = self.compression;
        parts.quantized = self.quantized;
        parts.metadata = Cow::Owned(metadata.encode()?);
        let Chunks {
            held,
            spill,
            placed,
            ..
        } = self.chunks;
        if let Some(placed) = placed {
            return placed.finish(self.destination, &parts, &index);
        }
        let spill = spill
            .map(|spill| -> Result<File> {
                let mut spill = spill
                    .into_inner()
                    .map_err(|e| Error::from(e.into_error()))?;
                spill.seek(SeekFrom::Start(0))?;
                Ok(spill)
            })
            .transpose()?;
        let spilled = self.sizes.iter().zip(&metadata.tensors).skip(held.len());
        output_file::write(self.destination, |out| {
            output_file::with_early_sync(out, EARLY_SYNC, |out| {
                let mut writer = parts.begin_chunked(index, out)?;
                for chunk in &held {
                    writer.write_chunk(chunk)?;
                }
                if let Some(mut spill) = spill {
                    let mut buffer = Vec::new();
                    for ((stored, _, _), entry) in spilled {
                        buffer.resize(
                            usize::try_from(*stored).map_err(|_| Error::TooLargeForPlatform {
                                tensor: entry.name.clone(),
                            })?,
                            0,
                        );
                        spill.read_exact(&mut buffer)?;
                        writer.write_chunk(&buffer)?;
                    }
                }
                writer.finish()?;
                Ok(Written::Streamed)
            })
        })
    }
}

/// Bytes [`TensorFileWriter::finish`] writes between two requests to flush the output to disk:
/// the disk's write-back overlaps the rest of the writing ([`output_file::with_early_sync`]).
const EARLY_SYNC: usize = 16 << 20;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::QuantType;

    #[test]
    fn saved_model_opens_lazily_and_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.apr");
        let values: Vec<f32> = (0..256).map(|i| i as f32 / 7.0).collect();
        let model = TensorModel::new(vec![
            Tensor::from_f32("a", vec![8, 32], &values).unwrap(),
            Tensor::from_f32("b", vec![4], &values[..4]).unwrap(),
        ])
        .unwrap()
        .quantize(QuantType::Q4_1)
        .unwrap();
        for compression in [
            envelope_core::Compression::None,
            envelope_core::Compression::ZstdL3,
        ] {
            let options = SaveOptions {
                card: ModelCard::default(),
                compression,
            };
            save_tensors(&path, &model, ModelType::NeuralCustom, &options).unwrap();
            // Byte for byte what the in-memory writer produces.
            let in_memory =
                crate::save_tensors_to_bytes(&model, ModelType::NeuralCustom, &options).unwrap();
            assert_eq!(std::fs::read(&path).unwrap(), in_memory);
            assert_eq!(load_tensors(&path, ModelType::NeuralCustom).unwrap(), model);
            let file = open(&path).unwrap();
            assert_eq!(&file.tensor("b").unwrap(), model.tensor("b").unwrap());
        }
    }

    /// Whatever the memory budget, the writer writes the same bytes: everything held, everything
    /// spilled, and the first chunks held with the rest spilled.
    #[test]
    fn held_and_spilled_chunks_write_the_same_file() {
        let dir = tempfile::tempdir().unwrap();
        let values: Vec<f32> = (0..1024).map(|i| i as f32 / 5.0).collect();
        let tensors: Vec<Tensor> = (0..4)
            .map(|i| {
                Tensor::from_f32(format!("t{i}"), vec![256], &values[i * 256..][..256]).unwrap()
            })
            .collect();
        let model = TensorModel::new(tensors.clone()).unwrap();
        for compression in [
            envelope_core::Compression::None,
            envelope_core::Compression::ZstdL3,
        ] {
            let options = SaveOptions {
                card: ModelCard::default(),
                compression,
            };
            let expected =
                crate::save_tensors_to_bytes(&model, ModelType::NeuralCustom, &options).unwrap();
            for budget in [None, Some(0), Some(1500), Some(u64::MAX)] {
                let path = dir.path().join(format!("{compression:?}-{budget:?}.apr"));
                let mut writer = match budget {
                    None => TensorFileWriter::new(&path, compression),
                    Some(budget) => {
                        TensorFileWriter::with_memory_budget(&path, compression, budget)
                    }
                }
                .unwrap();
                for (i, tensor) in tensors.iter().enumerate() {
                    if i % 2 == 0 {
                        writer.push(tensor).unwrap();
                    } else {
                        writer.push_owned(tensor.clone()).unwrap();
                    }
                }
                writer
                    .finish(ModelType::NeuralCustom, &ModelCard::default(), None)
                    .unwrap();
                assert_eq!(std::fs::read(&path).unwrap(), expected, "budget {budget:?}");
            }
        }
    }

    /// The export of a saved file streams from it, and replaces an earlier export (shards
    /// included) but never a directory holding anything else.
    #[test]
    fn safetensors_export_from_a_file_replaces_only_an_earlier_export() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.apr");
        let values: Vec<f32> = (0..512).map(|i| i as f32 / 3.0).collect();
        let model = TensorModel::new(vec![
            Tensor::from_f32("model.embed_tokens.weight", vec![8, 32], &values[..256]).unwrap(),
            Tensor::from_f32("lm_head.weight", vec![8, 32], &values[256..]).unwrap(),
        ])
        .unwrap();
        let mut card = ModelCard::default();
        card.source_files
            .0
            .insert("config.json".into(), br#"{"dtype": "float32"}"#.to_vec());
        let options = SaveOptions {
            card,
            compression: envelope_core::Compression::ZstdL3,
        };
        save_tensors(&path, &model, ModelType::NeuralCustom, &options).unwrap();
        let file = open(&path).unwrap();
        let out = dir.path().join("export");
        let sharded = safetensors::SafeTensorsOptions {
            max_shard_size: 1024,
            ..safetensors::SafeTensorsOptions::default()
        };
        let layout = export_safetensors_from(&out, &file, &sharded).unwrap();
        assert_eq!(layout, safetensors::Layout::Transformers);
        let names = |dir: &Path| {
            let mut names: Vec<String> = std::fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect();
            names.sort();
            names
        };
        assert_eq!(
            names(&out),
            [
                "config.json",
                "model-00001-of-00002.safetensors",
                "model-00002-of-00002.safetensors",
                "model.safetensors.index.json"
            ]
        );
        // Replaced whole: no shard of the earlier export is left beside the single file.
        export_safetensors_from(&out, &file, &safetensors::SafeTensorsOptions::default()).unwrap();
        assert_eq!(names(&out), ["config.json", "model.safetensors"]);
        let back = import_safetensors(out.join("model.safetensors")).unwrap();
        for t in &model.tensors {
            assert_eq!(back.tensor(&t.name), Some(t));
        }
        std::fs::write(out.join("notes.txt"), b"mine").unwrap();
        let error =
            export_safetensors_from(&out, &file, &safetensors::SafeTensorsOptions::default())
                .unwrap_err();
        assert_eq!(error.signal(), envelope_core::Signal::Io, "{error}");
        assert_eq!(std::fs::read(out.join("notes.txt")).unwrap(), b"mine");
    }
}
