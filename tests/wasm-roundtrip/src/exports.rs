//! The C-ABI surface of the wasm module, for `run.mjs`.
//!
//! The module owns two buffers. JavaScript asks for an input buffer with [`input_alloc`], copies a
//! file into linear memory at the returned address, and calls [`run_verify`]; or it calls
//! [`run_write`] / [`run_name`]. Every `run_*` function leaves its result in the output buffer,
//! which JavaScript reads at [`output_ptr`] for [`output_len`] bytes. Memory may grow during any
//! call, so JavaScript takes a fresh view of `memory.buffer` after each one.
//!
//! Every function is safe Rust; handing out a pointer is safe, and JavaScript writes through it only
//! between calls, when no Rust reference to the buffer exists.
#![expect(
    unsafe_code,
    reason = "C-ABI exports need `#[unsafe(no_mangle)]`; there is no unsafe block here"
)]

use std::cell::RefCell;

thread_local! {
    static INPUT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    static OUTPUT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// A status code returned to JavaScript.
const OK: i32 = 0;
/// `run_write` / `run_name`: no sample with that number.
const NO_SUCH_SAMPLE: i32 = 1;
/// `run_write`: building the sample failed; the output holds the error message.
const BUILD_FAILED: i32 = 2;

fn set_output(bytes: Vec<u8>) {
    OUTPUT.set(bytes);
}

/// Replaces the input buffer by `len` zero bytes and returns its address (null if `len` does not
/// fit this platform's `usize`).
#[unsafe(no_mangle)]
pub extern "C" fn input_alloc(len: u32) -> *mut u8 {
    let Ok(len) = usize::try_from(len) else {
        return std::ptr::null_mut();
    };
    INPUT.with_borrow_mut(|input| {
        *input = vec![0; len];
        input.as_mut_ptr()
    })
}

/// Verifies the input as an envelope file; the output is the JSON record of
/// [`crate::verify_record`]. Always returns 0 (a refused file is a result, not a failure).
#[unsafe(no_mangle)]
pub extern "C" fn run_verify() -> i32 {
    let record = INPUT.with_borrow(|input| crate::verify_record(input));
    set_output(record.into_bytes());
    OK
}

/// Number of samples ([`crate::sample_count`]).
#[unsafe(no_mangle)]
pub extern "C" fn sample_count() -> u32 {
    u32::try_from(crate::sample_count()).unwrap_or(u32::MAX)
}

/// Puts the file name of sample `kind` in the output. Returns 1 if there is no such sample.
#[unsafe(no_mangle)]
pub extern "C" fn run_name(kind: u32) -> i32 {
    match usize::try_from(kind).ok().and_then(crate::sample_name) {
        Some(name) => {
            set_output(name.as_bytes().to_vec());
            OK
        }
        None => NO_SUCH_SAMPLE,
    }
}

/// Builds sample `kind` with this build's backends and puts the file in the output. Returns 1 if
/// there is no such sample, 2 (with the error message as output) if building it failed.
#[unsafe(no_mangle)]
pub extern "C" fn run_write(kind: u32) -> i32 {
    match usize::try_from(kind).ok().and_then(crate::sample) {
        None => NO_SUCH_SAMPLE,
        Some(Err(error)) => {
            set_output(error.to_string().into_bytes());
            BUILD_FAILED
        }
        Some(Ok(sample)) => {
            set_output(sample.bytes);
            OK
        }
    }
}

/// Address of the output buffer.
#[unsafe(no_mangle)]
pub extern "C" fn output_ptr() -> *const u8 {
    OUTPUT.with_borrow(Vec::as_ptr)
}

/// Length of the output buffer.
#[unsafe(no_mangle)]
pub extern "C" fn output_len() -> u32 {
    OUTPUT.with_borrow(|output| u32::try_from(output.len()).unwrap_or(u32::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output() -> Vec<u8> {
        OUTPUT.with_borrow(Clone::clone)
    }

    #[test]
    fn write_then_verify_through_the_buffers_gives_the_expected_record() {
        let sample = crate::sample(0).unwrap().unwrap();
        assert_eq!(run_write(0), OK);
        assert_eq!(output(), sample.bytes);
        assert_eq!(usize::try_from(output_len()).unwrap(), sample.bytes.len());

        assert!(!input_alloc(u32::try_from(sample.bytes.len()).unwrap()).is_null());
        INPUT.with_borrow_mut(|input| input.copy_from_slice(&sample.bytes));
        assert_eq!(run_verify(), OK);
        assert_eq!(output(), sample.expected.to_json().into_bytes());
    }

    #[test]
    fn unknown_sample_numbers_are_reported() {
        assert_eq!(run_write(sample_count()), NO_SUCH_SAMPLE);
        assert_eq!(run_name(sample_count()), NO_SUCH_SAMPLE);
        assert_eq!(run_name(0), OK);
        assert_eq!(output(), crate::sample_name(0).unwrap().as_bytes());
    }
}
