//! zstd payloads: libzstd natively (the same library python-zstandard bundles, so the bytes match
//! pyfolds'), the pure-Rust `ruzstd` on wasm32. Decompression is bounded by the declared
//! `uncomp_len` (002 §8.4) and grows its buffer only as output appears, so a small frame that
//! claims a huge size allocates nothing up front.

use std::io::Read;

/// Why a payload did not decompress to the declared length.
#[derive(Debug)]
pub(crate) enum DecompressError {
    /// Not a valid zstd stream: the decoder's error.
    Corrupt(std::io::Error),
    /// Decoded to a length other than the bound; `at_least` when it stopped at bound + 1.
    Length { actual: u64, at_least: bool },
    /// This build has no zstd support.
    #[cfg_attr(
        feature = "zstd",
        expect(dead_code, reason = "only built without zstd")
    )]
    Unavailable,
}

/// Initial reservation cap: growth beyond it is driven by actual output.
const INITIAL_RESERVE: u64 = 1 << 20;

/// Compresses like `zstd.ZstdCompressor(level=level).compress(data)`.
#[cfg(all(feature = "zstd", not(target_arch = "wasm32")))]
pub(crate) fn zstd_compress(data: &[u8], level: i32) -> std::io::Result<Vec<u8>> {
    zstd::bulk::compress(data, level)
}

/// Compresses with ruzstd (valid zstd frames; not byte-identical to libzstd).
#[cfg(all(feature = "zstd", target_arch = "wasm32"))]
pub(crate) fn zstd_compress(data: &[u8], _level: i32) -> std::io::Result<Vec<u8>> {
    Ok(ruzstd::encoding::compress_to_vec(
        data,
        ruzstd::encoding::CompressionLevel::Fastest,
    ))
}

/// No zstd in this build.
#[cfg(not(feature = "zstd"))]
pub(crate) fn zstd_compress(_data: &[u8], _level: i32) -> std::io::Result<Vec<u8>> {
    Err(std::io::Error::other("built without the `zstd` feature"))
}

#[cfg(all(feature = "zstd", not(target_arch = "wasm32")))]
fn decoder(comp: &[u8]) -> Result<impl Read + '_, DecompressError> {
    zstd::stream::read::Decoder::with_buffer(comp).map_err(DecompressError::Corrupt)
}

#[cfg(all(feature = "zstd", target_arch = "wasm32"))]
fn decoder(comp: &[u8]) -> Result<impl Read + '_, DecompressError> {
    Ok(RuzstdFrames {
        input: comp,
        current: None,
    })
}

/// Concatenated frames through ruzstd, like libzstd's streaming decoder.
#[cfg(all(feature = "zstd", target_arch = "wasm32"))]
struct RuzstdFrames<'a> {
    input: &'a [u8],
    current: Option<ruzstd::decoding::StreamingDecoder<&'a [u8], ruzstd::decoding::FrameDecoder>>,
}

#[cfg(all(feature = "zstd", target_arch = "wasm32"))]
impl Read for RuzstdFrames<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            if let Some(dec) = self.current.as_mut() {
                let n = dec.read(buf)?;
                if n > 0 || buf.is_empty() {
                    return Ok(n);
                }
                self.input = dec.get_ref();
                self.current = None;
            }
            if self.input.is_empty() {
                return Ok(0);
            }
            let dec = ruzstd::decoding::StreamingDecoder::new(self.input)
                .map_err(|e| std::io::Error::other(e.to_string()))?;
            self.current = Some(dec);
        }
    }
}

#[cfg(not(feature = "zstd"))]
fn decoder(_comp: &[u8]) -> Result<std::io::Empty, DecompressError> {
    Err(DecompressError::Unavailable)
}

/// Decompresses `comp`, requiring exactly `expected` output bytes; never produces more than
/// `expected + 1` bytes.
pub(crate) fn zstd_decompress(comp: &[u8], expected: u64) -> Result<Vec<u8>, DecompressError> {
    let dec = decoder(comp)?;
    let reserve =
        usize::try_from(expected.min(INITIAL_RESERVE.max(comp.len() as u64 * 4))).unwrap_or(0);
    let mut out = Vec::with_capacity(reserve);
    dec.take(expected.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(DecompressError::Corrupt)?;
    let actual = out.len() as u64;
    if actual != expected {
        return Err(DecompressError::Length {
            actual,
            at_least: actual > expected,
        });
    }
    Ok(out)
}

/// Decompresses `comp` into a scratch buffer only to check the length is exactly `expected`
/// (whole-file verification keeps no output).
pub(crate) fn zstd_check_len(comp: &[u8], expected: u64) -> Result<(), DecompressError> {
    let mut dec = decoder(comp)?.take(expected.saturating_add(1));
    let mut scratch = vec![0_u8; 1 << 17];
    let mut actual: u64 = 0;
    loop {
        let n = dec.read(&mut scratch).map_err(DecompressError::Corrupt)?;
        if n == 0 {
            break;
        }
        actual += n as u64;
    }
    if actual != expected {
        return Err(DecompressError::Length {
            actual,
            at_least: actual > expected,
        });
    }
    Ok(())
}
