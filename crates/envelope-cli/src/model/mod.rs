//! `apr` model commands (import, quantize, export, ...).
