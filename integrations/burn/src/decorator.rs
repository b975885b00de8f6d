//! The decorator: [`Profiled<B>`], its tensor primitives ([`Tagged`]), and the `op!` macro that
//! delegates each of burn's backend methods to the inner backend (the lines that use it are
//! generated into `ops.rs` by `scripts/gen_ops.py`).

pub(crate) use std::future::Future;
use std::marker::PhantomData;

pub(crate) use burn_backend::ops::*;
pub(crate) use burn_backend::quantization::QuantizationParametersPrimitive;
pub(crate) use burn_backend::tensor::{
    BoolTensor, Device, FloatTensor, IntTensor, QuantizedTensor,
};
pub(crate) use burn_backend::*;
pub(crate) use burn_std::quantization::{QuantAcc, QuantPropagation};
pub(crate) use burn_std::QuantScheme;
pub(crate) use core::ops::Range;

use crate::attribution::{OpRun, Stamp};

/// A burn backend that runs every tensor operation on the backend `B` and measures it as a
/// runtime probe of profiler-core: its name (`conv2d`, `float_matmul`, `conv2d_x_backward`),
/// the shapes of its tensor inputs, and the layer it belongs to (see the crate's docs). Used
/// under burn's autodiff as `Autodiff<Profiled<NdArray>>`; the crate's [`Backend`](crate::Backend)
/// alias names that type.
#[derive(Clone, Debug, Default)]
pub struct Profiled<B> {
    _inner: PhantomData<B>,
}

/// A tensor primitive of [`Profiled<B>`]: the inner backend's primitive and the stamp that
/// says which layer made it and which layer last read it (see the crate's docs).
#[derive(Clone, Debug)]
pub struct Tagged<T> {
    pub(crate) inner: T,
    pub(crate) stamp: Stamp,
}

impl<T> Tagged<T> {
    /// The inner backend's primitive.
    pub fn into_inner(self) -> T {
        self.inner
    }
}

impl<T: TensorMetadata> TensorMetadata for Tagged<T> {
    fn dtype(&self) -> DType {
        self.inner.dtype()
    }

    fn shape(&self) -> Shape {
        self.inner.shape()
    }

    fn rank(&self) -> usize {
        self.inner.rank()
    }
}

impl<T: TensorMetadata> Tagged<T> {
    /// The dimensions, for the probe's `shape` (read only when the op's event is armed).
    pub(crate) fn dims(&self) -> Vec<usize> {
        self.inner.shape().to_vec()
    }
}

impl<B: Backend> BackendTypes for Profiled<B> {
    type Device = B::Device;
    type FloatTensorPrimitive = Tagged<B::FloatTensorPrimitive>;
    type IntTensorPrimitive = Tagged<B::IntTensorPrimitive>;
    type BoolTensorPrimitive = Tagged<B::BoolTensorPrimitive>;
    type QuantizedTensorPrimitive = Tagged<B::QuantizedTensorPrimitive>;
    type FloatElem = B::FloatElem;
    type IntElem = B::IntElem;
    type BoolElem = B::BoolElem;
}

impl<T: QTensorPrimitive> QTensorPrimitive for Tagged<T> {
    fn scheme(&self) -> &QuantScheme {
        self.inner.scheme()
    }

    fn acc_precision(&self) -> QuantAcc {
        self.inner.acc_precision()
    }

    fn propagation(&self) -> QuantPropagation {
        self.inner.propagation()
    }
}

impl<B: Backend> Backend for Profiled<B> {
    fn name(device: &Self::Device) -> String {
        format!("profiled<{}>", B::name(device))
    }

    fn seed(device: &Self::Device, seed: u64) {
        B::seed(device, seed)
    }

    fn sync(device: &Self::Device) -> Result<(), ExecutionError> {
        B::sync(device)
    }

    fn memory_cleanup(device: &Self::Device) {
        B::memory_cleanup(device)
    }

    fn dtype_usage(device: &Self::Device, dtype: DType) -> DTypeUsageSet {
        B::dtype_usage(device, dtype)
    }

    fn supports_dtype(device: &Self::Device, dtype: DType) -> bool {
        B::supports_dtype(device, dtype)
    }

    fn device_count(type_id: u16) -> usize {
        B::device_count(type_id)
    }
}

impl<B: Backend> TransactionOps<Self> for Profiled<B> {}

/// Wraps an inner primitive with the stamp of the op that made it.
#[inline]
pub(crate) fn tag<T>(inner: T, run: &OpRun) -> Tagged<T> {
    Tagged {
        inner,
        stamp: run.output(),
    }
}

/// Notes one argument among the op's inputs, by kind (see `op!`).
macro_rules! input {
    ($ins:ident, t, $a:ident) => {
        $ins.push(&$a.stamp, $crate::attribution::Role::Input)
    };
    ($ins:ident, out, $a:ident) => {
        $ins.push(&$a.stamp, $crate::attribution::Role::Output)
    };
    ($ins:ident, r, $a:ident) => {
        $ins.push(&$a.stamp, $crate::attribution::Role::Input)
    };
    ($ins:ident, o, $a:ident) => {
        if let Some(a) = &$a {
            $ins.push(&a.stamp, $crate::attribution::Role::Input)
        }
    };
    ($ins:ident, v, $a:ident) => {
        for a in &$a {
            $ins.push(&a.stamp, $crate::attribution::Role::Input)
        }
    };
    ($ins:ident, qp, $a:ident) => {
        $ins.push(&$a.scales.stamp, $crate::attribution::Role::Input)
    };
    ($ins:ident, p, $a:ident) => {};
}

