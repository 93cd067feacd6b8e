//! `larik -p`: one prompt, no questions asked, output as text, JSON or JSON lines.
//!
//! Calls that would need approval are refused with a result telling how to allow them.
//! The final JSON result object has the shape of Claude Code's headless result, so scripts
//! that read it keep working; the `stream-json` lines before it are Larik's own events
//! (docs/events.md). Session-control commands given as the prompt (`/clear`, `/fork`,
//! `/rewind`, `/resume`, `/context`, `/cost`, `/config`) are carried out as in every front
//! end (see `control`).

mod control;

use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use larik_agent::AskPolicy;
use larik_protocol::{Event, Message, Op, StopReason, ToolCallStatus, Usage};
use serde_json::{Value, json};
use tokio::signal::unix::{Signal, SignalKind, signal};

use crate::assembly::{self, Branch, Extension, Open, Process, SessionRequest, SetupError};
use crate::cli::{Cli, OutputFormat};
use crate::commands::{Builtin, Invocation, SlashCommands};
use control::{Control, Plan};

/// Runs the `-p` front end.
pub async fn run(args: Cli, extensions: Vec<Arc<dyn Extension>>) -> Result<ExitCode, SetupError> {
    if !args.print {
        return Err(SetupError::usage(
            "the interactive terminal is not part of this build; run a prompt headless with \
             `larik -p \"PROMPT\"`",
        ));
    }
    let env = assembly::environment();
    assembly::prefetch_tls(&env, args.agent.model.as_deref());
    let cwd = std::env::current_dir()
        .map_err(|error| SetupError::internal(format!("no working directory: {error}")))?;
    let started = Instant::now();
    let control = Control::of(&args);
    let session = match &control {
        Some(control) => match control.plan(&args, &env, &cwd)? {
            Plan::Answer(text) => {
                let mut printer = Printer::new(args.output_format, args.verbose);
                printer.result(&Outcome::answered(text), started);
                return Ok(ExitCode::SUCCESS);
            }
            Plan::Open(open) => open,
            Plan::CheckMcp => {
                let process = Process::new(env, args.agent.clone(), extensions)?;
                let text = process.mcp.check(&process.env, &cwd).await;
                finish(&process).await;
                let mut printer = Printer::new(args.output_format, args.verbose);
                printer.result(&Outcome::answered(text), started);
                return Ok(ExitCode::SUCCESS);
            }
        },
        None => open(&args)?,
    };
    let process = Process::new(env, args.agent.clone(), extensions)?;
    let mut request = SessionRequest::new(cwd, session);
    request.ask_policy = AskPolicy::Refuse;
    let assembled = process.assemble(request)?;
    for notice in &assembled.notices {
        eprintln!("larik: warning: {notice}");
    }
    if let Some(text) = control
        .as_ref()
        .and_then(|control| control.after_start(&assembled))
    {
        let _ = assembled.agent.ops.send(Op::shutdown());
        let mut agent = assembled.agent;
        let mut printer = Printer::new(args.output_format, args.verbose);
        while let Some(event) = agent.events.recv().await {
            printer.event(event);
        }
        let _ = agent.task.await;
        finish(&process).await;
        printer.session_id = assembled.session_id;
        printer.result(&Outcome::answered(text), started);
        return Ok(ExitCode::SUCCESS);
    }
    let mut agent = assembled.agent;

    let op = if control.as_ref().is_some_and(Control::asks_the_agent) {
        Op::DescribeContext
    } else {
        let prompt = match prompt(&args, assembled.rewound_prompt.as_ref()) {
            Ok(prompt) => prompt,
            Err(error) => {
                let _ = agent.ops.send(Op::shutdown());
                let _ = agent.task.await;
                finish(&process).await;
                return Err(error);
            }
        };
        let commands = SlashCommands::with(assembled.commands);
        match commands.parse(&prompt) {
            // `/undo` (with -c or --resume) puts back the files of the session's last turn
            // that changed any, instead of asking the model.
            Some(Invocation::Builtin {
                command: Builtin::Undo,
                ..
            }) => Op::Undo,
            Some(Invocation::Builtin {
                command: Builtin::Compact,
                argument,
            }) => Op::Compact {
                instructions: argument,
            },
            // A custom command or skill sends its text, its inline commands run first.
            Some(Invocation::Prompt(text)) => Op::CommandTurn {
                text,
                more: Vec::new(),
            },
            // An MCP prompt sends what its server gives; one that fails ends the run
            // before any model request.
            Some(Invocation::McpPrompt { command, argument }) => {
                match process
                    .mcp
                    .expand_prompt(&assembled.session_id, &command, argument.as_deref())
                    .await
                {
                    Ok(text) => Op::user_text(text),
                    Err(message) => {
                        let _ = agent.ops.send(Op::shutdown());
                        let _ = agent.task.await;
                        finish(&process).await;
                        return Err(SetupError::internal(message));
                    }
                }
            }
            // Larik's other commands reach the model as prompts in this front end.
            _ => Op::user_text(prompt),
        }
    };
    let _ = agent.ops.send(op);

    let mut printer = Printer::new(args.output_format, args.verbose);
    let mut signals = Signals::new()
        .map_err(|error| SetupError::internal(format!("cannot watch signals: {error}")))?;
    // Background tasks whose reports have not reached the model: the run ends only once
    // every one has been delivered and the turn that took it has ended.
    let mut undelivered = std::collections::BTreeSet::new();
    loop {
        let event = tokio::select! {
            event = agent.events.recv() => event,
            signal = signals.next() => {
                if signals.count > 1 {
                    // A second signal: stop waiting for a clean finish.
                    larik_sandbox::kill_started_groups();
                    return Ok(ExitCode::from(128 + signal));
                }
                let _ = agent.ops.send(Op::Interrupt);
                continue;
            }
        };
        let Some(event) = event else { break };
        if let Event::BackgroundTask { task } = &event {
            if task.delivered {
                undelivered.remove(&task.id);
            } else {
                undelivered.insert(task.id.clone());
            }
        }
        let waits_for_tasks = !undelivered.is_empty() && signals.count == 0;
        match &event {
            Event::TurnComplete { .. } if waits_for_tasks => {}
            Event::TurnComplete { .. } | Event::Undone { .. } | Event::Context { .. } => {
                let _ = agent.ops.send(Op::shutdown());
            }
            _ => {}
        }
        if !printer.event(event) {
            // Nobody reads the output any more (a closed pipe): stop the turn cleanly.
            let _ = agent.ops.send(Op::Interrupt);
        }
    }
    let _ = agent.task.await;
    finish(&process).await;

    let Some(outcome) = printer.outcome.take() else {
        return Err(SetupError::internal(
            "the agent stopped before the turn finished",
        ));
    };
    printer.result(&outcome, started);
    if printer.errors.is_empty() {
        // Every failing exit says why on stderr, not only those that came with an error.
        let why = match outcome.stop_reason {
            StopReason::MaxTurns => {
                Some("stopped before the task was done (turn cap or loop guard)")
            }
            StopReason::Refusal => Some("the model refused to continue"),
            StopReason::BudgetExceeded => Some("stopped: the session's budget is spent"),
            StopReason::Cancelled => Some("cancelled"),
            StopReason::EndTurn | StopReason::MaxTokens | StopReason::Error => None,
        };
        if let Some(why) = why {
            eprintln!("larik: {why}");
        }
    }
    Ok(match (signals.first, outcome.stop_reason) {
        (Some(signal), StopReason::Cancelled) => ExitCode::from(128 + signal),
        _ if printer.broken_pipe => ExitCode::FAILURE,
        _ if printer.is_error(&outcome) => ExitCode::FAILURE,
        _ => ExitCode::SUCCESS,
    })
}

