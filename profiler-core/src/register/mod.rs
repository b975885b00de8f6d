//! Registration: what a site is ([`descriptor`]), the registry that numbers the sites at
//! start-up and applies the filter to them ([`registry`]), and what the listing says of each
//! ([`info`]).

#[cfg(feature = "enable")]
pub(crate) mod descriptor;
pub(crate) mod info;
#[cfg(feature = "enable")]
pub(crate) mod registry;
pub(crate) mod work;
