//! Arrow IPC encoding of the schema section, the payload and streaming chunks (docs/ald.md §4-6).
//!
//! One rule for every file: the Arrow IPC *stream* of the dataset is
//! `schema section ‖ decoded payload ‖ end-of-stream marker`. The schema message is stored once,
//! in the schema section, so `schema` and `inspect` never touch the payload; the payload holds
//! only dictionary and record batch messages. A STREAMING file's decoded chunks, concatenated,
//! are exactly such a payload, and each chunk alone decodes after the schema message, because
//! every chunk carries the dictionaries its batches use.
//!
//! Two decoders read payload messages, both after the same framing checks: Arrow's
//! `StreamDecoder` for every column ([`decode_batches`], [`decode_from_reader`]), and, for a
//! column projection ([`decode_batches_projected`], docs/ald.md §6.2), Arrow's
//! `RecordBatchDecoder::with_projection` and `read_dictionary` message by message, which skip the
//! other columns' buffers and the dictionaries only they use.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_buffer::Buffer;
use arrow_ipc::reader::{RecordBatchDecoder, StreamDecoder};
use arrow_ipc::writer::StreamEncoder;
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};

use envelope_core::compression::PayloadReader;
use envelope_core::{Error as EnvelopeError, FormatError, Section};

use crate::{Error, Result};

/// The IPC end-of-stream marker: continuation token then a zero length.
pub const END_OF_STREAM: [u8; 8] = [0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0];

/// The continuation token that starts every encapsulated IPC message.
const CONTINUATION: [u8; 4] = [0xFF; 4];

fn malformed(section: Section, reason: &'static str) -> Error {
    FormatError::MalformedBlock { section, reason }.into()
}

fn encode_failed(error: ArrowError) -> Error {
    Error::unencodable("the table cannot be encoded as Arrow IPC")(error)
}

fn concat(buffers: Vec<Buffer>, out: &mut Vec<u8>) {
    for buffer in buffers {
        out.extend_from_slice(buffer.as_slice());
    }
}

/// The schema section: the IPC-encapsulated schema message of `schema`.
///
/// # Errors
/// `Usage` if Arrow cannot encode the schema or the message is larger than the header's u16
/// `schema_size` allows (65,535 bytes).
pub fn schema_message(schema: &Schema) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    concat(
        StreamEncoder::try_new(schema)
            .and_then(StreamEncoder::finish)
            .map_err(encode_failed)?,
        &mut bytes,
    );
    bytes.truncate(bytes.len().saturating_sub(END_OF_STREAM.len()));
    if bytes.len() > usize::from(u16::MAX) {
        return Err(EnvelopeError::SectionTooLarge {
            section: Section::Schema,
            size: bytes.len() as u64,
            max: u64::from(u16::MAX),
        }
        .into());
    }
    Ok(bytes)
}

/// Parses the schema section.
///
/// # Errors
/// `InvalidFormat` unless the section is exactly one encapsulated IPC schema message.
pub fn parse_schema(section: &[u8]) -> Result<SchemaRef> {
    let bad = || malformed(Section::Schema, "not exactly one Arrow IPC schema message");
    let mut decoder = decoder_after_schema(section)?;
    // A message with an empty body is acted on when the next bytes arrive: the end-of-stream
    // marker makes the decoder read it, and proves no body was left waiting for payload bytes.
    match decode_guarded(&mut decoder, &mut Buffer::from(END_OF_STREAM.as_slice())) {
        Ok(None) if decoder.finish().is_ok() => decoder.schema().ok_or_else(bad),
        _ => Err(bad()),
    }
}

/// A decoder that has consumed the schema section, ready for payload messages. Callers have
/// checked the section with [`parse_schema`] (every load path does, before the payload).
fn decoder_after_schema(section: &[u8]) -> Result<StreamDecoder> {
    let bad = || malformed(Section::Schema, "not exactly one Arrow IPC schema message");
    // docs/ald.md §4: 0xFFFFFFFF, an i32 length, then that many bytes of flatbuffer + padding,
    // and nothing else. Checked here so the section cannot smuggle a record batch.
    let (marker, rest) = section.split_first_chunk::<4>().ok_or_else(bad)?;
    let (length, body) = rest.split_first_chunk::<4>().ok_or_else(bad)?;
    let length = u32::from_le_bytes(*length);
    if *marker != CONTINUATION || length == 0 || u64::from(length) != body.len() as u64 {
        return Err(bad());
    }
    let mut decoder = StreamDecoder::new();
    let mut buffer = Buffer::from(section);
    match decode_guarded(&mut decoder, &mut buffer) {
        Ok(None) if buffer.is_empty() => Ok(decoder),
        _ => Err(bad()),
    }
}

