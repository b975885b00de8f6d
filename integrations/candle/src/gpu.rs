//! The CUDA device (feature `cuda`): where the model runs, and the stream its probes name.

use candle_core::{Device, Result};
use profiler_core::device::{AsStream, Stream};

/// GPU 0 through candle, or why not (candle's error, with what this build needs).
pub fn device() -> Result<Device> {
    Device::new_cuda(0).map_err(|e| {
        candle_core::Error::Msg(format!(
            "no CUDA GPU for this `cuda` build ({e}); it needs an NVIDIA GPU and its driver"
        ))
    })
}

/// The stream candle queues `device`'s work on, `CudaDevice::cuda_stream()`: a probe that names
/// it is timed there with CUDA events, so its samples are GPU time. A `cuda` build runs every
/// tensor on GPU 0, so the other arm is not taken; were it, the handle 0 of GPU 0 names no
/// stream candle uses, and its samples would show as lost rather than as wrong times.
pub fn stream(device: &Device) -> Stream {
    match device {
        Device::Cuda(cuda) => cuda.cuda_stream().as_stream(),
        _ => Stream::new(0, 0),
    }
}
