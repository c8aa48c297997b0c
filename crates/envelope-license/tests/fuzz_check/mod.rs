//! The body of the `license_block` fuzz target, shared with the stable corpus replay in
//! `commercial.rs` (the target includes this file by path, so an input that once found a bug
//! keeps being checked by `cargo test`).

use envelope_core::{Envelope, EnvelopeParts, Format};
use envelope_license::{LicenseBlock, read_license};

/// `license_block`: any bytes as a license block body either are refused with a typed error
/// (`InvalidFormat`) or parse into a block that encodes back to exactly those bytes (so no byte
/// of an accepted block is ignored) and checks against any clock without a panic. The same bytes
/// framed as the license section of an envelope read back the same way through `read_license`.
pub(crate) fn license_block(data: &[u8]) {
    let parsed = LicenseBlock::parse(data);
    match &parsed {
        Ok(block) => {
            assert_eq!(
                block.encode().expect("an accepted block encodes"),
                data,
                "a license block re-encodes to the same bytes"
            );
            for now in [0, block.issued_at, block.expires_at, u64::MAX] {
                let _ = block.check(now);
            }
            let _ = block.flags.names().count();
            let _ = block.is_for("fuzz");
        }
        Err(error) => assert_eq!(
            error.signal(),
            envelope_core::Signal::InvalidFormat,
            "{error}"
        ),
    }
    let mut parts = EnvelopeParts::new(Format::Model, 0);
    parts.license = Some(data.into());
    let Ok(bytes) = parts.to_bytes() else {
        return;
    };
    let envelope = Envelope::parse(&bytes[..], Format::Model).expect("a written envelope parses");
    match (read_license(&envelope), parsed) {
        (Ok(Some(framed)), Ok(block)) => assert_eq!(framed, block),
        (Err(_), Err(_)) => {}
        (framed, direct) => panic!("framed {framed:?} and direct {direct:?} disagree"),
    }
}