/// Encodes `batches` as payload messages (no schema message, no end-of-stream marker), appending
/// to `out`. All batches must have `schema`.
///
/// # Errors
/// `Usage` if Arrow cannot encode a batch.
pub fn encode_batches<'b>(
    schema: &Schema,
    batches: impl IntoIterator<Item = &'b RecordBatch>,
    out: &mut Vec<u8>,
) -> Result<()> {
    encode_batches_with(schema, batches, out, |_| {})
}

/// As [`encode_batches`], handing `appended` the bytes of each batch (with its dictionaries) right
/// after they are written, while they are still in the processor's cache (to checksum them there).
pub fn encode_batches_with<'b>(
    schema: &Schema,
    batches: impl IntoIterator<Item = &'b RecordBatch>,
    out: &mut Vec<u8>,
    mut appended: impl FnMut(&[u8]),
) -> Result<()> {
    let schema_len = schema_message(schema)?.len();
    let mut encoder = StreamEncoder::try_new(schema).map_err(encode_failed)?;
    let mut first = true;
    for batch in batches {
        let mut buffers = encoder.encode(batch).map_err(encode_failed)?;
        if first {
            // The first call puts the schema message in front; it lives in the schema section.
            let mut skip = schema_len;
            buffers.retain_mut(|buffer| {
                if skip == 0 {
                    return true;
                }
                let dropped = skip.min(buffer.len());
                skip -= dropped;
                if dropped < buffer.len() {
                    *buffer = buffer.slice(dropped);
                    true
                } else {
                    false
                }
            });
            first = false;
        }
        let start = out.len();
        concat(buffers, out);
        appended(&out[start..]);
    }
    Ok(())
}

/// Encodes one STREAMING chunk: its rows as a single record batch message (after the dictionary
/// messages it needs), so readers see one batch per chunk however the writer received the rows.
///
/// # Errors
/// `Usage` if Arrow cannot encode the rows.
pub fn encode_chunk(schema: &SchemaRef, rows: &[RecordBatch], out: &mut Vec<u8>) -> Result<()> {
    if let [single] = rows {
        return encode_batches(schema, [single], out);
    }
    let joined = arrow_select::concat::concat_batches(schema, rows).map_err(encode_failed)?;
    encode_batches(schema, [&joined], out)
}

/// Decodes a payload (or one chunk, or several consecutive chunks) after the schema section.
///
/// # Errors
/// `InvalidFormat` if the messages are not dictionary and record batch messages of the schema,
/// are cut short, or fail Arrow's validation.
pub fn decode_batches(schema_section: &[u8], payload: Buffer) -> Result<Vec<RecordBatch>> {
    let mut decoder = decoder_after_schema(schema_section)?;
    let mut batches = Vec::new();
    let mut at = 0usize;
    while at < payload.len() {
        let len = message_len(&payload.as_slice()[at..])?;
        let mut message = payload.slice_with_length(at, len);
        while !message.is_empty() {
            decode_message(&mut decoder, &mut message, &mut batches)?;
        }
        at += len;
    }
    end_of_stream(decoder, batches)
}

/// The length of the encapsulated message at the start of `rest` (prefix, metadata and body),
/// after the checks every payload message gets before Arrow's decoder sees it: framing, lengths
/// within `rest`, alignment, a record or dictionary batch whose buffers lie inside its body, no
/// IPC body compression.
fn message_len(rest: &[u8]) -> Result<usize> {
    let after_prefix = (rest.len() as u64).saturating_sub(PREFIX_LEN as u64);
    let metadata_len = metadata_len(rest, after_prefix)?;
    let metadata_end = PREFIX_LEN + to_usize(metadata_len)?;
    let body_len = checked_body_len(
        &rest[PREFIX_LEN..metadata_end],
        (rest.len() - metadata_end) as u64,
    )?;
    Ok(metadata_end + to_usize(body_len)?)
}

/// As [`decode_batches`], keeping only the columns of `projection` (indices into the schema
/// section's fields, in the order wanted, each at most once): the other columns' buffers are
/// skipped, not decoded or validated, and the dictionaries only they use are not decoded
/// (docs/ald.md §6.2). Every message is framed and checked as by [`decode_batches`]; each
/// batch has the projected schema and the row count its message declares (an empty projection
/// gives batches of rows and no columns).
///
/// # Errors
/// `Usage` ([`Error::NoSuchColumn`], [`Error::DuplicateColumn`]) for a projection the schema does
/// not allow, before any payload byte is read; otherwise as [`decode_batches`].
pub fn decode_batches_projected(
    schema_section: &[u8],
    payload: Buffer,
    projection: &[usize],
) -> Result<Vec<RecordBatch>> {
    let mut decoder = ProjectedDecoder::new(schema_section, projection)?;
    let mut batches = Vec::new();
    let mut at = 0usize;
    while at < payload.len() {
        let len = message_len(&payload.as_slice()[at..])?;
        let message = payload.slice_with_length(at, len);
        if let Some(batch) = decoder.decode(&message)? {
            batches.push(batch);
        }
        at += len;
    }
    Ok(batches)
}

