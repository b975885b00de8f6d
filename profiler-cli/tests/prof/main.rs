//! The `prof` binary's tests, one binary: each module is one subject, run as a user runs `prof`
//! (the binary itself, on the profiles under `tests/data/`). One binary rather than one per file:
//! cargo runs test binaries one after another, so a long test (the large profiles, the HTML page
//! in Chromium) held the machine's second core idle; here the modules' tests share the test
//! threads, and the crate is compiled and linked once.
mod common;

mod ab;
mod advise;
mod cli;
mod continuous;
mod device_memory;
mod diff_corpus;
mod docs;
mod flame;
mod html_chromium;
mod large;
mod layout;
mod names;
mod pprof;
mod trace_hta;
mod trace_perfetto;
mod whatif;
mod work;
