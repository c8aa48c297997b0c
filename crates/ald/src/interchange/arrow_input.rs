//! Arrow IPC inputs, file (`.arrow`) and stream (`.arrows`) formats, read the way the `.ald`
//! payload is ([`crate::ipc`]): every message's framing, body length and buffer bounds are
//! checked against the bytes actually present before Arrow's decoder sees it, no buffer is sized
//! by a declared length the input cannot hold, and what remains of Arrow's own panics is caught
//! ([`super::guard`]).
//!
//! `arrow_ipc::reader::FileReader` is not used: it allocates the footer and every block at the
//! size the file declares (a 2 GiB footer length in a 100-byte file is a 2 GiB allocation) and
//! slices buffers without the checks above.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_buffer::Buffer;
use arrow_ipc::reader::{FileDecoder, StreamDecoder};
use arrow_ipc::{Block, MessageHeader};
use arrow_schema::{ArrowError, SchemaRef};
use bytes::Bytes;

use super::guard::guarded;
use super::input::{ByteProgress, Origin, ReadStage};
use super::{FileKind, arrow_error, foreign};
use crate::Result;
use crate::ipc::{END_OF_STREAM, PREFIX_LEN, checked_batch_message, message_metadata_len};

/// `ARROW1`, at both ends of an IPC file.
const MAGIC: &[u8; 6] = b"ARROW1";
/// The magic padded to 8 bytes, before the first message.
const HEADER_LEN: u64 = 8;
/// The footer length (i32) and the magic, at the end.
const TRAILER_LEN: u64 = 10;

/// Random access to an input's bytes.
enum Bytesource {
    File(File),
    Memory(Bytes),
}

impl Bytesource {
    fn open(origin: &Origin) -> Result<(Self, u64)> {
        let source = match origin {
            Origin::File(path) => Self::File(File::open(path)?),
            Origin::Memory(bytes) => Self::Memory(bytes.clone()),
        };
        Ok((source, origin.len()?))
    }

    /// `len` bytes at `offset`; callers have checked the range lies inside the input.
    fn range(&mut self, offset: u64, len: u64) -> Result<Buffer> {
        match self {
            Self::File(file) => {
                file.seek(SeekFrom::Start(offset))?;
                let mut bytes = vec![0; usize::try_from(len).map_err(|_| too_large())?];
                file.read_exact(&mut bytes)?;
                Ok(Buffer::from_vec(bytes))
            }
            Self::Memory(bytes) => {
                let start = usize::try_from(offset).map_err(|_| too_large())?;
                let end = usize::try_from(offset + len).map_err(|_| too_large())?;
                let slice = bytes.get(start..end).ok_or_else(too_large)?;
                Ok(Buffer::from(bytes.slice_ref(slice)))
            }
        }
    }
}

fn too_large() -> crate::Error {
    foreign(FileKind::ArrowIpc, "a range past the end of the file")
}

/// An Arrow IPC file, its footer read and checked.
pub(crate) struct IpcFile {
    source: Bytesource,
    decoder: FileDecoder,
    schema: SchemaRef,
    batches: Vec<Block>,
    next: usize,
    progress: Option<ByteProgress>,
}