/// `Usage` unless `projection` names columns of `schema`, each at most once.
///
/// # Errors
/// [`Error::NoSuchColumn`] for an index past the last column, [`Error::DuplicateColumn`] for an
/// index given twice.
pub fn check_projection(schema: &Schema, projection: &[usize]) -> Result<()> {
    let columns = schema.fields().len();
    let mut seen = vec![false; columns];
    for &index in projection {
        let slot = seen
            .get_mut(index)
            .ok_or(Error::NoSuchColumn { index, columns })?;
        if core::mem::replace(slot, true) {
            return Err(Error::DuplicateColumn { index });
        }
    }
    Ok(())
}

/// Decodes payload messages one at a time with a column projection, through Arrow's own
/// `RecordBatchDecoder::with_projection` and `read_dictionary` (Arrow's `StreamDecoder`, which
/// the whole-table path uses, has no projection).
struct ProjectedDecoder {
    /// The schema section's schema, with the dictionary ids Arrow's decoder looks dictionaries
    /// up by.
    schema: SchemaRef,
    projection: Vec<usize>,
    /// The dictionary ids the projected columns use (at any depth, dictionaries inside
    /// dictionary values included): only these dictionary messages are decoded.
    wanted: HashSet<i64>,
    /// Every dictionary id of the schema: a dictionary message of another id is refused, as the
    /// whole-table path refuses it, whether or not it is wanted.
    known: HashSet<i64>,
    dictionaries: HashMap<i64, ArrayRef>,
}

impl ProjectedDecoder {
    fn new(schema_section: &[u8], projection: &[usize]) -> Result<Self> {
        let schema = parse_schema(schema_section)?;
        check_projection(&schema, projection)?;
        let mut wanted = HashSet::new();
        let mut known = HashSet::new();
        for (index, field) in schema.fields().iter().enumerate() {
            let mut ids = HashSet::new();
            dictionary_ids(field, &mut ids);
            if projection.contains(&index) {
                wanted.extend(ids.iter().copied());
            }
            known.extend(ids);
        }
        Ok(Self {
            schema,
            projection: projection.to_vec(),
            wanted,
            known,
            dictionaries: HashMap::new(),
        })
    }

    /// Decodes one whole encapsulated `message` (checked by [`message_len`]): a record batch,
    /// projected, or `None` for a dictionary batch (decoded if a projected column uses it).
    fn decode(&mut self, message: &Buffer) -> Result<Option<RecordBatch>> {
        let metadata_end = PREFIX_LEN + to_usize(metadata_len(message, message.len() as u64)?)?;
        let body = message.slice(metadata_end);
        let metadata = arrow_ipc::root_as_message(&message.as_slice()[PREFIX_LEN..metadata_end])
            .map_err(|_| {
                malformed(
                    Section::Payload,
                    "an Arrow IPC message whose metadata is not a Message flatbuffer",
                )
            })?;
        let version = metadata.version();
        if let Some(batch) = metadata.header_as_record_batch() {
            let decoded = guarded(|| {
                RecordBatchDecoder::try_new(
                    &body,
                    batch,
                    Arc::clone(&self.schema),
                    &self.dictionaries,
                    &version,
                )?
                .with_projection(Some(&self.projection))
                .with_require_alignment(false)
                .read_record_batch()
            })
            .map_err(not_record_batches)?;
            return Ok(Some(decoded));
        }
        let dictionary = metadata.header_as_dictionary_batch().ok_or_else(|| {
            malformed(
                Section::Payload,
                "an Arrow IPC message the decoder cannot read",
            )
        })?;
        let id = dictionary.id();
        if !self.known.contains(&id) {
            return Err(not_record_batches(ArrowError::InvalidArgumentError(
                format!("dictionary id {id} not found in schema"),
            )));
        }
        if self.wanted.contains(&id) {
            let (schema, dictionaries) = (&self.schema, &mut self.dictionaries);
            guarded(|| {
                arrow_ipc::reader::read_dictionary(
                    &body,
                    dictionary,
                    schema,
                    dictionaries,
                    &version,
                )
            })
            .map_err(not_record_batches)?;
        }
        Ok(None)
    }
}

