use profiler_core::profiled;
use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

/// Returns `Pending` once, so that annotated futures really suspend.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(value) = future.as_mut().poll(&mut cx) {
            return value;
        }
        std::thread::park();
    }
}

fn assert_send<T: Send>(_: T) {}

#[profiled(layer = "io", phase = "load")]
async fn load(n: u32) -> u32 {
    YieldOnce(false).await;
    n + 1
}

#[profiled(layer = "io", phase = "parse")]
async fn parse(s: &str) -> Result<u32, std::num::ParseIntError> {
    YieldOnce(false).await;
    let n: u32 = s.parse()?;
    if n == 0 {
        return Ok(100);
    }
    Ok(n)
}

#[profiled]
async fn boxed_error(s: String) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let _: u8 = s.parse()?;
    YieldOnce(false).await;
    Ok(())
}

#[profiled]
async fn unit() {
    YieldOnce(false).await;
}

struct Loader {
    base: u32,
}

impl Loader {
    #[profiled(layer = "io", phase = "fetch")]
    async fn fetch(&self, k: u32) -> u32 {
        YieldOnce(false).await;
        self.base + load(k).await
    }

    #[profiled]
    async fn consume(self) -> u32 {
        self.base
    }
}

fn main() {
    assert_eq!(block_on(load(1)), 2);
    assert_eq!(block_on(parse("7")), Ok(7));
    assert_eq!(block_on(parse("0")), Ok(100));
    assert!(block_on(parse("x")).is_err());
    assert!(block_on(boxed_error("1".into())).is_ok());
    assert!(block_on(boxed_error("x".into())).is_err());
    block_on(unit());
    let loader = Loader { base: 10 };
    assert_eq!(block_on(loader.fetch(1)), 12);

    // The annotated futures stay `Send`.
    assert_send(load(1));
    assert_send(parse("1"));
    assert_send(boxed_error(String::new()));
    assert_send(loader.fetch(1));
    assert_send(Loader { base: 1 }.consume());

    // A future dropped before completion records nothing and does not panic.
    drop(load(5));
    profiler_core::step();
}