impl IpcFile {
    /// Opens the file: its magic, footer, schema and every dictionary (blocks are read one at a
    /// time, each checked to lie between the header and the footer).
    ///
    /// # Errors
    /// `InvalidFormat` naming Arrow IPC; `Io`.
    pub(crate) fn open(origin: &Origin, progress: Option<&ByteProgress>) -> Result<Self> {
        let kind = FileKind::ArrowIpc;
        let (mut source, len) = Bytesource::open(origin)?;
        if len < HEADER_LEN + TRAILER_LEN {
            return Err(foreign(kind, "too short for an Arrow IPC file"));
        }
        if source.range(0, 6)?.as_slice() != MAGIC {
            return Err(foreign(kind, "no ARROW1 magic at the start"));
        }
        let trailer = source.range(len - TRAILER_LEN, TRAILER_LEN)?;
        let (footer_len, magic) = trailer.as_slice().split_at(4);
        if magic != MAGIC {
            return Err(foreign(kind, "no ARROW1 magic at the end"));
        }
        let footer_len = u64::from(u32::from_le_bytes(
            footer_len.try_into().unwrap_or_default(),
        ));
        // The footer lies between the header and the trailer.
        let body_end = (len - TRAILER_LEN)
            .checked_sub(footer_len)
            .filter(|end| *end >= HEADER_LEN)
            .ok_or_else(|| foreign(kind, "the footer length runs past the start of the file"))?;
        let footer_bytes = source.range(body_end, footer_len)?;
        let (schema, dictionaries, batches, version) = guarded(kind.name(), || {
            let footer = arrow_ipc::root_as_footer(footer_bytes.as_slice()).map_err(|error| {
                foreign(
                    kind,
                    format!("the footer is not a Footer flatbuffer: {error}"),
                )
            })?;
            let ipc_schema = footer
                .schema()
                .ok_or_else(|| foreign(kind, "the footer has no schema"))?;
            if !ipc_schema.endianness().equals_to_target_endianness() {
                return Err(foreign(
                    kind,
                    "big-endian data, which this reader does not read",
                ));
            }
            let schema = arrow_ipc::convert::try_fb_to_schema(ipc_schema)
                .map_err(|error| arrow_error(kind, error))?;
            let dictionaries: Vec<Block> = footer
                .dictionaries()
                .map(|list| list.iter().copied().collect())
                .unwrap_or_default();
            let batches: Vec<Block> = footer
                .recordBatches()
                .map(|list| list.iter().copied().collect())
                .unwrap_or_default();
            Ok((Arc::new(schema), dictionaries, batches, footer.version()))
        })?;
        for block in dictionaries.iter().chain(&batches) {
            check_block(block, body_end)?;
        }
        // Blocks do not overlap, so reading every block reads each byte at most once (a footer
        // listing the whole file 10,000 times would otherwise cost 10,000 reads of it).
        let mut spans: Vec<(u64, u64)> = dictionaries
            .iter()
            .chain(&batches)
            .filter_map(|block| Some((u64::try_from(block.offset()).ok()?, block_end(block)?)))
            .collect();
        spans.sort_unstable();
        if spans.windows(2).any(|pair| pair[1].0 < pair[0].1) {
            return Err(foreign(kind, "two blocks of the footer overlap"));
        }
        let mut decoder = FileDecoder::new(Arc::clone(&schema), version);
        for block in &dictionaries {
            let bytes = read_block(&mut source, block)?;
            guarded(kind.name(), || {
                decoder
                    .read_dictionary(block, &bytes)
                    .map_err(|error| arrow_error(kind, error))
            })?;
        }
        Ok(Self {
            source,
            decoder,
            schema,
            batches,
            next: 0,
            progress: progress.cloned(),
        })
    }

    /// The file's schema.
    pub(crate) fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The next record batch.
    ///
    /// # Errors
    /// `InvalidFormat` naming Arrow IPC; `Io`.
    pub(crate) fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        let kind = FileKind::ArrowIpc;
        while let Some(block) = self.batches.get(self.next).copied() {
            self.next += 1;
            let bytes = read_block(&mut self.source, &block)?;
            if let Some(progress) = &self.progress {
                progress.report(ReadStage::Reading, block_end(&block).unwrap_or(0));
            }
            let decoder = &self.decoder;
            let batch = guarded(kind.name(), || {
                decoder
                    .read_record_batch(&block, &bytes)
                    .map_err(|error| arrow_error(kind, error))
            })?;
            if let Some(batch) = batch {
                return Ok(Some(batch));
            }
        }
        Ok(None)
    }
}

fn block_end(block: &Block) -> Option<u64> {
    let offset = u64::try_from(block.offset()).ok()?;
    let meta = u64::try_from(block.metaDataLength()).ok()?;
    let body = u64::try_from(block.bodyLength()).ok()?;
    offset.checked_add(meta)?.checked_add(body)
}

/// A block lies between the header and the footer, and its message's framing and buffers are
/// checked (as for `.ald` payload messages) when it is read.
fn check_block(block: &Block, body_end: u64) -> Result<()> {
    let kind = FileKind::ArrowIpc;
    let offset = u64::try_from(block.offset()).ok();
    let meta = u64::try_from(block.metaDataLength()).ok();
    let inside = offset.is_some_and(|offset| offset >= HEADER_LEN)
        && meta.is_some_and(|meta| meta >= PREFIX_LEN as u64)
        && block_end(block).is_some_and(|end| end <= body_end);
    if inside {
        Ok(())
    } else {
        Err(foreign(
            kind,
            "a block outside the space between header and footer",
        ))
    }
}