/// A refused call as the result's `permission_denials` lists it; a subagent's names it.
fn denial(
    call_id: String,
    tool: String,
    input: serde_json::Value,
    agent: Option<&larik_protocol::AgentLabel>,
) -> serde_json::Value {
    let mut denial = json!({
        "tool_name": tool,
        "tool_use_id": call_id,
        "tool_input": input,
    });
    if let Some(agent) = agent {
        denial["tool_use_id"] = json!(agent.call_id_of(&call_id));
        denial["agent"] = json!(agent.label);
    }
    denial
}

/// Which session `-c`, `--resume`, `--fork` and `--rewind` ask for.
fn open(args: &Cli) -> Result<Open, SetupError> {
    let branch = match (args.fork, args.rewind) {
        (true, _) => Branch::Fork,
        (false, Some(prompt)) => Branch::Rewind(prompt),
        (false, None) => Branch::Append,
    };
    Ok(if args.continue_session {
        Open::Latest(branch)
    } else if let Some(id) = &args.resume {
        Open::Id(id.clone(), branch)
    } else if branch != Branch::Append {
        return Err(SetupError::usage(
            "--fork and --rewind need a session: add -c or --resume ID",
        ));
    } else {
        Open::New
    })
}

/// The prompt: the argument, else the one a rewind gave back, with piped input added (or
/// as the prompt when there is none).
fn prompt(args: &Cli, rewound: Option<&Message>) -> Result<String, SetupError> {
    let mut prompt = args.prompt.clone().unwrap_or_default();
    if prompt.is_empty()
        && let Some(rewound) = rewound
    {
        prompt = rewound.text();
    }
    if !std::io::stdin().is_terminal() {
        // Piped input is part of the prompt (`cat error.log | larik -p "explain this"`).
        let mut piped = String::new();
        std::io::stdin()
            .read_to_string(&mut piped)
            .map_err(|error| SetupError::usage(format!("cannot read stdin: {error}")))?;
        if !piped.trim().is_empty() {
            prompt = if prompt.trim().is_empty() {
                piped
            } else {
                format!("{prompt}\n\n{piped}")
            };
        }
    }
    if prompt.trim().is_empty() {
        return Err(SetupError::usage(
            "no prompt: give one after -p, or pipe it on stdin",
        ));
    }
    Ok(prompt)
}

