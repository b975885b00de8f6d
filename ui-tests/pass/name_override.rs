use profiler_core::profiled;

#[profiled(name = "embedding_lookup", layer = "embedding", phase = "fwd")]
fn lookup(table: &[f32], id: usize) -> f32 {
    table[id]
}

// A name that is not a valid value is fine with an override.
#[profiled(name = "cafe")]
fn café() -> u32 {
    1
}

// Two functions may share a name; their ids get `.2`.
#[profiled(name = "shared")]
fn first() {}

#[profiled(name = "shared")]
fn second() {}

fn main() {
    assert_eq!(lookup(&[1.0, 2.0], 1), 2.0);
    assert_eq!(café(), 1);
    first();
    second();
}
