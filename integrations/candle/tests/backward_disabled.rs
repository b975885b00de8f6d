//! Without the `profile` feature `candle_example::backward` adds nothing: no markers, no runs;
//! the layers compute what the module computes and `backward` is `loss.backward()`.
#![cfg(not(feature = "profile"))]

use candle_core::{DType, Device, Module, Result, Tensor};
use candle_example::backward::{backward, bwd_runs, layer, open_layers, Layer};
use candle_nn::{VarBuilder, VarMap};

#[test]
fn the_disabled_build_only_calls_the_module() -> Result<()> {
    let dev = Device::Cpu;
    let varmap = VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F32, &dev);
    let fc1 = Layer::new("fc1", candle_nn::linear(4, 8, vb.pp("fc1"))?);
    let fc2 = candle_nn::linear(8, 2, vb.pp("fc2"))?;
    let x = Tensor::randn(0f32, 1., (3, 4), &dev)?;
    let marked = layer("fc2", &fc1.forward(&x)?, |h| fc2.forward(h))?;
    let plain = fc2.forward(&fc1.inner().forward(&x)?)?;
    assert_eq!(marked.to_vec2::<f32>()?, plain.to_vec2::<f32>()?);
    let marked = backward(&marked.sqr()?.sum_all()?)?;
    let plain = plain.sqr()?.sum_all()?.backward()?;
    for var in varmap.all_vars() {
        let a = plain.get(&var).unwrap().flatten_all()?.to_vec1::<f32>()?;
        let b = marked.get(&var).unwrap().flatten_all()?.to_vec1::<f32>()?;
        assert_eq!(a, b);
    }
    // No run was opened: there were no markers.
    assert!(bwd_runs().is_empty());
    assert!(open_layers().is_empty());
    Ok(())
}
