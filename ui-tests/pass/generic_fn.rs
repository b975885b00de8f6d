use profiler_core::profiled;
use std::fmt::Debug;

#[profiled(layer = "generic")]
fn longest<'a, 'b: 'a, T>(a: &'a [T], b: &'b [T]) -> &'a [T]
where
    T: Debug + Clone,
{
    if a.len() >= b.len() {
        a
    } else {
        b
    }
}

#[profiled]
fn sum<I: IntoIterator<Item = u32>, const N: usize>(items: I) -> u32 {
    items.into_iter().sum::<u32>() + N as u32
}

struct Wrapper<T>(T);

impl<T: Clone> Wrapper<T> {
    #[profiled(layer = "generic", phase = "fwd")]
    fn get<U>(&self, f: impl Fn(T) -> U) -> U
    where
        U: Default,
    {
        f(self.0.clone())
    }
}

fn main() {
    assert_eq!(longest(&[1, 2], &[3]), &[1, 2]);
    assert_eq!(longest::<String>(&[], &["x".to_string()]).len(), 1);
    assert_eq!(sum::<_, 1>(vec![1, 2]), 4);
    assert_eq!(Wrapper(2u8).get(|x| x as u32 + 1), 3);
}
