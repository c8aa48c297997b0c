//! Panics of foreign readers turned into errors (issue 14 §3: a one-byte change to an `.arrow`
//! input made `schema`, `head` and `convert` exit 101 inside arrow).
//!
//! Arrow's and parquet's readers are meant to return errors for malformed input, but still panic
//! on some (slicing buffers a message declares, unchecked offsets). The interchange readers check
//! what they can before handing bytes over (Arrow IPC framing and buffer bounds, as the `.ald`
//! path does in [`crate::ipc`]); every remaining call into a foreign reader runs inside
//! [`guarded`], which catches the panic and returns `InvalidFormat` naming the file kind and the
//! panic's message. This module exists only natively: on wasm32 a panic aborts and cannot be
//! caught, which is why the interchange readers are not built there at all.
//!
//! **Why a process-wide panic hook, and why it is safe with threads.** A caught panic still runs
//! the panic hook first, which prints `thread '...' panicked at ...` on stderr: noise for a CLI
//! user whose file was merely malformed (the error itself says what happened). Rust has one hook
//! per process, so a scoped "set, call, restore" would race with other threads panicking (or
//! setting hooks) meanwhile. Instead, the first guarded call installs, once, a hook that wraps
//! whichever hook was installed before it and stays silent only while *the panicking thread* is
//! inside [`guarded`] (a thread-local depth counter). Panics anywhere else, on this thread outside
//! a guard or on any other thread, reach the previous hook unchanged. A hook installed later by
//! someone else replaces ours, and then guarded panics print again but are still caught.

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

use crate::{Error, Result};

thread_local! {
    /// How many [`guarded`] calls are active on this thread.
    static GUARD_DEPTH: Cell<u32> = const { Cell::new(0) };
}

static INSTALL_QUIET_HOOK: Once = Once::new();

fn install_quiet_hook() {
    INSTALL_QUIET_HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if GUARD_DEPTH.with(Cell::get) == 0 {
                previous(info);
            }
        }));
    });
}

/// Leaves the guarded region even when the guarded call unwinds.
struct DepthGuard;

impl DepthGuard {
    fn enter() -> Self {
        GUARD_DEPTH.with(|depth| depth.set(depth.get().saturating_add(1)));
        Self
    }
}

impl Drop for DepthGuard {
    fn drop(&mut self) {
        GUARD_DEPTH.with(|depth| depth.set(depth.get().saturating_sub(1)));
    }
}

/// Runs `read` (a call into a foreign reader on untrusted bytes); a panic becomes
/// `InvalidFormat` naming `format` and quoting the panic's message. The reader `read` used must
/// not be used again after such an error (its state is unknown), which every caller here
/// guarantees by returning the error.
///
/// # Errors
/// `read`'s own error, or `InvalidFormat` if it panicked.
pub(crate) fn guarded<T>(format: &'static str, read: impl FnOnce() -> Result<T>) -> Result<T> {
    guarded_as(format, "the reader panicked on these bytes", read)
}

/// `InvalidFormat` unless Arrow can build an empty array of every column of `schema`. A foreign
/// file's schema is only as valid as its bytes: Arrow's schema decoders accept, say, a map whose
/// entries are not a struct, and Arrow's array constructors then panic on it (the `arrow_file`
/// fuzz target found that one through `head` of an empty table). Building the empty arrays once,
/// guarded, when the input is opened runs Arrow's own checks of every type before any row is read.
///
/// # Errors
/// `InvalidFormat` naming `format`.
pub(crate) fn check_schema(format: &'static str, schema: &arrow_schema::SchemaRef) -> Result<()> {
    guarded_as(format, "the schema has a column Arrow cannot build", || {
        let _ = arrow_array::RecordBatch::new_empty(std::sync::Arc::clone(schema));
        Ok(())
    })
}

/// [`guarded`], with `what` saying what a panic means.
fn guarded_as<T>(format: &'static str, what: &str, read: impl FnOnce() -> Result<T>) -> Result<T> {
    install_quiet_hook();
    let outcome = {
        let _inside = DepthGuard::enter();
        panic::catch_unwind(AssertUnwindSafe(read))
    };
    outcome.unwrap_or_else(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|text| (*text).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".to_owned());
        Err(Error::foreign(format, format!("{what} ({message})")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_inside_becomes_invalid_format_naming_the_format() {
        let error = guarded::<()>("Parquet", || panic!("index out of bounds")).unwrap_err();
        assert_eq!(error.signal(), envelope_core::Signal::InvalidFormat);
        let message = error.to_string();
        assert!(message.starts_with("InvalidFormat: Parquet: "), "{message}");
        assert!(message.contains("index out of bounds"), "{message}");
        // The depth counter is back to zero, so later panics print as usual.
        assert_eq!(GUARD_DEPTH.with(Cell::get), 0);
        assert_eq!(guarded("CSV", || Ok(7)).unwrap(), 7);
    }

    #[test]
    fn a_schema_arrow_cannot_build_is_invalid_format() {
        use arrow_schema::{DataType, Field, Schema};
        use std::sync::Arc;
        // A map whose entries are not a struct: Arrow's IPC schema decoder accepts it.
        let entries = Arc::new(Field::new("entries", DataType::FixedSizeBinary(0), false));
        let schema = Arc::new(Schema::new(vec![Field::new(
            "m",
            DataType::Map(entries, false),
            true,
        )]));
        let error = check_schema("Arrow IPC", &schema).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("InvalidFormat: Arrow IPC: the schema has a column"),
            "{error}"
        );
        let fine = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, true)]));
        check_schema("Arrow IPC", &fine).unwrap();
    }

    #[test]
    fn errors_pass_through_unchanged() {
        let error = guarded::<()>("CSV", || Err(Error::InvalidArgument("x"))).unwrap_err();
        assert_eq!(error.signal(), envelope_core::Signal::Usage);
    }
}
