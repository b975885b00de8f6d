//! Clocks for tests: a [`FakeClock`] whose durations are exact and scripted, so that tests of the
//! schedule never sleep, and a [`SimDevice`], a simulated GPU with per-stream queues, for the
//! stream and kernel logic without a GPU. Pass them to [`init_with`](crate::init_with) and
//! [`init_with_device`](crate::init_with_device).

pub use crate::instrument::clock::FakeClock;
pub use crate::instrument::device::sim::SimDevice;