/// Every dictionary id `field` uses, itself and at any depth below it (in struct, list, map,
/// union and run-end children, and in dictionary values), by the ids the schema section gave
/// them.
fn dictionary_ids(field: &Field, ids: &mut HashSet<i64>) {
    // Arrow's IPC reader finds a dictionary column's values by this id (`Field::dict_id`, which
    // arrow-schema deprecates but arrow-ipc 60 still decodes by): the same ids decide which
    // dictionary messages a projection needs.
    #[expect(
        deprecated,
        reason = "arrow-ipc 60 looks dictionaries up by Field::dict_id; the projection must agree with it"
    )]
    let id = field.dict_id();
    if let Some(id) = id {
        ids.insert(id);
    }
    data_type_dictionary_ids(field.data_type(), ids);
}

fn data_type_dictionary_ids(data_type: &DataType, ids: &mut HashSet<i64>) {
    match data_type {
        DataType::Struct(fields) => fields.iter().for_each(|field| dictionary_ids(field, ids)),
        DataType::Union(fields, _) => fields
            .iter()
            .for_each(|(_, field)| dictionary_ids(field, ids)),
        DataType::List(field)
        | DataType::LargeList(field)
        | DataType::ListView(field)
        | DataType::LargeListView(field)
        | DataType::FixedSizeList(field, _)
        | DataType::Map(field, _) => dictionary_ids(field, ids),
        DataType::RunEndEncoded(run_ends, values) => {
            dictionary_ids(run_ends, ids);
            dictionary_ids(values, ids);
        }
        DataType::Dictionary(_, values) => data_type_dictionary_ids(values, ids),
        _ => {}
    }
}

/// `decode()`, with a panic of Arrow's decoder turned into an error (as [`decode_guarded`]).
fn guarded<T>(
    decode: impl FnOnce() -> std::result::Result<T, ArrowError>,
) -> std::result::Result<T, ArrowError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(decode)).unwrap_or_else(|_| {
        Err(ArrowError::IpcError(
            "Arrow's decoder panicked on these bytes".to_owned(),
        ))
    })
}

fn to_usize(len: u64) -> Result<usize> {
    usize::try_from(len).map_err(|_| past_end())
}

/// Decodes the payload read from `reader` into record batches, reading each Arrow IPC message
/// into a buffer of its own (which its arrays then use without a copy). Decoding message by
/// message, rather than the whole payload from one buffer, keeps the allocations batch-sized: the
/// allocator recycles them across loads, where one payload-sized buffer would be fresh memory
/// from the operating system every time (for a large table, the larger cost than the copy).
///
/// # Errors
/// `InvalidFormat`: as [`decode_batches`], a message running past the payload or without its
/// continuation marker, an end-of-stream marker inside the payload, or a corrupt compressed stream.
pub fn decode_from_reader(
    schema_section: &[u8],
    mut reader: PayloadReader<'_>,
) -> Result<Vec<RecordBatch>> {
    let mut decoder = decoder_after_schema(schema_section)?;
    let mut batches = Vec::new();
    while reader.remaining() > 0 {
        let mut message = Buffer::from_vec(read_message(&mut reader)?);
        while !message.is_empty() {
            decode_message(&mut decoder, &mut message, &mut batches)?;
        }
    }
    reader.finish()?;
    end_of_stream(decoder, batches)
}

/// The first record batches of a payload or chunk read through `reader`, stopping as soon as
/// they hold at least `rows` rows: memory is what those batches take, not what the payload
/// declares (`alimentar head` on a table of any size). What follows them is not read, so it is
/// not checked either: callers that need the whole payload use [`decode_from_reader`].
///
/// # Errors
/// As [`decode_from_reader`], for the part read.
pub fn decode_first_rows(
    schema_section: &[u8],
    mut reader: PayloadReader<'_>,
    rows: u64,
) -> Result<Vec<RecordBatch>> {
    let mut decoder = decoder_after_schema(schema_section)?;
    let mut batches = Vec::new();
    let mut have = 0u64;
    while reader.remaining() > 0 && have < rows {
        let mut message = Buffer::from_vec(read_message(&mut reader)?);
        while !message.is_empty() {
            decode_message(&mut decoder, &mut message, &mut batches)?;
        }
        have = batches.iter().map(|batch| batch.num_rows() as u64).sum();
    }
    if reader.remaining() == 0 {
        reader.finish()?;
        return end_of_stream(decoder, batches);
    }
    Ok(batches)
}

