// Denied here so that the disabled build of the block form with keys is checked to leave no
// braces of its own around the block (rustc flagged `{ keys; { .. } }` as `unused_braces`).
#![deny(unused_braces)]

// `flops` and `bytes` count a run's work with any numeric expression of the arguments, on
// functions, methods, `async fn` and probes; each key alone or both. `shape` takes integers,
// slices, arrays, `Vec`s, tuples of them, and a type of the user's that implements `Shape`
// (which compiles in the disabled build too).
use profiler_core::{probe, profiled};

struct Tensor {
    dims: Vec<usize>,
}

impl profiler_core::Shape for Tensor {
    fn dims(&self, out: &mut profiler_core::Dims) {
        self.dims.as_slice().dims(out)
    }
}

#[profiled(layer = "mlp", shape = (x, w), flops = 2 * x.dims.iter().product::<usize>())]
fn matmul(x: &Tensor, w: &Tensor) -> usize {
    x.dims.len() + w.dims.len()
}

#[profiled(shape = (ids.len(), [8u32, 4]), bytes = 4 * ids.len())]
fn gather(ids: &[u32]) -> usize {
    ids.len()
}

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
    let layer = Linear {
        inputs: 3,
        outputs: 2,
    };
    assert_eq!(layer.forward(4), 8);
    assert_eq!(lookup(&[1, 2]), 2);
    drop(scaled(1));
    let n: i64 = 7;
    let _p = probe!("allreduce", layer = "mlp", bytes = n * 4);
    let v = probe!("block", flops = n, bytes = 0u8 => { n + 1 });
    assert_eq!(v, 8);
    let x = Tensor { dims: vec![2, 3] };
    let w = Tensor { dims: vec![3, 4] };
    assert_eq!(matmul(&x, &w), 4);
    assert_eq!(gather(&[1, 2, 3]), 3);
    let dims: &[usize] = &x.dims;
    let _s = probe!("shaped", shape = dims);
    let u = probe!("vec", shape = vec![1u64, 2] => { 5 });
    assert_eq!(u, 5);
}
