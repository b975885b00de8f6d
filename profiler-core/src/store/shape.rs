//! The `shape` key: the input shape of a run, written by the armed run into storage reserved
//! with its sample, and told apart on the cold path (`prof.json` splits an event's samples by
//! it). On the hot path a shape is a few integers copied into a fixed array: no allocation,
//! hashing or string work; naming and grouping shapes happens at the end.

/// The most numbers (dimensions, over all of a shape's lists) a run's shape keeps; a longer one
/// keeps its first [`MAX_DIMS`] and is marked as cut (`…` where it is written).
pub const MAX_DIMS: usize = 8;

/// A run's shape as the hot path keeps it: up to 8 numbers, grouped in lists (one per input:
/// `32x512, 512x1024`).
///
/// Filled by a [`Shape`] value through [`push`](Dims::push) and [`end`](Dims::end); read on the
/// cold path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dims {
    dims: [u64; MAX_DIMS],
    /// How many numbers were pushed, at most `MAX_DIMS + 1` (which says the shape was cut).
    len: u8,
    /// Bit `i`: a list ends after number `i`.
    ends: u8,
}

impl Default for Dims {
    fn default() -> Dims {
        Dims::EMPTY
    }
}

impl Dims {
    /// No shape (a run of a probe without the key, or one not measured).
    pub const EMPTY: Dims = Dims {
        dims: [0; MAX_DIMS],
        len: 0,
        ends: 0,
    };

    /// Adds one dimension to the current list.
    #[inline(always)]
    pub fn push(&mut self, dim: u64) {
        if let Some(slot) = self.dims.get_mut(self.len as usize) {
            *slot = dim;
        }
        self.len = (self.len + 1).min(MAX_DIMS as u8 + 1);
    }

    /// Ends the current list: the next dimension starts another (`32x512, 512x1024`). Ending an
    /// empty or already ended list does nothing.
    #[inline(always)]
    pub fn end(&mut self) {
        let n = self.len as usize;
        if (1..=MAX_DIMS).contains(&n) {
            self.ends |= 1 << (n - 1);
        }
    }

    /// Whether no dimension was pushed.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The shape packed into `MAX_DIMS + 1` words (the last: the count and the list ends), as
    /// sample storage keeps it.
    #[inline(always)]
    pub(crate) fn pack(&self) -> [u64; MAX_DIMS + 1] {
        let mut out = [0; MAX_DIMS + 1];
        out[..MAX_DIMS].copy_from_slice(&self.dims);
        out[MAX_DIMS] = u64::from(self.len) | (u64::from(self.ends) << 8);
        out
    }

    /// The shape [`pack`](Dims::pack) made.
    pub(crate) fn unpack(words: &[u64; MAX_DIMS + 1]) -> Dims {
        let mut dims = [0; MAX_DIMS];
        dims.copy_from_slice(&words[..MAX_DIMS]);
        Dims {
            dims,
            len: (words[MAX_DIMS] & 0xff) as u8,
            ends: ((words[MAX_DIMS] >> 8) & 0xff) as u8,
        }
    }

    /// The shape as `prof.json` writes it: each list's numbers joined by `x`, the lists by
    /// `, `, and `…` after a shape cut at 8 numbers; `()` for a shape with no
    /// number (a key whose value had none, such as an empty slice).
    pub fn render(&self) -> String {
        let kept = (self.len as usize).min(MAX_DIMS);
        if kept == 0 {
            return "()".to_owned();
        }
        let mut out = String::new();
        for (i, dim) in self.dims[..kept].iter().enumerate() {
            out.push_str(&dim.to_string());
            if i + 1 < kept {
                out.push_str(if self.ends & (1 << i) != 0 { ", " } else { "x" });
            }
        }
        if self.len as usize > MAX_DIMS {
            out.push('…');
        }
        out
    }
}

