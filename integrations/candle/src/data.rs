//! Synthetic data: a fixed random linear "teacher" labels Gaussian inputs, so the task is
//! learnable (the loss falls) and nothing is downloaded.

use candle_core::{DType, Device, Result, Tensor, D};

/// Makes batches of `(inputs, labels)`: inputs `[batch, inputs]` from N(0, 1), labels `[batch]`
/// (`u32`) the class the teacher scores highest.
pub struct Teacher {
    weights: Tensor,
    batch: usize,
    device: Device,
}

impl Teacher {
    /// A teacher with random weights `[inputs, classes]`.
    pub fn new(inputs: usize, classes: usize, batch: usize, device: &Device) -> Result<Self> {
        Ok(Self {
            weights: Tensor::randn(0f32, 1f32, (inputs, classes), device)?,
            batch,
            device: device.clone(),
        })
    }

    /// A fresh batch: every iteration sees new samples, so the training loss is also a
    /// held-out loss.
    pub fn batch(&self) -> Result<(Tensor, Tensor)> {
        let _p = profiler_core::probe!(
            "make_batch",
            layer = "data",
            phase = "data",
            stream = crate::gpu::stream(&self.device)
        );
        let (inputs, _) = self.weights.dims2()?;
        let x = Tensor::randn(0f32, 1f32, (self.batch, inputs), &self.device)?;
        let y = x.matmul(&self.weights)?.argmax(D::Minus1)?;
        debug_assert_eq!(y.dtype(), DType::U32);
        Ok((x, y))
    }
}
