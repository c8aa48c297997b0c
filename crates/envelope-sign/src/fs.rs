//! Files by path (native only): key files, trusted-key directories, and signing and verifying a
//! file in one read of it ([`sign_file`], [`verify_file`]).

use std::fs::File;
use std::io::Write as _;
use std::ops::Range;
use std::path::Path;
use std::sync::mpsc;

use ed25519_dalek::SigningKey;
use envelope_core::fs::{Access, Destination, Writer};
use envelope_core::{
    Error, FLAGS_OFFSET, FRAME_PREFIX_LEN, Flags, Format, HEADER_LEN, Layout, Result, Section,
    SignatureFailure,
};
use envelope_crypto::{Argon2Params, CryptoRngCore, Password};

use crate::keys::{Identity, PublicKeyFile, SigningPublicKey, TrustedKeys};
use crate::signature::{Algorithm, MessageHasher, SIGNATURE_BLOCK_LEN, SignatureBlock};

/// Writes `identity` as the private key file `destination` (sealed with `password`; owner-only,
/// `0600`, whatever the umask) and the public key file `destination.pub` (with the destination's
/// overwrite policy), each atomically. Both are checked before either is written, so a refused
/// `.pub` never leaves a lone new private key.
///
/// # Errors
/// As [`Identity::seal`], plus `Io` (`AlreadyExists` under `Existing::Keep`).
pub fn write_key_files(
    destination: impl Into<Destination>,
    identity: &Identity,
    password: &Password,
    params: Argon2Params,
    rng: &mut impl CryptoRngCore,
) -> Result<()> {
    let private = destination.into().access(Access::Private);
    let mut public_path = private.path().as_os_str().to_owned();
    public_path.push(".pub");
    let public = Destination::new(Path::new(&public_path)).existing(private.existing_policy());
    private.check()?;
    public.check()?;
    let sealed = identity.seal(password, params, rng)?;
    envelope_core::fs::write_atomic(private, |out| {
        std::io::Write::write_all(out, &sealed).map_err(Error::Io)
    })?;
    envelope_core::fs::write_atomic(public, |out| {
        std::io::Write::write_all(out, identity.public_key_file().as_bytes()).map_err(Error::Io)
    })
}

/// Opens the private key file at `path`.
///
/// # Errors
/// `Io`, then as [`Identity::open`].
pub fn read_identity(path: &Path, password: &Password) -> Result<Identity> {
    Identity::open(&std::fs::read(path)?, password)
}

/// Reads a public key file.
///
/// # Errors
/// `Io`, then as [`PublicKeyFile::parse`].
pub fn read_public_key_file(path: &Path) -> Result<PublicKeyFile> {
    let text = std::fs::read_to_string(path)?;
    PublicKeyFile::parse(&text)
}

/// The `ed25519` keys of every `*.pub` file directly in `dir`.
///
/// # Errors
/// `Io` if the directory or a file cannot be read; `Usage` if a `.pub` file does not parse or the
/// directory holds no signing key at all (a typo in a path must not mean "trust nothing" silently
/// passing as a configuration).
pub fn trusted_keys_from_dir(dir: &Path) -> Result<TrustedKeys> {
    let mut trusted = TrustedKeys::new();
    let mut paths: Vec<_> = std::fs::read_dir(dir)?
        .map(|entry| entry.map(|entry| entry.path()))
        .collect::<std::io::Result<_>>()?;
    paths.sort();
    for path in paths {
        if path.extension().is_some_and(|ext| ext == "pub") && path.is_file() {
            for key in read_public_key_file(&path)?.signing {
                trusted.add(key)?;
            }
        }
    }
    if trusted.is_empty() {
        return Err(Error::InvalidArgument(
            "the trusted-keys directory holds no ed25519 key in a *.pub file",
        ));
    }
    Ok(trusted)
}

/// Bytes read per block by [`sign_file`] and [`verify_file`]: large enough that a `pread` or a
/// `write` costs little per byte, small enough that a block is still in the shared cache when the
/// hashing thread reads it.
const BLOCK: usize = 512 << 10;

/// Bytes [`sign_file`] writes between two early flushes of its output to disk.
const EARLY_SYNC: usize = 32 << 20;

/// Blocks in flight between the reading thread and the hashing thread (memory use is
/// `(DEPTH + 1) * BLOCK`, whatever the file's size).
const DEPTH: usize = 4;

