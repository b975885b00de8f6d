// `flops` and `bytes` count a run's work with any numeric expression of the arguments, on
// functions, methods, `async fn` and probes; each key alone or both.
use profiler_core::{probe, profiled};

struct Linear {
    inputs: usize,
    outputs: usize,
}

impl Linear {
    #[profiled(layer = "mlp", phase = "fwd",
               flops = 2 * batch * self.inputs * self.outputs,
               bytes = 4 * (batch * self.inputs + self.inputs * self.outputs))]
    fn forward(&self, batch: usize) -> usize {
        batch * self.outputs
    }
}

#[profiled(bytes = ids.len() as u64 * 64)]
fn lookup(ids: &[u32]) -> usize {
    ids.len()
}

#[profiled(flops = 1.5e3)]
async fn scaled(x: i32) -> i32 {
    x
}

fn main() {
    let layer = Linear { inputs: 3, outputs: 2 };
    assert_eq!(layer.forward(4), 8);
    assert_eq!(lookup(&[1, 2]), 2);
    let _ = scaled(1);
    let n: i64 = 7;
    let _p = probe!("allreduce", layer = "mlp", bytes = n * 4);
    let v = probe!("block", flops = n, bytes = 0u8 => { n + 1 });
    assert_eq!(v, 8);
}
