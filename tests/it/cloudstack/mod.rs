//! The CloudStack side (src/cloudstack, the domain's cloudstack.rs and plan/profile.rs): what
//! each CloudStack release's nodes read (`--cloudstack`), and registering ISOs against the test
//! world's CloudStack stand-in, its bounds and how it answers. A new test of a CloudStack release
//! rule or of `register`/`versions` goes here.

mod profiles;
mod registration;
mod registration_bounds;
mod registration_fidelity;
mod releases;