/// Verifies the signature of the file at `path` (of `format`, or either format) against the
/// caller's `trusted` keys, reading the file once in bounded memory: the whole-file CRC32 on this
/// thread and the signed regions' digest on a second one, over the same blocks. Gives the same
/// result as [`envelope_core::fs::load`] followed by [`crate::verify`]: every check of
/// `docs/envelope.md` §3 first (a `ChecksumMismatch` comes before any signature error), then
/// docs/signing.md §3.1.
///
/// # Errors
/// `Io`, the envelope's errors, then `SignatureInvalid` as [`crate::verify`].
pub fn verify_file(
    path: &Path,
    format: Option<Format>,
    trusted: &TrustedKeys,
) -> Result<SigningPublicKey> {
    let (_, _, outcome) = envelope_core::fs::walk_with_pass(path, format, |file, layout| {
        let block = read_signature_block(file, layout)?;
        // Only a block that could verify is worth its digest; the CRC32 is always computed, so
        // a corrupt file is reported as such before any signature error.
        let mut hasher = block
            .as_ref()
            .ok()
            .filter(|block| block.trusted_key(trusted).is_ok())
            .map(|block| MessageHasher::new(layout.header().format(), block.algorithm));
        let [first, second] = layout.signed_ranges();
        let mut crc = crc32fast::Hasher::new();
        let mut crc_of = |bytes: &[u8]| {
            crc.update(bytes);
            Ok(())
        };
        stream(file, first.clone(), hasher.as_mut(), &mut crc_of)?;
        stream(file, first.end..second.start, None, &mut crc_of)?;
        stream(file, second, hasher.as_mut(), &mut crc_of)?;
        let message = hasher.map(MessageHasher::finish);
        Ok((crc.finalize(), (block, message)))
    })?;
    let (block, message) = outcome;
    let block = block?;
    let key = block.trusted_key(trusted)?;
    let message = message.ok_or(Error::SignatureInvalid(SignatureFailure::UntrustedKey))?;
    block.check(key, &message)
}

/// The signature block of a walked file, or why there is none to check (`Missing`, `Malformed`).
fn read_signature_block(file: &File, layout: &Layout) -> Result<Result<SignatureBlock>> {
    if !layout.header().flags().contains(Flags::SIGNED) {
        return Ok(Err(Error::SignatureInvalid(SignatureFailure::Missing)));
    }
    let Some(span) = layout.span(Section::Signature) else {
        return Ok(Err(Error::SignatureInvalid(SignatureFailure::Missing)));
    };
    if span.len != SIGNATURE_BLOCK_LEN as u64 {
        return Ok(Err(Error::SignatureInvalid(SignatureFailure::Malformed)));
    }
    let mut body = [0u8; SIGNATURE_BLOCK_LEN];
    read_at(file, &mut body, span.offset)?;
    Ok(SignatureBlock::parse(&body))
}

/// Signs the file at `input` (of `format`, or either format) with `key`, replacing any signature
/// it has, and writes the signed file to `destination` atomically. The output is byte for byte what
/// [`crate::sign`] makes of the same file, but the input is read once, in blocks, and each block
/// is checked into the input's CRC32, written out and hashed (on a second thread) while it is in
/// cache; memory use is bounded by a few blocks plus the license block, whatever the file's size.
/// Nothing is signed until the input's CRC32 matched, and nothing reaches `destination` unless
/// every check passed.
///
/// # Errors
/// `Io`, then the envelope's errors for `input`.
pub fn sign_file(
    input: &Path,
    format: Option<Format>,
    destination: impl Into<Destination>,
    key: &SigningKey,
) -> Result<()> {
    envelope_core::fs::write_atomic(destination, |out| {
        envelope_core::fs::walk_with_pass(input, format, |file, layout| {
            sign_pass(file, layout, out, key)
        })
        .map(|_| ())
    })
}

