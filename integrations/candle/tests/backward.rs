//! candle's backward pass by layer (`candle_example::backward`), checked without timing: spies
//! (identity custom ops) inside each layer record which `<layer>/bwd` runs are open when candle's
//! walk reaches them, and each layer's runs are counted.
#![cfg(feature = "profile")]

use std::sync::{Arc, Mutex};

use candle_core::{CpuStorage, CustomOp1, DType, Device, Layout, Module, Result, Shape, Tensor};
use candle_example::backward::{backward, bwd_runs, layer, open_layers, Layer};
use candle_nn::{Conv2dConfig, VarBuilder, VarMap};

/// What the spies saw: (spy's name, the layers open when its backward ran).
type Seen = Arc<Mutex<Vec<(&'static str, Vec<String>)>>>;

/// An identity op that records the open layers when candle runs its backward.
struct Spy {
    name: &'static str,
    seen: Seen,
}

impl CustomOp1 for Spy {
    fn name(&self) -> &'static str {
        "spy"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let CpuStorage::F32(v) = storage else {
            unreachable!("f32 tensors only");
        };
        let (start, end) = layout.contiguous_offsets().expect("contiguous");
        Ok((
            CpuStorage::F32(v[start..end].to_vec()),
            layout.shape().clone(),
        ))
    }

    fn bwd(&self, _arg: &Tensor, _res: &Tensor, grad: &Tensor) -> Result<Option<Tensor>> {
        self.seen.lock().unwrap().push((self.name, open_layers()));
        Ok(Some(grad.clone()))
    }
}

fn spy(xs: &Tensor, name: &'static str, seen: &Seen) -> Result<Tensor> {
    xs.contiguous()?.apply_op1(Spy {
        name,
        seen: seen.clone(),
    })
}

/// The spies' records, each with the layers open, as `&str`s.
fn seen(seen: &Seen) -> Vec<(&'static str, Vec<String>)> {
    std::mem::take(&mut *seen.lock().unwrap())
}

fn open(layers: &[&str]) -> Vec<String> {
    layers.iter().map(|s| s.to_string()).collect()
}

/// A three-layer MLP; spies at the start and the end of each layer's ops, and one between
/// layers and one after the last, outside every layer.
#[test]
fn an_mlps_backward_steps_run_inside_their_layers_markers() -> Result<()> {
    let dev = Device::Cpu;
    let varmap = VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F32, &dev);
    let fc1 = candle_nn::linear(6, 16, vb.pp("fc1"))?;
    let fc2 = candle_nn::linear(16, 16, vb.pp("fc2"))?;
    let fc3 = candle_nn::linear(16, 3, vb.pp("fc3"))?;
    let x = Tensor::randn(0f32, 1., (5, 6), &dev)?;
    let s: Seen = Seen::default();

    let iterations = 3;
    for _ in 0..iterations {
        let h = layer("fc1", &x, |x| {
            let h = fc1.forward(x)?;
            spy(&h, "fc1.end", &s)?.relu()
        })?;
        let h = spy(&h, "between", &s)?;
        let h = layer("fc2", &h, |h| {
            let h = spy(h, "fc2.start", &s)?;
            spy(&fc2.forward(&h)?.relu()?, "fc2.end", &s)
        })?;
        let y = layer("fc3", &h, |h| fc3.forward(&spy(h, "fc3.start", &s)?))?;
        let loss = spy(&y, "loss", &s)?.sqr()?.mean_all()?;
        let _grads = backward(&loss)?;
        assert!(open_layers().is_empty(), "every run closed after backward");
        assert_eq!(
            seen(&s),
            vec![
                ("loss", open(&[])),
                ("fc3.start", open(&["fc3"])),
                ("fc2.end", open(&["fc2"])),
                ("fc2.start", open(&["fc2"])),
                ("between", open(&[])),
                ("fc1.end", open(&["fc1"])),
            ]
        );
    }
    assert_eq!(
        bwd_runs(),
        vec![
            ("fc1".to_string(), iterations),
            ("fc2".to_string(), iterations),
            ("fc3".to_string(), iterations)
        ]
    );
    Ok(())
}