/// The dimensions of one argument, for the op's shape (tensors only).
macro_rules! dims {
    ($dims:ident, t, $a:ident) => {
        $dims.push($a.dims())
    };
    ($dims:ident, out, $a:ident) => {
        $dims.push($a.dims())
    };
    ($dims:ident, r, $a:ident) => {
        $dims.push($a.dims())
    };
    ($dims:ident, $k:ident, $a:ident) => {};
}

/// One argument as the inner backend takes it.
macro_rules! unwrap {
    (t, $a:ident) => {
        $a.inner
    };
    (out, $a:ident) => {
        $a.inner
    };
    (r, $a:ident) => {
        &$a.inner
    };
    (o, $a:ident) => {
        $a.map(|a| a.inner)
    };
    (v, $a:ident) => {
        $a.into_iter().map(|a| a.inner).collect()
    };
    (qp, $a:ident) => {
        QuantizationParametersPrimitive {
            scales: $a.scales.inner,
        }
    };
    (p, $a:ident) => {
        $a
    };
}

/// The inner backend's result as the decorator returns it, by return kind (see `op!`).
macro_rules! wrap {
    (t, $run:ident, $r:expr) => {
        tag($r, &$run)
    };
    (p, $run:ident, $r:expr) => {
        $r
    };
    (t2, $run:ident, $r:expr) => {{
        let (a, b) = $r;
        (tag(a, &$run), tag(b, &$run))
    }};
    (ft, $run:ident, $r:expr) => {{
        let stamp = $run.output();
        let fut = $run.time($r);
        async move {
            Tagged {
                inner: fut.await,
                stamp,
            }
        }
    }};
    (fp, $run:ident, $r:expr) => {
        $run.time($r)
    };
    (pool1, $run:ident, $r:expr) => {{
        let r = $r;
        MaxPool1dWithIndices::new(tag(r.output, &$run), tag(r.indices, &$run))
    }};
    (pool2, $run:ident, $r:expr) => {{
        let r = $r;
        MaxPool2dWithIndices::new(tag(r.output, &$run), tag(r.indices, &$run))
    }};
    (poolb1, $run:ident, $r:expr) => {
        MaxPool1dBackward::new(tag($r.x_grad, &$run))
    };
    (poolb2, $run:ident, $r:expr) => {
        MaxPool2dBackward::new(tag($r.x_grad, &$run))
    };
    (bnt, $run:ident, $r:expr) => {{
        let r = $r;
        BatchNormTrain::new(
            tag(r.output, &$run),
            tag(r.mean, &$run),
            tag(r.variance, &$run),
        )
    }};
    (bntb, $run:ident, $r:expr) => {{
        let r = $r;
        BatchNormTrainBackward::new(
            tag(r.x_grad, &$run),
            tag(r.gamma_grad, &$run),
            tag(r.beta_grad, &$run),
        )
    }};
    (dcb, $run:ident, $r:expr) => {{
        let r = $r;
        DeformConv2dBackward::new(
            tag(r.x_grad, &$run),
            tag(r.offset_grad, &$run),
            tag(r.weight_grad, &$run),
            r.mask_grad.map(|m| tag(m, &$run)),
            r.bias_grad.map(|b| tag(b, &$run)),
        )
    }};
}

/// One method of a backend op trait, delegated to the inner backend `B`:
/// `op!(<return kind> fn name(arg: <kind> Type, ...) -> Type);`.
///
/// Argument kinds: `t` a tensor, `out` a tensor that is the forward op's output (the `output`
/// of `relu_backward`: attributed to the layer that made it rather than the one that read it),
/// `r` a reference to a tensor, `o` an optional tensor, `v` a `Vec` of tensors, `qp`
/// quantization parameters, `p` anything else (passed as is). Return kinds: `t` a tensor,
/// `t2` a pair, `ft` a future of a tensor, `fp` a future of anything else (both measured as
/// they are polled, not when the op returns), the names of burn's result structs (`pool2`,
/// `bnt`, ...), `p` anything else, and `q` for a query that is delegated without being timed.
macro_rules! op {
    (q fn $name:ident($($a:ident : $k:ident $ty:ty),* $(,)?) -> $rty:ty) => {
        fn $name($($a: $ty),*) -> $rty {
            B::$name($(unwrap!($k, $a)),*)
        }
    };
    // A future: attributed at the call, each poll measured (`attribution::PolledRun`).
    ($rk:ident @polled fn $name:ident($($a:ident : $k:ident $ty:ty),* $(,)?) -> $rty:ty) => {
        #[allow(unused_mut, unused_variables)]
        fn $name($($a: $ty),*) -> $rty {
            let run = {
                let mut ins = $crate::attribution::Inputs::new();
                $(input!(ins, $k, $a);)*
                $crate::attribution::begin_polled(stringify!($name), &ins)
            };
            wrap!($rk, run, B::$name($(unwrap!($k, $a)),*))
        }
    };
    (ft fn $($rest:tt)*) => {
        op!(ft @polled fn $($rest)*);
    };
    (fp fn $($rest:tt)*) => {
        op!(fp @polled fn $($rest)*);
    };
    ($rk:ident fn $name:ident($($a:ident : $k:ident $ty:ty),* $(,)?) -> $rty:ty) => {
        #[allow(unused_mut, unused_variables, clippy::vec_init_then_push)]
        fn $name($($a: $ty),*) -> $rty {
            let run = {
                let mut ins = $crate::attribution::Inputs::new();
                $(input!(ins, $k, $a);)*
                $crate::attribution::begin(stringify!($name), &ins, || {
                    let mut dims: Vec<Vec<usize>> = Vec::new();
                    $(dims!(dims, $k, $a);)*
                    dims
                })
            };
            wrap!($rk, run, B::$name($(unwrap!($k, $a)),*))
        }
    };
}

pub(crate) use {dims, input, op, unwrap, wrap};
