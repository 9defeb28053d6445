//! The frame kinds this build reads and writes ([protocol §4](crate::protocol)),
//! listed once.
//!
//! `known_kinds!` is the one table: its kind byte, its [`Frame`](crate::Frame)
//! variant, the view type (in its own file, with its layout, encoder,
//! `Display` and golden tests) and the constant's name. This module makes
//! the constants and names from it, and `frame.rs` makes the `Frame` enum
//! and every dispatch over it, so a new kind is its file, one line here and
//! its type imported in `frame.rs`.
//!
//! The table names each view type by its bare name, resolved where the
//! table is expanded: `frame.rs` imports them, and this module, which
//! ignores them, imports none. Every kind's file uses this one for its
//! byte, so naming the views here by path would tie them all into a
//! circle through it.

/// Calls `$then!` with every known kind: `byte => Variant(Type), CONSTANT;`,
/// each `Type` a bare name the caller has in scope.
macro_rules! known_kinds {
    ($then:ident) => {
        $then! {
            /// Kind 1: a source's identity and the ordinal later frames carry.
            1 => Handshake(Handshake<'a>), HANDSHAKE;
            /// Kind 2: one entry of the caller's secondary index.
            2 => Index(Index<'a>), INDEX;
            /// Kind 3: live observations.
            3 => Rows(Rows<'a>), ROWS;
            /// Kind 4: a sealed parquet segment.
            4 => Segment(Segment<'a>), SEGMENT;
            /// Kind 5: one clock-drift observation.
            5 => ClockOffset(ClockOffset), CLOCK_OFFSET;
            /// Kind 6: a source's new labels and metadata (added in dendro
            /// 0.6.1; [protocol §4.6](crate::protocol)).
            6 => SourceUpdate(SourceUpdate<'a>), SOURCE_UPDATE;
        }
    };
}
pub(crate) use known_kinds;

/// The constants, [`is_known`] and [`name`], from the table.
macro_rules! kind_constants {
    ($($(#[$doc:meta])* $byte:literal => $variant:ident($ty:ty), $constant:ident;)*) => {
        $(
            #[doc = concat!("[`", stringify!($variant), "`](crate::", stringify!($variant), ").")]
            pub const $constant: u8 = $byte;
        )*

        /// Whether this build reads frames of `kind`; any other is skipped
        /// ([protocol §7](crate::protocol)).
        // The bytes are listed from the table, not written as a range, so
        // a gap in the table cannot be papered over.
        #[allow(clippy::manual_range_patterns)]
        pub const fn is_known(kind: u8) -> bool {
            matches!(kind, $($byte)|*)
        }

        /// The frame's name for a kind byte, as the
        /// [protocol](crate::protocol) writes it; `"unknown"` for a kind
        /// this build does not read.
        pub const fn name(kind: u8) -> &'static str {
            match kind {
                $($byte => stringify!($variant),)*
                _ => "unknown",
            }
        }
    };
}

known_kinds!(kind_constants);