/// Two conv layers, a pooled linear head, and a block holding two layers of its own around a
/// residual connection: runs nest, and the residual add outside the inner layers belongs to
/// the block.
#[test]
fn conv_layers_and_nested_blocks() -> Result<()> {
    let dev = Device::Cpu;
    let varmap = VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F32, &dev);
    let cfg = Conv2dConfig {
        padding: 1,
        ..Default::default()
    };
    let conv1 = Layer::new("conv1", candle_nn::conv2d(2, 4, 3, cfg, vb.pp("conv1"))?);
    let conv2 = candle_nn::conv2d(4, 4, 3, cfg, vb.pp("conv2"))?;
    let conv3 = candle_nn::conv2d(4, 4, 3, cfg, vb.pp("conv3"))?;
    let head = candle_nn::linear(4, 2, vb.pp("head"))?;
    let x = Tensor::randn(0f32, 1., (2, 2, 6, 6), &dev)?;
    let s: Seen = Seen::default();

    let h = conv1.forward(&x)?.relu()?;
    let h = layer("block", &h, |h| {
        let a = layer("conv2", h, |h| spy(&conv2.forward(h)?, "conv2", &s))?;
        let b = layer("conv3", &a.relu()?, |a| {
            spy(&conv3.forward(a)?, "conv3", &s)
        })?;
        spy(&(h + b)?, "residual", &s)
    })?;
    let y = layer("head", &h.mean((2, 3))?, |h| {
        spy(&head.forward(h)?, "head", &s)
    })?;
    let _grads = backward(&y.sqr()?.mean_all()?)?;
    assert_eq!(
        seen(&s),
        vec![
            ("head", open(&["head"])),
            ("residual", open(&["block"])),
            ("conv3", open(&["block", "conv3"])),
            ("conv2", open(&["block", "conv2"])),
        ]
    );
    assert_eq!(
        bwd_runs(),
        vec![
            ("block".to_string(), 1),
            ("conv1".to_string(), 1),
            ("conv2".to_string(), 1),
            ("conv3".to_string(), 1),
            ("head".to_string(), 1)
        ]
    );
    Ok(())
}

/// The markers are identities: the same gradients with and without them.
#[test]
fn the_markers_leave_the_gradients_unchanged() -> Result<()> {
    let dev = Device::Cpu;
    let varmap = VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F32, &dev);
    let fc1 = candle_nn::linear(4, 8, vb.pp("fc1"))?;
    let fc2 = candle_nn::linear(8, 2, vb.pp("fc2"))?;
    let x = Tensor::randn(0f32, 1., (3, 4), &dev)?;
    let plain = fc2.forward(&fc1.forward(&x)?.tanh()?)?.sqr()?.sum_all()?;
    let marked = layer("fc2", &layer("fc1", &x, |x| fc1.forward(x)?.tanh())?, |h| {
        fc2.forward(h)
    })?
    .sqr()?
    .sum_all()?;
    let (plain, marked) = (plain.backward()?, backward(&marked)?);
    for var in varmap.all_vars() {
        let a = plain.get(&var).unwrap().flatten_all()?.to_vec1::<f32>()?;
        let b = marked.get(&var).unwrap().flatten_all()?.to_vec1::<f32>()?;
        assert_eq!(a, b);
    }
    Ok(())
}

/// `loss.backward()` without the wrapper (candle-nn's `backward_step` does so): the markers
/// open nothing, so no run stays open from one iteration to the next. Before, the first
/// layer's run (its input needs no gradient) stayed open after each walk, one more each
/// iteration, and its `bwd` was never measured. Run on a thread of its own: the runs are the
/// thread's.
#[test]
fn a_walk_outside_backward_leaves_no_run_open() -> Result<()> {
    std::thread::spawn(|| -> Result<()> {
        let dev = Device::Cpu;
        let varmap = VarMap::new();
        let vb = VarBuilder::from_varmap(&varmap, DType::F32, &dev);
        let fc1 = candle_nn::linear(6, 8, vb.pp("fc1"))?;
        let fc2 = candle_nn::linear(8, 3, vb.pp("fc2"))?;
        let x = Tensor::randn(0f32, 1., (5, 6), &dev)?;
        for _ in 0..3 {
            let h = layer("outside.fc1", &x, |x| fc1.forward(x)?.relu())?;
            let y = layer("outside.fc2", &h, |h| fc2.forward(h))?;
            let _grads = y.sqr()?.mean_all()?.backward()?;
            assert!(open_layers().is_empty(), "{:?}", open_layers());
        }
        assert!(bwd_runs().is_empty(), "{:?}", bwd_runs());
        // The wrapper, on the same thread, measures them.
        let h = layer("outside.fc1", &x, |x| fc1.forward(x)?.relu())?;
        let y = layer("outside.fc2", &h, |h| fc2.forward(h))?;
        let _grads = backward(&y.sqr()?.mean_all()?)?;
        assert_eq!(bwd_runs().len(), 2, "{:?}", bwd_runs());
        Ok(())
    })
    .join()
    .unwrap()
}
