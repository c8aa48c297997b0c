//! The native side of the wasm round trip.
//!
//! - `native write DIR` builds every sample with the native backends (libzstd), checks it loads
//!   natively as defined, saves it as `DIR/native-<name>`, and writes `DIR/manifest.json`: for
//!   each sample its name, file and the expected JSON record (see `Outcome::to_json`), which
//!   `run.mjs` compares the wasm module's verdicts against.
//! - `native check DIR` verifies every `DIR/wasm-<name>` (written by the wasm module) against the
//!   expected outcome of its sample, including the corrupted one, which must be refused with
//!   `ChecksumMismatch`.
//!
//! Both exit non-zero on any mismatch, after printing every file's result.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a test harness binary reports on the terminal"
)]

use std::path::Path;
use std::process::ExitCode;

use wasm_roundtrip::{Outcome, json_escape_into, samples, verify, verify_record};

const USAGE: &str = "usage: native write DIR | native check DIR";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.as_slice() {
        [command, dir] if command == "write" => write(Path::new(dir)),
        [command, dir] if command == "check" => check(Path::new(dir)),
        _ => Err(USAGE.to_owned()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("native: {message}");
            ExitCode::FAILURE
        }
    }
}

fn write(dir: &Path) -> Result<(), String> {
    let samples = samples().map_err(|error| format!("building the samples: {error}"))?;
    let mut manifest = String::from("{\"samples\":[\n");
    for (number, sample) in samples.iter().enumerate() {
        // A sample that does not load natively as defined would make the wasm side's verdict
        // meaningless: refuse to hand it over.
        let outcome = verify(&sample.bytes);
        if outcome != sample.expected {
            return Err(format!(
                "{}: native verification gives {}, the definition says {}",
                sample.name,
                verify_record(&sample.bytes),
                sample.expected.to_json()
            ));
        }
        let file = format!("native-{}", sample.name);
        save(&dir.join(&file), &sample.bytes)?;
        if number > 0 {
            manifest.push_str(",\n");
        }
        manifest.push_str("{\"name\":\"");
        json_escape_into(&mut manifest, sample.name);
        manifest.push_str("\",\"file\":\"");
        json_escape_into(&mut manifest, &file);
        manifest.push_str("\",\"expect\":");
        manifest.push_str(&sample.expected.to_json());
        manifest.push('}');
    }
    manifest.push_str("\n]}\n");
    save(&dir.join("manifest.json"), manifest.as_bytes())?;
    println!(
        "native: wrote {} files and manifest.json to {}",
        samples.len(),
        dir.display()
    );
    Ok(())
}

fn check(dir: &Path) -> Result<(), String> {
    let samples = samples().map_err(|error| format!("building the samples: {error}"))?;
    let mut failures = 0usize;
    for sample in &samples {
        let path = dir.join(format!("wasm-{}", sample.name));
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) => {
                println!("FAIL {}: {error}", path.display());
                failures += 1;
                continue;
            }
        };
        let outcome = verify(&bytes);
        let same_as_native = if bytes == sample.bytes {
            "identical to the native file"
        } else {
            "differs from the native file"
        };
        if outcome == sample.expected {
            let what = match &outcome {
                Outcome::Loaded(loaded) => format!(
                    "loaded, {} payload bytes, crc32 {:08x}",
                    loaded.payload_len, loaded.payload_crc32
                ),
                Outcome::Refused(signal) => format!("refused with {signal} as expected"),
            };
            println!(
                "ok   {} ({what}; {} bytes, {same_as_native})",
                file_name(&path),
                bytes.len()
            );
        } else {
            println!(
                "FAIL {}: got {}, expected {}",
                file_name(&path),
                verify_record(&bytes),
                sample.expected.to_json()
            );
            failures += 1;
        }
    }
    if failures > 0 {
        return Err(format!(
            "{failures} of {} wasm-written files failed",
            samples.len()
        ));
    }
    println!(
        "native: all {} wasm-written files verified as expected",
        samples.len()
    );
    Ok(())
}

fn save(path: &Path, bytes: &[u8]) -> Result<(), String> {
    std::fs::write(path, bytes).map_err(|error| format!("writing {}: {error}", path.display()))
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(String::new, |name| name.to_string_lossy().into_owned())
}