/// As [`decode_first_rows`], keeping only the columns of `projection` (as
/// [`decode_batches_projected`]).
///
/// # Errors
/// As [`decode_batches_projected`], for the part read.
pub fn decode_first_rows_projected(
    schema_section: &[u8],
    mut reader: PayloadReader<'_>,
    rows: u64,
    projection: &[usize],
) -> Result<Vec<RecordBatch>> {
    let mut decoder = ProjectedDecoder::new(schema_section, projection)?;
    let mut batches = Vec::new();
    let mut have = 0u64;
    while reader.remaining() > 0 && have < rows {
        let message = Buffer::from_vec(read_message(&mut reader)?);
        if let Some(batch) = decoder.decode(&message)? {
            have = have.saturating_add(batch.num_rows() as u64);
            batches.push(batch);
        }
    }
    if reader.remaining() == 0 {
        reader.finish()?;
    }
    Ok(batches)
}

/// `InvalidFormat`, keeping the Arrow decoder's error as the cause.
fn not_record_batches(error: ArrowError) -> Error {
    Error::Undecodable {
        rule: FormatError::MalformedBlock {
            section: Section::Payload,
            reason: "not Arrow IPC record batches of the schema section's schema",
        },
        cause: error.into(),
    }
}

/// `decoder.decode(bytes)`, with a panic turned into an error. Arrow's decoder is meant to return
/// errors for malformed input, but arrow-rs still panics on some (a buffer whose length is not a
/// multiple of its element size, among the inputs our fuzzing found), and bad input must never
/// crash a loader. Natively the panic is caught here and reported as an ordinary decode error;
/// where panics abort (wasm32) it cannot be. The checks this module makes before decoding
/// (framing, bounds and alignment of every buffer) keep the known cases from reaching Arrow.
fn decode_guarded(
    decoder: &mut StreamDecoder,
    bytes: &mut Buffer,
) -> std::result::Result<Option<RecordBatch>, ArrowError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| decoder.decode(bytes))).unwrap_or_else(
        |_| {
            Err(ArrowError::IpcError(
                "Arrow's decoder panicked on these bytes".to_owned(),
            ))
        },
    )
}

/// Feeds `bytes` to `decoder` once, keeping any batch it completes. A message with an empty body
/// (a zero-row batch) completes only when the next bytes arrive, so one call may return that
/// batch and leave the new bytes unread: callers loop until `bytes` is empty.
fn decode_message(
    decoder: &mut StreamDecoder,
    bytes: &mut Buffer,
    batches: &mut Vec<RecordBatch>,
) -> Result<()> {
    let before = bytes.len();
    match decode_guarded(decoder, bytes).map_err(not_record_batches)? {
        Some(batch) => batches.push(batch),
        None if bytes.len() == before => {
            return Err(malformed(
                Section::Payload,
                "an Arrow IPC message the decoder cannot read",
            ));
        }
        None => {}
    }
    Ok(())
}

/// Ends the stream with the end-of-stream marker. The payload must end on a message boundary: the
/// marker then completes any zero-row batch still waiting for bytes and is read as exactly a
/// marker. Were the payload cut short, the marker would complete (or extend) its last message
/// instead.
fn end_of_stream(
    mut decoder: StreamDecoder,
    mut batches: Vec<RecordBatch>,
) -> Result<Vec<RecordBatch>> {
    let cut_short = || malformed(Section::Payload, "the Arrow IPC messages are cut short");
    let mut end = Buffer::from(END_OF_STREAM.as_slice());
    if let Some(batch) = decode_guarded(&mut decoder, &mut end).map_err(not_record_batches)? {
        // A waiting zero-row batch completes without taking a byte of the marker; a batch that
        // took some was missing them.
        if end.len() != END_OF_STREAM.len() {
            return Err(cut_short());
        }
        batches.push(batch);
        if decode_guarded(&mut decoder, &mut end)
            .map_err(not_record_batches)?
            .is_some()
        {
            return Err(cut_short());
        }
    }
    if !end.is_empty() || decoder.finish().is_err() {
        return Err(cut_short());
    }
    Ok(batches)
}

/// The most a message buffer reserves before its bytes arrive: a compressed payload's declared
/// size is not bounded by the file's length, so larger messages grow as they are read.
const MAX_UPFRONT_RESERVATION: u64 = 64 << 20;

