//! `alimentar` dataset commands (convert, head, schema, ...).
