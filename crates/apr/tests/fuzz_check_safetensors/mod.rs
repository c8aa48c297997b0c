//! The body of the `safetensors_import` fuzz target, shared with the stable corpus replay in
//! `tests.rs` (the target includes this file by path).
//!
//! Property: any bytes are imported or refused with a typed error, never a panic; whatever
//! imports converts to f32 tensor by tensor, and exports to SafeTensors bytes that import back
//! to the same tensors (names, dtypes, shapes, order, data).

use envelope_core::Signal;

/// SafeTensors bytes, imported alone and with empty `scales.json` / `mins.json` sidecars.
pub(crate) fn safetensors_import(data: &[u8]) {
    for sidecars in [None, Some(&b"{}"[..])] {
        let model = match apr::safetensors::import(data, sidecars, sidecars) {
            Ok(model) => model,
            Err(error) => {
                // Any typed refusal (InvalidFormat, UnsupportedQuantization for an unknown
                // `apr.dtype.*` name, QuantizationCorrupt, Usage for an unsupported dtype), never
                // `Io`: the bytes are in memory. Every message names its signal first.
                assert_ne!(error.signal(), Signal::Io, "{error}");
                assert!(
                    error.to_string().starts_with(error.signal().name()),
                    "{error}"
                );
                continue;
            }
        };
        for tensor in &model.tensors {
            let _ = tensor.to_f32();
        }
        if let Ok(exported) = apr::safetensors::export(&model) {
            let again = apr::safetensors::import(
                &exported.weights,
                exported.scales.as_deref().map(str::as_bytes),
                exported.mins.as_deref().map(str::as_bytes),
            )
            .expect("exported SafeTensors import back");
            assert_eq!(again.tensors, model.tensors);
        }
    }
}