/// Reads one encapsulated message (continuation marker, metadata length, metadata, body).
fn read_message(reader: &mut PayloadReader<'_>) -> Result<Vec<u8>> {
    if reader.remaining() < PREFIX_LEN as u64 {
        return Err(past_end());
    }
    let mut message = Vec::with_capacity(1024);
    reader.append_to(PREFIX_LEN as u64, &mut message)?;
    let metadata_len = metadata_len(&message, reader.remaining())?;
    reserve(&mut message, metadata_len);
    reader.append_to(metadata_len, &mut message)?;
    let body_len = checked_body_len(&message[PREFIX_LEN..], reader.remaining())?;
    reserve(&mut message, body_len);
    reader.append_to(body_len, &mut message)?;
    Ok(message)
}

/// Bytes before an encapsulated message's metadata: the continuation marker and the length.
pub(crate) const PREFIX_LEN: usize = 8;

/// The Arrow IPC format pads metadata and bodies to, and aligns buffers on, 8 bytes. Checked
/// because Arrow's validation assumes it (a misaligned offsets buffer makes it panic).
const IPC_ALIGNMENT: u64 = 8;

const MISALIGNED: &str =
    "an Arrow IPC message whose metadata, body or buffers are not aligned on 8 bytes";
const PAST_END: &str = "an Arrow IPC message runs past the end of the payload";

fn past_end() -> Error {
    malformed(Section::Payload, PAST_END)
}

/// The metadata length an encapsulated message's 8-byte `prefix` declares, checked against the
/// `available` bytes after the prefix.
fn metadata_len(prefix: &[u8], available: u64) -> Result<u64> {
    message_metadata_len(prefix, available)
        .map_err(|reason| malformed(Section::Payload, reason))?
        .ok_or_else(|| {
            malformed(
                Section::Payload,
                "an end-of-stream marker inside the payload",
            )
        })
}

/// The metadata length an encapsulated message's 8-byte `prefix` declares (`None` for the
/// end-of-stream marker), checked against the `available` bytes after the prefix: the checks
/// every Arrow IPC reader here makes before Arrow sees a message (the `.ald` payload and the
/// interchange readers of Arrow IPC files and streams).
///
/// # Errors
/// Which rule the prefix breaks.
pub(crate) fn message_metadata_len(
    prefix: &[u8],
    available: u64,
) -> std::result::Result<Option<u64>, &'static str> {
    let (marker, length) = prefix
        .split_first_chunk::<4>()
        .and_then(|(marker, rest)| Some((marker, rest.first_chunk::<4>()?)))
        .ok_or(PAST_END)?;
    if *marker != CONTINUATION {
        return Err("an Arrow IPC message without its ff ff ff ff continuation marker");
    }
    let len = u64::from(u32::from_le_bytes(*length));
    if len == 0 {
        return Ok(None);
    }
    if !len.is_multiple_of(IPC_ALIGNMENT) {
        return Err(MISALIGNED);
    }
    if len > available {
        return Err(PAST_END);
    }
    Ok(Some(len))
}

/// The body length a message's `metadata` declares, after checking what Arrow's decoder takes on
/// trust: that the message is a record or dictionary batch, without IPC body compression, and that
/// every buffer it lists lies inside its body (Arrow's reader slices them unchecked and would
/// panic). `available` bounds the body.
fn checked_body_len(metadata: &[u8], available: u64) -> Result<u64> {
    match checked_batch_message(metadata, available) {
        Ok(BatchMessage {
            compressed: true, ..
        }) => Err(malformed(
            Section::Payload,
            "Arrow IPC body compression, which .ald does not use (docs/ald.md §5)",
        )),
        Ok(message) => Ok(message.body_len),
        Err(reason) => Err(malformed(Section::Payload, reason)),
    }
}

/// A record or dictionary batch message whose buffers all lie inside its body.
pub(crate) struct BatchMessage {
    /// The body's length.
    pub(crate) body_len: u64,
    /// Whether the body uses Arrow IPC body compression.
    pub(crate) compressed: bool,
}

