//! Start-up: [`init`](crate::init), the listing of `--list-probes` ([`startup`]), and the
//! signal handlers that write the results of an interrupted run ([`signals`]).

#[cfg(unix)]
pub(crate) mod signals;
pub(crate) mod startup;
