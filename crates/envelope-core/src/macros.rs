//! Two shapes the envelope family's vocabulary repeats, written once: fieldless enums whose
//! variants each have one fixed name (the Andon signals, the sections, the compression ids), and
//! one-byte flag sets (the header's flags, the license block's flags).

/// Defines a fieldless enum, its `name(self) -> &'static str` (each variant's literal) and a
/// `Display` that writes that name. Attributes after the variants document `name`.
macro_rules! named_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $enum:ident {
            $(
                $(#[$variant_meta:meta])*
                $variant:ident $(= $value:literal)? => $text:literal,
            )*
        }
        $(#[$name_meta:meta])*
        fn name;
    ) => {
        $(#[$meta])*
        $vis enum $enum {
            $(
                $(#[$variant_meta])*
                $variant $(= $value)?,
            )*
        }

        impl $enum {
            $(#[$name_meta])*
            #[must_use]
            pub const fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => $text,)*
                }
            }
        }

        impl core::fmt::Display for $enum {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

pub(crate) use named_enum;

/// The set operations of a one-byte flag type (a tuple struct around a `u8`): `bits`,
/// `contains`, `with` and `without`. The header's [`Flags`](crate::Flags) and
/// `envelope_license::LicenseFlags` share them; each keeps its own constants and its own
/// `from_bits`, since which bits are reserved (and the error for one) differs.
///
/// ```
/// #[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// struct Bits(u8);
/// envelope_core::flag_byte_ops!(Bits);
///
/// let both = Bits(1).with(Bits(4));
/// assert_eq!(both.bits(), 5);
/// assert!(both.contains(Bits(4)) && !both.without(Bits(4)).contains(Bits(4)));
/// ```
#[macro_export]
macro_rules! flag_byte_ops {
    ($flags:ident) => {
        impl $flags {
            /// The raw byte.
            #[must_use]
            pub const fn bits(self) -> u8 {
                self.0
            }

            /// Whether every bit of `other` is set.
            #[must_use]
            pub const fn contains(self, other: Self) -> bool {
                self.0 & other.0 == other.0
            }

            /// These flags with `other`'s bits also set.
            #[must_use]
            pub const fn with(self, other: Self) -> Self {
                Self(self.0 | other.0)
            }

            /// These flags with `other`'s bits cleared.
            #[must_use]
            pub const fn without(self, other: Self) -> Self {
                Self(self.0 & !other.0)
            }
        }
    };
}
