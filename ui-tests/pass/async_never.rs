// An `async fn` that never returns (`-> !`): the enabled build once wrote a fake return of type
// `!` (unstable) for it. Polled once here, it waits forever, so the program drops it.
use profiler_core::profiled;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

#[profiled(layer = "io")]
async fn serve() -> ! {
    loop {
        std::future::ready(()).await;
        std::future::pending::<()>().await;
    }
}

fn main() {
    let mut cx = Context::from_waker(Waker::noop());
    let mut future = pin!(serve());
    assert!(matches!(future.as_mut().poll(&mut cx), Poll::Pending));
}