/// Writes the signed version of the walked `file` to `out` and returns the input's CRC32.
///
/// The output is the input with the SIGNED flag set in the header, the bytes after the header up to
/// the end of the payload unchanged, then a signature frame, the license frame (if any) and the
/// new CRC32, the order [`EnvelopeParts`](envelope_core::EnvelopeParts) writes. The CRC32 of the
/// unchanged middle is computed once and combined into both the input's and the output's.
fn sign_pass(
    file: &File,
    layout: &Layout,
    out: &mut Writer,
    key: &SigningKey,
) -> Result<(u32, ())> {
    let header_len = HEADER_LEN as u64;
    let payload_end = layout
        .span(Section::Payload)
        .map_or(header_len, |span| span.end());
    let checked_end = layout.checksum_offset();

    let mut header = [0u8; HEADER_LEN];
    read_at(file, &mut header, 0)?;
    let mut signed_header = header;
    signed_header[FLAGS_OFFSET] |= Flags::SIGNED.bits();

    let mut hasher = MessageHasher::new(layout.header().format(), Algorithm::Ed25519Sha256);
    hasher.update(&signed_header);
    out.write_all(&signed_header)?;

    let mut middle = crc32fast::Hasher::new();
    // The disk writes the output while the rest is hashed, so that the commit's fsync has little
    // left to wait for (`with_early_sync`: a helper flushes what has been written every
    // `EARLY_SYNC` bytes). The writer passes each block, larger than its buffer, straight through.
    envelope_core::fs::with_early_sync(out, EARLY_SYNC, |out| {
        stream(
            file,
            header_len..payload_end,
            Some(&mut hasher),
            &mut |block| {
                middle.update(block);
                out.write_all(block)?;
                Ok(())
            },
        )
    })?;

    // What follows the payload (the old signature frame, the license frame) is small and read
    // whole.
    let mut tail =
        vec![
            0u8;
            Error::fit_in_memory("the sections after the payload", checked_end - payload_end)?
        ];
    read_at(file, &mut tail, payload_end)?;
    let mut crc_in = crc32fast::Hasher::new();
    crc_in.update(&header);
    crc_in.combine(&middle);
    crc_in.update(&tail);
    let crc_in = crc_in.finalize();
    if crc_in != layout.checksum() {
        // Sign nothing that is not verified; the walk reports the mismatch.
        return Ok((crc_in, ()));
    }
    let license = match layout.span(Section::License) {
        Some(span) => {
            let start = Error::fit_in_memory(
                "the license frame",
                span.offset - FRAME_PREFIX_LEN as u64 - payload_end,
            )?;
            let end = Error::fit_in_memory("the license frame", span.end() - payload_end)?;
            &tail[start..end]
        }
        None => &[][..],
    };
    let frame_prefix = u32::try_from(SIGNATURE_BLOCK_LEN)
        .map_err(|_| Error::InvalidArgument("the signature block's length"))?
        .to_le_bytes();
    hasher.update(&frame_prefix);
    hasher.update(license);
    let body = SignatureBlock::new(key, hasher.finish().as_bytes()).encode();

    let mut crc_out = crc32fast::Hasher::new();
    crc_out.update(&signed_header);
    crc_out.combine(&middle);
    for piece in [&frame_prefix[..], &body, license] {
        crc_out.update(piece);
        out.write_all(piece)?;
    }
    out.write_all(&crc_out.finalize().to_le_bytes())?;
    Ok((crc_in, ()))
}

/// Reads `range` of `file` once, in blocks: each block goes to `each` on this thread and, with a
/// `hasher`, to a second thread that feeds it to the hasher (the digest is the slow part; reading,
/// the CRC32 and writing share this thread). Memory use is bounded by [`DEPTH`] blocks.
fn stream(
    file: &File,
    range: Range<u64>,
    hasher: Option<&mut MessageHasher>,
    each: &mut dyn FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    let Some(hasher) = hasher else {
        // One block, reused: `read_blocks` hands it back through `spare`.
        let spare =
            std::cell::Cell::new(Some(vec![
                0u8;
                block_len(range.end.saturating_sub(range.start))
            ]));
        return read_blocks(
            file,
            range,
            || spare.take(),
            |filled| {
                each(&filled)?;
                spare.set(Some(filled));
                Ok(())
            },
        );
    };
    let (full, to_hash) = mpsc::sync_channel::<Vec<u8>>(DEPTH);
    let (hashed, empty) = mpsc::channel::<Vec<u8>>();
    let size = block_len(range.end.saturating_sub(range.start));
    for _ in 0..=DEPTH {
        // Cannot fail: `empty` is alive.
        let _ = hashed.send(vec![0u8; size]);
    }
    std::thread::scope(|scope| {
        let hashing = scope.spawn(move || {
            for block in to_hash {
                hasher.update(&block);
                if hashed.send(block).is_err() {
                    break;
                }
            }
        });
        let read = read_blocks(
            file,
            range,
            || empty.recv().ok(),
            |filled| {
                each(&filled)?;
                full.send(filled).map_err(|_| hashing_stopped())
            },
        );
        drop(full);
        if let Err(panic) = hashing.join() {
            std::panic::resume_unwind(panic);
        }
        read
    })
}

/// Fills blocks from `next_block` with consecutive pieces of `range` and hands each to `filled`.
fn read_blocks(
    file: &File,
    range: Range<u64>,
    mut next_block: impl FnMut() -> Option<Vec<u8>>,
    mut filled: impl FnMut(Vec<u8>) -> Result<()>,
) -> Result<()> {
    let mut at = range.start;
    while at < range.end {
        let mut block = next_block().ok_or_else(hashing_stopped)?;
        let want = block_len(range.end - at);
        block.resize(want, 0);
        read_at(file, &mut block, at)?;
        at += want as u64;
        filled(block)?;
    }
    Ok(())
}

/// The bytes of the next block when `left` bytes are left to read: at most [`BLOCK`], so a
/// range of any size (past `usize` on 32-bit targets too) is read in bounded memory.
fn block_len(left: u64) -> usize {
    usize::try_from(left).map_or(BLOCK, |left| left.min(BLOCK))
}

fn hashing_stopped() -> Error {
    Error::Io(std::io::Error::other("the hashing thread stopped"))
}

/// Fills `buf` from `offset` of `file`.
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
    }
    #[cfg(not(unix))]
    {
        use std::io::{Read as _, Seek as _};
        let mut file = file;
        file.seek(std::io::SeekFrom::Start(offset))?;
        file.read_exact(buf)
    }
}
