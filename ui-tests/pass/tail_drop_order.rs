// In an edition-2021 crate (this package's) the guards of `#[profiled]` and
// `#[profiler_core::main]` must not make `tail_expr_drop_order` (in `rust_2024_compatibility`)
// report the user's tail expression: a guard bound by `let` first in the body was dropped before
// the tail expression's temporaries in 2021 and after them in 2024, which the lint reported.
#![deny(rust_2024_compatibility)]

use profiler_core::{probe, profiled};
use std::process::ExitCode;
use std::sync::Mutex;

static EVENTS: Mutex<Vec<u32>> = Mutex::new(Vec::new());

// The tail expression's temporary (the `MutexGuard`) has a destructor.
#[profiled(layer = "store")]
fn len(m: &Mutex<Vec<u32>>) -> usize {
    m.lock().unwrap().len()
}

struct Store {
    items: Mutex<Vec<u32>>,
}

impl Store {
    #[profiled(layer = "store")]
    fn first(&self) -> Option<u32> {
        self.items.lock().unwrap().first().copied()
    }
}

// The block form's guard is dropped inside its expansion, before the function's tail.
fn twice_len(m: &Mutex<Vec<u32>>) -> usize {
    let n = probe!("len", layer = "store" => { m.lock().unwrap().len() });
    n + m.lock().unwrap().len()
}

#[profiler_core::main]
fn main() -> ExitCode {
    let m = Mutex::new(vec![1, 2]);
    assert_eq!(len(&m), 2);
    assert_eq!(twice_len(&m), 4);
    let store = Store {
        items: Mutex::new(vec![3]),
    };
    assert_eq!(store.first(), Some(3));
    ExitCode::from(u8::from(!EVENTS.lock().unwrap().is_empty()))
}
