//! Terminal text of the use cases' results, one file per result (the
//! reports' own text is `report`'s).

pub mod servers;
pub mod trial;
