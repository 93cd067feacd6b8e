//! The protocol every part of Larik agrees on.
//!
//! Front ends send [`Op`]s into an agent and receive [`Event`]s back; nothing else crosses
//! that boundary. The [`transcript`] types are the provider-neutral conversation the agent
//! keeps and the session files store. This crate is serde only: no IO, no async, no policy.
//! The one exception is [`sync`], the std lock helpers the core crates share, kept here
//! because this is the lowest crate they depend on.

pub mod context;
pub mod event;
pub mod op;
pub mod permission;
pub mod sync;
pub mod tool;
pub mod transcript;
pub mod usage;

pub use context::{ContextPart, ContextPartKind, ContextReport};
pub use event::{AgentLabel, Event, StopReason, TaskInfo, TaskState};
pub use op::{EndReason, Op, ReasoningEffort, UserContent};
pub use permission::{PermissionDecision, PermissionMode, PermissionOption, PermissionOptionKind};
pub use tool::{
    FileChange, FileLocation, PlanEntry, PlanPriority, PlanStatus, ToolCallStatus, ToolKind,
};
pub use transcript::{Block, Message, ResultPart, Role};
pub use usage::Usage;
