//! The driver (to check it), CUPTI and NVTX, opened with `libloading` by this crate rather than through `cudarc`'s `cupti`
//! and `nvtx` features: when another crate in the build (candle, burn) picks `cudarc`'s
//! `dynamic-linking`, those features would link `libcupti` and `libnvToolsExt` into every binary,
//! making optional tools hard requirements (and CUDA 13 ships no `libnvToolsExt` at all). Opened
//! here, they stay optional whatever the rest of the build chooses, and the names tried include
//! the NVTX 3 interop library that NVIDIA's packages ship in place of `libnvToolsExt`.
//!
//! Each entry point is declared once in an [`api!`] table, which gives its Rust type, the symbol
//! it is loaded from and (for the header test, `headers.rs`) its C signature in the headers' own
//! type names.

use std::ffi::OsStr;

/// A shared library, opened by the first candidate name that loads, kept for the process.
#[derive(Debug)]
pub(crate) struct Library {
    lib: libloading::Library,
    /// The name (or path) it was opened by, for messages.
    pub(crate) name: String,
}

impl Library {
    /// Opens the first of `candidates` that loads (bare names are searched the dynamic
    /// loader's way; paths are opened as they are).
    pub(crate) fn open<S: AsRef<OsStr>>(what: &str, candidates: &[S]) -> Result<Library, String> {
        for candidate in candidates {
            // SAFETY: loading a library runs its initializers; the CUPTI and NVTX libraries
            // are NVIDIA's, whose initializers only set up their own state.
            if let Ok(lib) = unsafe { libloading::Library::new(candidate.as_ref()) } {
                return Ok(Library {
                    lib,
                    name: candidate.as_ref().to_string_lossy().into_owned(),
                });
            }
        }
        let names: Vec<_> = candidates
            .iter()
            .map(|c| c.as_ref().to_string_lossy().into_owned())
            .collect();
        Err(format!(
            "{what} could not be loaded (tried {}; add its directory to LD_LIBRARY_PATH)",
            names.join(", ")
        ))
    }

    /// The address of `symbol` as a function pointer of type `T`.
    ///
    /// # Safety
    /// `T` must be the function's true type (checked against the headers by `headers.rs`).
    pub(crate) unsafe fn get<T: Copy>(&self, symbol: &str) -> Result<T, String> {
        // SAFETY: the caller vouches for the type; the pointer is copied out and stays valid
        // as long as the library, which lives for the process (see `leak`).
        unsafe { self.lib.get::<T>(symbol.as_bytes()) }
            .map(|f| *f)
            .map_err(|_| format!("{} does not export {symbol}", self.name))
    }

    /// Whether the library exports `symbol` (nothing is called).
    pub(crate) fn has(&self, symbol: &str) -> bool {
        // SAFETY: only a look-up; the pointer type is never called through.
        unsafe { self.get::<unsafe extern "C" fn()>(symbol) }.is_ok()
    }
}

/// Declares a table of C entry points: the struct of function pointers, `SYMBOLS`, a loader
/// that resolves them all or says which one is missing, and (in tests) `SIGNATURES`, each
/// function's C return and argument types spelled with the headers' type names, for the header
/// test to compile against the real prototypes.
macro_rules! api {
    (
        $(#[$meta:meta])*
        struct $api:ident {
            $( $field:ident = $symbol:literal : fn($($arg:ty),*) -> $ret:ty; )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy)]
        pub(crate) struct $api {
            $( pub(crate) $field: unsafe extern "C" fn($($arg),*) -> $ret, )*
        }

        impl $api {
            /// Every symbol of the table.
            #[allow(dead_code)]
            pub(crate) const SYMBOLS: &'static [&'static str] = &[$($symbol),*];

            /// The C signature of each entry: symbol, return type, argument types.
            #[cfg(test)]
            pub(crate) const SIGNATURES: &'static [(&'static str, &'static str, &'static [&'static str])] =
                &[$( ($symbol, stringify!($ret), &[$(stringify!($arg)),*]) ),*];

            /// Resolves every entry in `lib`; `Err` names the first one missing.
            pub(crate) fn load(lib: &$crate::instrument::device::cuda::loader::Library) -> Result<Self, String> {
                Ok(Self {
                    // SAFETY: each type is the one the headers declare (checked by the header
                    // test, `headers.rs`).
                    $( $field: unsafe { lib.get($symbol)? }, )*
                })
            }
        }

        impl std::fmt::Debug for $api {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($api)).finish_non_exhaustive()
            }
        }
    };
}

pub(crate) use api;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_library_that_is_not_there_is_an_error_naming_what_was_tried_and_the_fix() {
        let err = Library::open(
            "the XYZ library",
            &["libprof-nothing.so.9", "/nonexistent/x.so"],
        )
        .unwrap_err();
        assert!(
            err.starts_with("the XYZ library could not be loaded"),
            "{err}"
        );
        assert!(
            err.contains("libprof-nothing.so.9, /nonexistent/x.so"),
            "{err}"
        );
        assert!(err.contains("LD_LIBRARY_PATH"), "{err}");
        assert!(!err.contains('\n'), "one line: {err}");
    }

    #[test]
    fn a_missing_symbol_is_an_error_naming_it() {
        // The C library is always there; it exports no CUPTI function.
        let lib = Library::open("libc", &["libc.so.6"]).expect("libc loads");
        assert!(lib.has("malloc"));
        assert!(!lib.has("cuptiActivityEnable"));
        let err = super::super::cupti::Api::load(&lib).unwrap_err();
        assert_eq!(
            err,
            "libc.so.6 does not export cuptiActivityRegisterCallbacks"
        );
    }
}