fn read_block(source: &mut Bytesource, block: &Block) -> Result<Buffer> {
    let kind = FileKind::ArrowIpc;
    let (Ok(offset), Some(end), Ok(meta)) = (
        u64::try_from(block.offset()),
        block_end(block),
        u64::try_from(block.metaDataLength()),
    ) else {
        return Err(foreign(kind, "a block with a negative offset or length"));
    };
    let bytes = source.range(offset, end - offset)?;
    let body_len = end - offset - meta;
    let metadata = bytes
        .as_slice()
        .get(..usize::try_from(meta).map_err(|_| too_large())?)
        .ok_or_else(too_large)?;
    let fault = |reason: &'static str| foreign(kind, reason);
    let flatbuffer_len = message_metadata_len(metadata, meta - PREFIX_LEN as u64)
        .map_err(fault)?
        .ok_or_else(|| fault("an end-of-stream marker where a block's message should be"))?;
    let flatbuffer = &metadata
        [PREFIX_LEN..PREFIX_LEN + usize::try_from(flatbuffer_len).map_err(|_| too_large())?];
    let message = checked_batch_message(flatbuffer, body_len).map_err(fault)?;
    if message.compressed {
        return Err(fault(
            "Arrow IPC body compression (LZ4 or ZSTD buffers), which this build does not read; write the file uncompressed",
        ));
    }
    Ok(bytes)
}

/// An Arrow IPC stream (`.arrows`): a schema message, then dictionary and record batch messages,
/// then (usually) the end-of-stream marker.
pub(crate) struct IpcStream {
    reader: Box<dyn std::io::BufRead + Send>,
    /// Bytes of the input not yet read.
    remaining: u64,
    decoder: StreamDecoder,
    schema: SchemaRef,
    ready: VecDeque<RecordBatch>,
    ended: bool,
}

impl IpcStream {
    /// Opens the stream and reads its schema message.
    ///
    /// # Errors
    /// `InvalidFormat` naming Arrow IPC; `Io`.
    pub(crate) fn open(origin: &Origin, progress: Option<&ByteProgress>) -> Result<Self> {
        let kind = FileKind::ArrowStream;
        let remaining = origin.len()?;
        let reader = origin.reader(ReadStage::Reading, progress)?;
        let mut stream = Self {
            reader,
            remaining,
            decoder: StreamDecoder::new(),
            schema: Arc::new(arrow_schema::Schema::empty()),
            ready: VecDeque::new(),
            ended: false,
        };
        let (mut message, header) = stream
            .read_message()?
            .ok_or_else(|| foreign(kind, "no schema message"))?;
        if header != MessageHeader::Schema {
            return Err(foreign(kind, "the first message is not a schema"));
        }
        stream.feed(&mut message)?;
        // A message without a body is acted on when the next bytes arrive.
        stream.advance()?;
        stream.schema = stream
            .decoder
            .schema()
            .ok_or_else(|| foreign(kind, "the schema message cannot be read"))?;
        Ok(stream)
    }

    /// The stream's schema.
    pub(crate) fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Reads one message (prefix, metadata, body), checked before Arrow sees it; `None` at the
    /// end-of-stream marker or the end of the input.
    fn read_message(&mut self) -> Result<Option<(Buffer, MessageHeader)>> {
        let kind = FileKind::ArrowStream;
        let fault = |reason: &'static str| foreign(kind, reason);
        if self.remaining == 0 {
            return Ok(None);
        }
        if self.remaining < PREFIX_LEN as u64 {
            return Err(fault("bytes after the last message that are not a message"));
        }
        let mut prefix = [0u8; PREFIX_LEN];
        self.reader.read_exact(&mut prefix)?;
        self.remaining -= PREFIX_LEN as u64;
        let Some(metadata_len) = message_metadata_len(&prefix, self.remaining).map_err(fault)?
        else {
            return Ok(None);
        };
        let mut message = prefix.to_vec();
        self.append(&mut message, metadata_len)?;
        let flatbuffer = &message[PREFIX_LEN..];
        // The flatbuffers verifier's error says where the flatbuffer breaks; kept as the cause
        // the way Arrow's own reader keeps it (as an `ArrowError::ParseError`), since its type
        // belongs to a crate this one does not depend on.
        let header = arrow_ipc::root_as_message(flatbuffer)
            .map_err(|error| crate::Error::Foreign {
                format: kind.name(),
                reason: "a message whose metadata is not a Message flatbuffer".into(),
                cause: Some(ArrowError::ParseError(error.to_string()).into()),
            })?
            .header_type();
        let body_len = if header == MessageHeader::Schema {
            0
        } else {
            let checked = checked_batch_message(flatbuffer, self.remaining).map_err(fault)?;
            if checked.compressed {
                return Err(fault(
                    "Arrow IPC body compression (LZ4 or ZSTD buffers), which this build does not read; write the stream uncompressed",
                ));
            }
            checked.body_len
        };
        self.append(&mut message, body_len)?;
        Ok(Some((Buffer::from_vec(message), header)))
    }

    /// Appends `len` bytes, which `read_message` has checked remain in the input.
    fn append(&mut self, message: &mut Vec<u8>, len: u64) -> Result<()> {
        let len_usize = usize::try_from(len).map_err(|_| too_large())?;
        let start = message.len();
        message.resize(start + len_usize, 0);
        self.reader.read_exact(&mut message[start..])?;
        self.remaining -= len;
        Ok(())
    }

