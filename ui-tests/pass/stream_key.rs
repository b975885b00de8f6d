use profiler_core::{probe, profiled};

struct Stream(u32);

struct Layer {
    stream: Stream,
}

impl Layer {
    // Never evaluated without `cuda`: the expression may even name `self`.
    #[profiled(layer = "gpu", phase = "fwd", stream = &self.stream)]
    fn forward(&self) -> u32 {
        self.stream.0
    }
}

#[profiled(stream = Stream(0), layer = "gpu")]
fn free() {}

fn main() {
    let s = Stream(7);
    let _p = probe!("copy", layer = "gpu", stream = &s);
    let v = probe!("kernel", stream = &s, phase = "fwd" => { s.0 + 1 });
    assert_eq!(v, 8);
    assert_eq!(Layer { stream: Stream(3) }.forward(), 3);
    free();
}
