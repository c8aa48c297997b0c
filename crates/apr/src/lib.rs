//! The `.apr` model format.