/// Checks a message's `metadata` (its flatbuffer) before Arrow's decoder reads it: a record or
/// dictionary batch, whose body fits in `available` bytes, aligned, with every buffer inside the
/// body.
///
/// # Errors
/// Which rule the message breaks.
pub(crate) fn checked_batch_message(
    metadata: &[u8],
    available: u64,
) -> std::result::Result<BatchMessage, &'static str> {
    let message = arrow_ipc::root_as_message(metadata)
        .map_err(|_| "an Arrow IPC message whose metadata is not a Message flatbuffer")?;
    let body_len = u64::try_from(message.bodyLength())
        .ok()
        .filter(|len| *len <= available)
        .ok_or(PAST_END)?;
    if !body_len.is_multiple_of(IPC_ALIGNMENT) {
        return Err(MISALIGNED);
    }
    let batch = match message.header_type() {
        arrow_ipc::MessageHeader::RecordBatch => message.header_as_record_batch(),
        arrow_ipc::MessageHeader::DictionaryBatch => message
            .header_as_dictionary_batch()
            .and_then(|dictionary| dictionary.data()),
        _ => {
            return Err(
                "an Arrow IPC message that is neither a record batch nor a dictionary batch",
            );
        }
    }
    .ok_or("an Arrow IPC batch message without its batch")?;
    for buffer in batch.buffers().iter().flatten() {
        let (offset, length) = (buffer.offset(), buffer.length());
        let inside = u64::try_from(offset)
            .ok()
            .zip(u64::try_from(length).ok())
            .and_then(|(offset, length)| offset.checked_add(length))
            .is_some_and(|end| end <= body_len);
        if !inside {
            return Err("an Arrow IPC buffer outside its message's body");
        }
        if !offset.unsigned_abs().is_multiple_of(IPC_ALIGNMENT) {
            return Err(MISALIGNED);
        }
    }
    Ok(BatchMessage {
        body_len,
        compressed: batch.compression().is_some(),
    })
}

fn reserve(buffer: &mut Vec<u8>, additional: u64) {
    let upfront = additional.min(MAX_UPFRONT_RESERVATION);
    buffer.reserve_exact(usize::try_from(upfront).unwrap_or(0));
}