/// Background jobs the model started do not outlive the run; nor do language servers.
async fn finish(process: &Process) {
    for notice in process.shutdown().await {
        eprintln!("larik: warning: {notice}");
    }
}

/// How the turn ended.
struct Outcome {
    stop_reason: StopReason,
    num_requests: u32,
    last_message: String,
    usage: Usage,
}

impl Outcome {
    /// A command Larik answered itself with `text`, without asking the model.
    fn answered(text: String) -> Self {
        Outcome {
            stop_reason: StopReason::EndTurn,
            num_requests: 0,
            last_message: text,
            usage: Usage::default(),
        }
    }
}

/// Prints events in the chosen format and remembers what the result needs.
struct Printer {
    format: OutputFormat,
    show_progress: bool,
    session_id: String,
    errors: Vec<String>,
    denials: Vec<Value>,
    outcome: Option<Outcome>,
    broken_pipe: bool,
}

impl Printer {
    fn new(format: OutputFormat, verbose: bool) -> Self {
        Printer {
            format,
            show_progress: format == OutputFormat::Text
                && (verbose || std::io::stderr().is_terminal()),
            session_id: String::new(),
            errors: Vec::new(),
            denials: Vec::new(),
            outcome: None,
            broken_pipe: false,
        }
    }

    /// Handles one event; false when stdout can no longer be written.
    fn event(&mut self, event: Event) -> bool {
        if self.format == OutputFormat::StreamJson {
            let line = serde_json::to_string(&event).unwrap_or_else(|_| "null".to_string());
            self.write_line(&line);
        }
        let to_stderr = self.format != OutputFormat::StreamJson;
        match event {
            Event::SessionConfigured { session_id, .. } => self.session_id = session_id,
            Event::PermissionDenied {
                call_id,
                tool,
                input,
                ..
            } => self.denials.push(denial(call_id, tool, input, None)),
            Event::ToolCallBegin { title, .. } if self.show_progress => {
                eprintln!("larik: → {title}");
            }
            Event::Subagent { agent, event } => match *event {
                Event::ToolCallBegin { title, .. } if self.show_progress => {
                    eprintln!("larik: → {} › {title}", agent.label);
                }
                Event::PermissionDenied {
                    call_id,
                    tool,
                    input,
                    ..
                } => self
                    .denials
                    .push(denial(call_id, tool, input, Some(&agent))),
                _ => {}
            },
            Event::ToolCallEnd {
                status: ToolCallStatus::Failed,
                output,
                ..
            } if self.show_progress => {
                let first_line = output.lines().next().unwrap_or_default();
                eprintln!("larik:   ✗ {first_line}");
            }
            Event::Notice { message } if to_stderr => eprintln!("larik: {message}"),
            Event::Retrying {
                attempt,
                delay_ms,
                reason,
            } if to_stderr => eprintln!(
                "larik: model request failed ({reason}); retrying in {:.1} s (attempt {attempt})",
                delay_ms as f64 / 1000.0
            ),
            Event::Error { message, .. } => {
                if to_stderr {
                    eprintln!("larik: error: {message}");
                }
                self.errors.push(message);
            }
            Event::Undone {
                turn,
                restored,
                deleted,
                failed,
            } => {
                let summary = crate::undo::summary(turn.as_deref(), &restored, &deleted, &failed);
                if !failed.is_empty() {
                    if to_stderr {
                        eprintln!("larik: error: {summary}");
                    }
                    self.errors.push(summary.clone());
                }
                self.outcome = Some(Outcome::answered(summary));
            }
            Event::Context { report } => {
                self.outcome = Some(Outcome::answered(crate::control::context_text(&report)));
            }
            Event::TurnComplete {
                stop_reason,
                num_requests,
                last_message,
                usage,
            } => {
                self.outcome = Some(Outcome {
                    stop_reason,
                    num_requests,
                    last_message,
                    usage,
                });
            }
            _ => {}
        }
        !self.broken_pipe
    }