    /// Hands `message` to the decoder, keeping the batches it completes.
    fn feed(&mut self, message: &mut Buffer) -> Result<()> {
        let kind = FileKind::ArrowStream;
        while !message.is_empty() {
            let before = message.len();
            let decoder = &mut self.decoder;
            let batch = guarded(kind.name(), || {
                decoder
                    .decode(message)
                    .map_err(|error| arrow_error(kind, error))
            })?;
            match batch {
                Some(batch) => self.ready.push_back(batch),
                None if message.len() == before => {
                    return Err(foreign(kind, "a message the decoder cannot read"));
                }
                None => {}
            }
        }
        Ok(())
    }

    /// The next record batch.
    ///
    /// # Errors
    /// `InvalidFormat` naming Arrow IPC; `Io`.
    pub(crate) fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        while self.ready.is_empty() && !self.ended {
            self.advance()?;
        }
        Ok(self.ready.pop_front())
    }

    /// Feeds the next message to the decoder, or ends the stream.
    fn advance(&mut self) -> Result<()> {
        let kind = FileKind::ArrowStream;
        if self.ended {
            return Ok(());
        }
        match self.read_message()? {
            Some((mut message, header)) => {
                if header == MessageHeader::Schema {
                    return Err(foreign(kind, "a second schema message"));
                }
                self.feed(&mut message)
            }
            None => {
                // The marker completes a message still waiting for bytes (the schema, a
                // zero-row batch), then ends the decoder.
                self.ended = true;
                let mut end = Buffer::from(END_OF_STREAM.as_slice());
                let decoder = &mut self.decoder;
                let last = guarded(kind.name(), || {
                    let mut last = Vec::new();
                    while !end.is_empty() {
                        let before = end.len();
                        let batch = decoder
                            .decode(&mut end)
                            .map_err(|error| arrow_error(kind, error))?;
                        last.extend(batch);
                        if end.len() == before {
                            break;
                        }
                    }
                    decoder.finish().map_err(|error| arrow_error(kind, error))?;
                    Ok(last)
                })?;
                self.ready.extend(last);
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{ArrayRef, Int64Array};

    /// An Arrow IPC file of one batch whose footer lists that batch's block `copies` times.
    fn file_listing_the_batch(copies: usize) -> Vec<u8> {
        let batch = RecordBatch::try_from_iter([(
            "n",
            Arc::new(Int64Array::from(vec![1, 2, 3])) as ArrayRef,
        )])
        .unwrap();
        let mut bytes = Vec::new();
        let mut writer =
            arrow_ipc::writer::FileWriter::try_new(&mut bytes, &batch.schema()).unwrap();
        writer.write(&batch).unwrap();
        writer.finish().unwrap();
        drop(writer);
        let footer_len =
            u32::from_le_bytes(bytes[bytes.len() - 10..bytes.len() - 6].try_into().unwrap());
        let body_end = bytes.len() - 10 - footer_len as usize;
        let footer = arrow_ipc::root_as_footer(&bytes[body_end..bytes.len() - 10]).unwrap();
        let block = footer.recordBatches().unwrap().get(0);
        let mut builder = flatbuffers::FlatBufferBuilder::new();
        let schema = arrow_ipc::convert::IpcSchemaEncoder::new()
            .schema_to_fb_offset(&mut builder, &batch.schema());
        let blocks = builder.create_vector(&vec![block; copies]);
        let footer = arrow_ipc::Footer::create(
            &mut builder,
            &arrow_ipc::FooterArgs {
                version: arrow_ipc::MetadataVersion::V5,
                schema: Some(schema),
                dictionaries: None,
                recordBatches: Some(blocks),
                custom_metadata: None,
            },
        );
        builder.finish(footer, None);
        let mut file = bytes[..body_end].to_vec();
        file.extend_from_slice(builder.finished_data());
        file.extend_from_slice(
            &u32::try_from(builder.finished_data().len())
                .unwrap()
                .to_le_bytes(),
        );
        file.extend_from_slice(MAGIC);
        file
    }

    #[test]
    fn a_footer_listing_a_block_twice_is_refused() {
        let rows = |bytes: Vec<u8>| -> Result<usize> {
            let mut file = IpcFile::open(&Origin::Memory(Bytes::from(bytes)), None)?;
            let mut rows = 0;
            while let Some(batch) = file.next_batch()? {
                rows += batch.num_rows();
            }
            Ok(rows)
        };
        assert_eq!(rows(file_listing_the_batch(1)).unwrap(), 3);
        let error = rows(file_listing_the_batch(2)).unwrap_err();
        assert!(error.to_string().contains("overlap"), "{error}");
    }
}
