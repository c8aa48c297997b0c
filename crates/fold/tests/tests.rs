//! Integration tests of the `fold` crate: one binary, modules under `suite/`.

mod suite;
