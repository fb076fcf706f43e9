//! The setters and getters of the config types, written once: a setter
//! `NAME(value)` sets its field and returns the config, a getter
//! `get_NAME()` reads it. The getter cannot share the setter's name, so it
//! takes the `get_` prefix, as `std::process::Command::get_args` does.

/// Writes setters and getters. The entry `set NAME: TYPE;` writes the
/// setter, with the doc comments above the entry. `set NAME: TYPE,
/// get_NAME -> RET, copy;` also writes the getter, which returns the field
/// copied; with `ref` in place of `copy` it returns it borrowed. `get NAME,
/// get_NAME -> RET, copy;` writes the getter alone, beside a setter written
/// by hand.
macro_rules! config_fields {
    ($($(#[$doc:meta])* $kind:ident $field:ident $(: $ty:ty)? $(, $get:ident -> $ret:ty, $by:ident)?;)*) => {
        $(config_fields!(@$kind [$(#[$doc])*] $field $(: $ty)? $(, $get -> $ret, $by)?);)*
    };
    (@set [$($doc:tt)*] $field:ident: $ty:ty $(, $get:ident -> $ret:ty, $by:ident)?) => {
        $($doc)*
        pub fn $field(mut self, value: $ty) -> Self {
            self.$field = value;
            self
        }
        $(config_fields!(@get [] $field, $get -> $ret, $by);)?
    };
    (@get [] $field:ident, $get:ident -> $ret:ty, copy) => {
        #[doc = concat!("What [`", stringify!($field), "`](Self::", stringify!($field), ") set.")]
        pub fn $get(&self) -> $ret {
            self.$field
        }
    };
    (@get [] $field:ident, $get:ident -> $ret:ty, ref) => {
        #[doc = concat!("What [`", stringify!($field), "`](Self::", stringify!($field), ") set.")]
        pub fn $get(&self) -> $ret {
            &self.$field
        }
    };
}
