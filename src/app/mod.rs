//! The application: the use cases the commands run, over typed requests.
//! A use case says what it does through a [`sink::Sink`] and prints
//! nothing itself; the command line (`cli`) only turns flags into
//! requests and chooses the sink.

pub mod ab;
pub mod breakpoint;
pub mod compare;
pub mod fit;
pub mod history;
pub mod k8s;
pub mod load;
pub mod merge;
pub mod mirror;
pub mod mix;
pub mod os;
pub mod replay;
pub mod run;
pub mod runtime;
pub mod servers;
pub mod sink;
pub mod sweep;
pub mod sweep_verdict;
pub mod text;
pub mod tune;
pub mod usage;
