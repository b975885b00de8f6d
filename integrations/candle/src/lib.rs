//! The library half of the candle example: what a candle user can take into their own model.
//!
//! - [`backward`]: candle's backward pass by layer, `<layer>/bwd` beside `<layer>/fwd`, from
//!   identity markers at each layer's boundaries.

pub mod backward;
