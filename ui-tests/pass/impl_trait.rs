use profiler_core::profiled;

#[profiled(layer = "data", phase = "load")]
fn batches(n: u32) -> impl Iterator<Item = u32> {
    (0..n).map(|i| i * 2)
}

#[profiled]
fn adder(k: u32) -> impl Fn(u32) -> u32 {
    move |x| x + k
}

#[profiled]
fn boxed<'a>(v: &'a [u32]) -> Box<dyn Iterator<Item = &'a u32> + 'a> {
    Box::new(v.iter())
}

fn takes_impl(it: impl IntoIterator<Item = u32>) -> u32 {
    it.into_iter().sum()
}

fn main() {
    assert_eq!(batches(3).collect::<Vec<_>>(), vec![0, 2, 4]);
    assert_eq!(adder(1)(2), 3);
    assert_eq!(boxed(&[1, 2]).count(), 2);
    assert_eq!(takes_impl(batches(2)), 2);
}
