//! `cks-iso sync` (src/sync): the desired state built, published and registered against the test
//! world and the CloudStack stand-in, then kept so. A new test of `sync` goes here.

mod e2e;
mod faults;
mod key_tlog;
mod keyless;
mod offline;