/// The full Arrow IPC stream of a dataset, as `pyarrow.ipc.open_stream` reads it.
#[must_use]
pub fn full_stream(schema_section: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(schema_section.len() + payload.len() + END_OF_STREAM.len());
    out.extend_from_slice(schema_section);
    out.extend_from_slice(payload);
    out.extend_from_slice(&END_OF_STREAM);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int32Array, StringArray};
    use arrow_schema::{DataType, Field};
    use std::sync::Arc;

    fn batch(values: &[i32]) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("n", DataType::Int32, false),
            Field::new("s", DataType::Utf8, true),
        ]));
        let strings: StringArray = values.iter().map(|v| Some(v.to_string())).collect();
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int32Array::from(values.to_vec())),
                Arc::new(strings),
            ],
        )
        .unwrap()
    }

    #[test]
    fn schema_section_then_payload_is_a_plain_ipc_stream() {
        let batches = [batch(&[1, 2]), batch(&[3])];
        let schema = batches[0].schema();
        let section = schema_message(&schema).unwrap();
        let mut payload = Vec::new();
        encode_batches(&schema, &batches, &mut payload).unwrap();
        let stream = full_stream(&section, &payload);
        let read: Vec<_> = arrow_ipc::reader::StreamReader::try_new(&stream[..], None)
            .unwrap()
            .collect::<std::result::Result<_, _>>()
            .unwrap();
        assert_eq!(read, batches);
        assert_eq!(
            decode_batches(&section, Buffer::from(payload)).unwrap(),
            batches
        );
    }

    #[test]
    fn a_schema_section_with_anything_else_is_refused() {
        let schema = batch(&[1]).schema();
        let section = schema_message(&schema).unwrap();
        let mut with_batch = section.clone();
        encode_batches(&schema, [&batch(&[1])], &mut with_batch).unwrap();
        for bad in [
            &with_batch[..],
            &section[..section.len() - 1],
            b"",
            &END_OF_STREAM,
        ] {
            assert_eq!(
                parse_schema(bad).unwrap_err().signal(),
                envelope_core::Signal::InvalidFormat
            );
        }
        assert_eq!(*parse_schema(&section).unwrap(), *schema);
    }

    /// A batch of an Int32 column, a text column and a dictionary column of text, with values
    /// (`zq…`) that can be found in the encoded payload.
    fn wide_batch() -> RecordBatch {
        let words: arrow_array::DictionaryArray<arrow_array::types::Int32Type> =
            ["zqa", "zqb", "zqa", "zqc"].into_iter().collect();
        RecordBatch::try_from_iter([
            (
                "n",
                Arc::new(Int32Array::from(vec![1, 2, 3, 4])) as ArrayRef,
            ),
            (
                "s",
                Arc::new(StringArray::from(vec![
                    Some("zqs"),
                    None,
                    Some("x"),
                    Some("y"),
                ])),
            ),
            ("d", Arc::new(words)),
        ])
        .unwrap()
    }

    fn encoded(batch: &RecordBatch) -> (Vec<u8>, Vec<u8>) {
        let schema = batch.schema();
        let section = schema_message(&schema).unwrap();
        let mut payload = Vec::new();
        encode_batches(&schema, [batch], &mut payload).unwrap();
        (section, payload)
    }

    #[test]
    fn projected_decoding_equals_decoding_then_projecting() {
        let batch = wide_batch();
        let (section, payload) = encoded(&batch);
        for projection in [&[][..], &[0], &[2], &[2, 0], &[1, 2, 0]] {
            let decoded =
                decode_batches_projected(&section, Buffer::from(payload.clone()), projection)
                    .unwrap();
            assert_eq!(
                decoded,
                [batch.project(projection).unwrap()],
                "{projection:?}"
            );
            assert_eq!(decoded[0].num_rows(), 4);
        }
    }

    #[test]
    fn projected_columns_are_views_of_the_decoded_payload() {
        let batch = wide_batch();
        let (section, payload) = encoded(&batch);
        let payload = Buffer::from(payload);
        let range = payload.as_ptr() as usize..payload.as_ptr() as usize + payload.len();
        let decoded = decode_batches_projected(&section, payload.clone(), &[1, 0]).unwrap();
        for column in decoded[0].columns() {
            for buffer in column.to_data().buffers() {
                assert!(range.contains(&(buffer.as_ptr() as usize)), "copied");
            }
        }
    }

    /// What a projection skips: the buffers and dictionaries of the other columns are neither
    /// decoded nor validated (docs/ald.md §6.2); the projected ones still are.
    #[test]
    fn other_columns_invalid_text_and_dictionaries_are_not_decoded() {
        let batch = wide_batch();
        let (section, payload) = encoded(&batch);
        let at = |needle: &[u8]| {
            payload
                .windows(needle.len())
                .position(|window| window == needle)
                .unwrap()
        };
        // Invalid UTF-8 in the text column, and in the dictionary's values.
        for needle in [&b"zqs"[..], b"zqb"] {
            let mut bad = payload.clone();
            bad[at(needle)] = 0xFF;
            let full = decode_batches(&section, Buffer::from(bad.clone())).unwrap_err();
            assert_eq!(full.signal(), envelope_core::Signal::InvalidFormat);
            let column = if needle == b"zqs" { 1 } else { 2 };
            let error = decode_batches_projected(&section, Buffer::from(bad.clone()), &[column])
                .unwrap_err();
            assert_eq!(error.signal(), envelope_core::Signal::InvalidFormat);
            let others: Vec<usize> = (0..3).filter(|c| *c != column).collect();
            let decoded = decode_batches_projected(&section, Buffer::from(bad), &others).unwrap();
            assert_eq!(decoded, [batch.project(&others).unwrap()]);
        }
    }

    #[test]
    fn projections_past_the_schema_or_with_repeats_are_usage() {
        let batch = wide_batch();
        let (section, payload) = encoded(&batch);
        for (projection, expected) in [
            (
                &[3][..],
                Error::NoSuchColumn {
                    index: 3,
                    columns: 3,
                },
            ),
            (&[0, 2, 0], Error::DuplicateColumn { index: 0 }),
            (
                &[usize::MAX],
                Error::NoSuchColumn {
                    index: usize::MAX,
                    columns: 3,
                },
            ),
        ] {
            let error =
                decode_batches_projected(&section, Buffer::from(payload.clone()), projection)
                    .unwrap_err();
            assert_eq!(error.signal(), envelope_core::Signal::Usage);
            assert_eq!(error.to_string(), expected.to_string());
        }
    }

    #[test]
    fn cut_or_foreign_payloads_are_invalid_format_under_a_projection_too() {
        let batch = wide_batch();
        let (section, payload) = encoded(&batch);
        for cut in [1, 8, payload.len() - 1] {
            for projection in [&[][..], &[0]] {
                let error =
                    decode_batches_projected(&section, Buffer::from(&payload[..cut]), projection)
                        .unwrap_err();
                assert_eq!(error.signal(), envelope_core::Signal::InvalidFormat);
            }
        }
        let error =
            decode_batches_projected(&section, Buffer::from(section.clone()), &[0]).unwrap_err();
        assert_eq!(error.signal(), envelope_core::Signal::InvalidFormat);
    }

    #[test]
    fn cut_or_foreign_payloads_are_invalid_format() {
        let schema = batch(&[1]).schema();
        let section = schema_message(&schema).unwrap();
        let mut payload = Vec::new();
        encode_batches(&schema, [&batch(&[1, 2, 3])], &mut payload).unwrap();
        for cut in [1, 8, payload.len() - 1] {
            let error = decode_batches(&section, Buffer::from(&payload[..cut])).unwrap_err();
            assert_eq!(error.signal(), envelope_core::Signal::InvalidFormat);
        }
        let error = decode_batches(&section, Buffer::from(section.clone())).unwrap_err();
        assert_eq!(error.signal(), envelope_core::Signal::InvalidFormat);
    }
}