    /// Whether the run failed: a stop other than a normal end, or any error on the way
    /// (such as a session file that could not be written).
    fn is_error(&self, outcome: &Outcome) -> bool {
        !matches!(
            outcome.stop_reason,
            StopReason::EndTurn | StopReason::MaxTokens
        ) || !self.errors.is_empty()
    }

    /// Prints the final answer (text) or the result object (JSON formats).
    fn result(&mut self, outcome: &Outcome, started: Instant) {
        let is_error = self.is_error(outcome);
        let result_text = if outcome.stop_reason == StopReason::Error && !self.errors.is_empty() {
            self.errors.join("\n")
        } else {
            outcome.last_message.clone()
        };
        match self.format {
            OutputFormat::Text => {
                if !result_text.is_empty() && outcome.stop_reason != StopReason::Error {
                    self.write_line(&result_text);
                }
            }
            OutputFormat::Json | OutputFormat::StreamJson => {
                let subtype = match outcome.stop_reason {
                    _ if is_error && outcome.stop_reason == StopReason::MaxTurns => {
                        "error_max_turns"
                    }
                    StopReason::BudgetExceeded => "error_max_budget_usd",
                    _ if is_error => "error_during_execution",
                    _ => "success",
                };
                let usage = &outcome.usage;
                let mut result = json!({
                    "type": "result",
                    "subtype": subtype,
                    "is_error": is_error,
                    "duration_ms": started.elapsed().as_millis() as u64,
                    "num_turns": outcome.num_requests,
                    "result": result_text,
                    "stop_reason": outcome.stop_reason.as_str(),
                    "session_id": self.session_id,
                    "total_cost_usd": usage.cost_usd,
                    "permission_denials": self.denials,
                    "usage": {
                        "input_tokens": usage.input_tokens,
                        "output_tokens": usage.output_tokens,
                        "cache_read_input_tokens": usage.cache_read_tokens,
                        "cache_creation_input_tokens": usage.cache_write_tokens,
                    },
                });
                // `total_cost_usd` covers the priced requests only; say how many were not.
                if !usage.cost_known() {
                    result["unpriced_requests"] = json!(usage.unpriced_requests);
                }
                // What went wrong, also when the turn still ended normally (a session file
                // that could not be written).
                if !self.errors.is_empty() {
                    result["errors"] = json!(self.errors);
                }
                self.write_json(&result);
            }
        }
    }

    fn write_json(&mut self, value: &Value) {
        self.write_line(&value.to_string());
    }

    fn write_line(&mut self, line: &str) {
        if self.broken_pipe {
            return;
        }
        let mut out = std::io::stdout().lock();
        if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
            self.broken_pipe = true;
        }
    }
}

/// SIGINT, SIGTERM and SIGHUP: the first stops the turn cleanly, a second one exits at once.
struct Signals {
    interrupt: Signal,
    terminate: Signal,
    hangup: Signal,
    /// The first signal received, as a number.
    first: Option<u8>,
    count: u32,
}

impl Signals {
    fn new() -> std::io::Result<Self> {
        Ok(Signals {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
            hangup: signal(SignalKind::hangup())?,
            first: None,
            count: 0,
        })
    }

    /// Waits for the next signal and returns its number.
    async fn next(&mut self) -> u8 {
        let number = tokio::select! {
            _ = self.interrupt.recv() => 2,
            _ = self.terminate.recv() => 15,
            _ = self.hangup.recv() => 1,
        };
        self.count += 1;
        self.first.get_or_insert(number);
        number
    }
}
