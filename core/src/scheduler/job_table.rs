//! The live actions, in a slab indexed by job id (see [`crate::id_slab`]): each action stays
//! in place, and a hashed index finds it in one probe.

use super::state::Tracked;

/// The live actions by job id.
pub(super) type JobTable = crate::id_slab::IdSlab<Tracked>;