/// What a `shape = <expr>` key may give: integers (one dimension each), slices, arrays, `Vec`s
/// and tuples of them (a slice, array, `Vec` or tuple is one list; nested ones give one list
/// each), and references to any of these. `shape = (m, n)` is `32x512`; `shape = (x.dims(),
/// w.dims())` is `32x512, 512x1024`.
///
/// Implement it for a tensor type of your own by pushing its dimensions and ending the list:
///
/// ```
/// struct Tensor { dims: Vec<usize> }
/// impl profiler_core::Shape for Tensor {
///     fn dims(&self, out: &mut profiler_core::Dims) {
///         self.dims.as_slice().dims(out)
///     }
/// }
/// ```
///
/// Only a run whose event is armed evaluates the key and calls this, before its start mark.
#[diagnostic::on_unimplemented(
    message = "a `shape` key takes integers, slices, arrays, `Vec`s or tuples of them, not `{Self}`",
    label = "not a shape",
    note = "implement `profiler_core::Shape` for the type to use it as a shape"
)]
pub trait Shape {
    /// Pushes this value's dimensions into `out`.
    fn dims(&self, out: &mut Dims);
}

macro_rules! shape_int {
    ($($t:ty),*) => {$(
        impl Shape for $t {
            #[inline(always)]
            fn dims(&self, out: &mut Dims) {
                out.push(u64::try_from(*self).unwrap_or(0));
            }
        }
    )*};
}
shape_int!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize);

impl<T: Shape> Shape for [T] {
    #[inline]
    fn dims(&self, out: &mut Dims) {
        for item in self {
            item.dims(out);
        }
        out.end();
    }
}

impl<T: Shape, const N: usize> Shape for [T; N] {
    #[inline]
    fn dims(&self, out: &mut Dims) {
        self.as_slice().dims(out)
    }
}

impl<T: Shape> Shape for Vec<T> {
    #[inline]
    fn dims(&self, out: &mut Dims) {
        self.as_slice().dims(out)
    }
}

impl<T: Shape + ?Sized> Shape for &T {
    #[inline(always)]
    fn dims(&self, out: &mut Dims) {
        (**self).dims(out)
    }
}

impl<T: Shape + ?Sized> Shape for &mut T {
    #[inline(always)]
    fn dims(&self, out: &mut Dims) {
        (**self).dims(out)
    }
}

macro_rules! shape_tuple {
    ($($name:ident),+) => {
        impl<$($name: Shape),+> Shape for ($($name,)+) {
            #[inline]
            #[allow(non_snake_case)]
            fn dims(&self, out: &mut Dims) {
                let ($($name,)+) = self;
                $($name.dims(out);)+
                out.end();
            }
        }
    };
}
shape_tuple!(A);
shape_tuple!(A, B);
shape_tuple!(A, B, C);
shape_tuple!(A, B, C, D);
shape_tuple!(A, B, C, D, E);
shape_tuple!(A, B, C, D, E, F);

/// The shape of `value` (the macros wrap a `shape` key's expression in it).
#[inline(always)]
pub fn shape_of<T: Shape + ?Sized>(value: &T) -> Dims {
    let mut out = Dims::EMPTY;
    value.dims(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_render_as_lists_of_dimensions() {
        assert_eq!(shape_of(&(32, 512)).render(), "32x512");
        assert_eq!(shape_of(&7usize).render(), "7");
        let x: &[usize] = &[32, 512];
        let w = vec![512u32, 1024];
        assert_eq!(shape_of(&(x, &w)).render(), "32x512, 512x1024");
        assert_eq!(shape_of(&((4, 8), [8, 2])).render(), "4x8, 8x2");
        assert_eq!(shape_of(&[[1, 2], [3, 4]]).render(), "1x2, 3x4");
        let empty: &[u64] = &[];
        assert_eq!(shape_of(&empty).render(), "()");
        assert_eq!(shape_of(&-3i32).render(), "0");
    }

    #[test]
    fn a_long_shape_is_cut_and_marked() {
        let long: Vec<u64> = (1..=10).collect();
        let dims = shape_of(&long);
        assert_eq!(dims.render(), "1x2x3x4x5x6x7x8…");
        // Two shapes cut alike are one shape.
        assert_eq!(dims, shape_of(&(1..=9).collect::<Vec<u64>>()));
        assert_eq!(
            shape_of(&[(1..=8).collect::<Vec<u64>>()]).render(),
            "1x2x3x4x5x6x7x8"
        );
    }

    #[test]
    fn packing_keeps_the_shape() {
        for dims in [
            shape_of(&(3, 4)),
            shape_of(&((1, 2), (3,), [4, 5, 6])),
            Dims::EMPTY,
            shape_of(&(0..20).collect::<Vec<u64>>()),
        ] {
            assert_eq!(Dims::unpack(&dims.pack()), dims);
        }
    }
}
