//! `cks-iso sync`: keeps a CloudStack zone's Kubernetes versions at a desired state, unattended.
//! The operator's loop — resolve each minor's newest patch, build what is missing, verify, check
//! the running clusters would upgrade, publish, register, retire the old — as one run that is safe
//! to repeat from cron: it looks before it acts ([`decide`], pure), acts only on what differs,
//! holds a lock so two runs do not both act ([`runlock`]), and reports per minor × arch
//! ([`report`]). The build is the pipeline's, its second caller after `build`: a
//! [`crate::pipeline::Matrix`] of one build per version on one shared cache, registry client and
//! checker ([`run`]). Across an air gap the run is cut in two where a lock carries it ([`locks`]).

mod act;
pub mod decide;
pub mod desired;
pub mod locks;
pub mod report;
pub mod run;
pub mod runlock;

pub use desired::{Desired, DesiredError};
pub use run::{Context, SyncError};
pub use runlock::{LockError, RunLock};
