//! `larik -p`: one prompt, no questions asked, output as text, JSON or JSON lines.
//!
//! Calls that would need approval are refused with a result telling how to allow them.
//! The JSON result object has the shape Claude Code's headless mode prints, so scripts
//! written for it keep working.

use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::bail;
use larik_agent::AskPolicy;
use larik_protocol::{Event, Op, StopReason, ToolCallStatus, Usage};
use serde_json::json;
use tokio::signal::unix::{SignalKind, signal};

use crate::cli::{Cli, OutputFormat};
use crate::setup;

/// The exit code after an interrupt, as shells report SIGINT.
const EXIT_INTERRUPTED: u8 = 130;

/// Runs the `-p` front end.
pub async fn run(args: Cli) -> anyhow::Result<ExitCode> {
    let Some(prompt_arg) = args.print.clone() else {
        bail!(
            "the interactive terminal is not part of this build; run a prompt headless with \
             `larik -p \"PROMPT\"`"
        );
    };
    let env = setup::environment();
    let cwd = std::env::current_dir()?;
    let mut prepared = setup::prepare(&args, &env, cwd)?;
    for warning in &prepared.warnings {
        eprintln!("larik: warning: {warning}");
    }

    let mut prompt = prompt_arg;
    if prompt.is_empty() {
        if let Some(rewound) = &prepared.rewound_prompt {
            prompt = rewound.text();
        } else if !std::io::stdin().is_terminal() {
            std::io::stdin().read_to_string(&mut prompt)?;
        }
    }
    if prompt.trim().is_empty() {
        bail!("no prompt: give one after -p, or pipe it on stdin");
    }

    prepared.config.ask_policy = AskPolicy::Refuse;
    let started = Instant::now();
    let mut agent = larik_agent::spawn(prepared.config, prepared.session)?;
    agent.ops.send(Op::user_text(prompt))?;

    let format = args.output_format;
    let show_progress =
        format == OutputFormat::Text && (args.verbose || std::io::stderr().is_terminal());
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut session_id = String::new();
    let mut errors: Vec<String> = Vec::new();
    let mut denials: Vec<serde_json::Value> = Vec::new();
    let mut outcome: Option<(StopReason, u32, String, Usage)> = None;
    let mut interrupted = false;
    let mut sigint = signal(SignalKind::interrupt())?;
    let mut sigterm = signal(SignalKind::terminate())?;

    loop {
        let event = tokio::select! {
            event = agent.events.recv() => event,
            _ = sigterm.recv() => {
                // Stop as after Ctrl-C, so every call is answered and the session stays
                // consistent.
                interrupted = true;
                let _ = agent.ops.send(Op::Interrupt);
                continue;
            }
            _ = sigint.recv() => {
                if interrupted {
                    // A second Ctrl-C: stop waiting for a clean finish.
                    larik_sandbox::kill_started_groups();
                    return Ok(ExitCode::from(EXIT_INTERRUPTED));
                }
                interrupted = true;
                let _ = agent.ops.send(Op::Interrupt);
                continue;
            }
        };
        let Some(event) = event else { break };
        if format == OutputFormat::StreamJson {
            serde_json::to_writer(&mut out, &event)?;
            out.write_all(b"\n")?;
            out.flush()?;
        }
        match event {
            Event::SessionConfigured { session_id: id, .. } => session_id = id,
            Event::PermissionDenied {
                call_id,
                tool,
                input,
                ..
            } => denials.push(json!({
                "tool_name": tool,
                "tool_use_id": call_id,
                "tool_input": input,
            })),
            Event::ToolCallBegin { title, .. } if show_progress => {
                eprintln!("larik: → {title}");
            }
            Event::ToolCallEnd {
                status: ToolCallStatus::Failed,
                output,
                ..
            } if show_progress => {
                let first_line = output.lines().next().unwrap_or_default();
                eprintln!("larik:   ✗ {first_line}");
            }
            Event::Notice { message } if format != OutputFormat::StreamJson => {
                eprintln!("larik: {message}");
            }
            Event::Retrying {
                attempt,
                delay_ms,
                reason,
            } if format != OutputFormat::StreamJson => {
                eprintln!(
                    "larik: model request failed ({reason}); retrying in {:.1} s (attempt {attempt})",
                    delay_ms as f64 / 1000.0
                );
            }
            Event::Error { message, .. } => {
                if format != OutputFormat::StreamJson {
                    eprintln!("larik: error: {message}");
                }
                errors.push(message);
            }
            Event::TurnComplete {
                stop_reason,
                num_requests,
                last_message,
                usage,
            } => {
                outcome = Some((stop_reason, num_requests, last_message, usage));
                let _ = agent.ops.send(Op::Shutdown);
            }
            _ => {}
        }
    }
    let _ = agent.task.await;
    // Background jobs the model started do not outlive the run.
    larik_sandbox::kill_started_groups();

    let Some((stop_reason, num_requests, last_message, usage)) = outcome else {
        bail!("the agent stopped before the turn finished");
    };
    let is_error = !matches!(stop_reason, StopReason::EndTurn | StopReason::MaxTokens);
    let result_text = if stop_reason == StopReason::Error && !errors.is_empty() {
        errors.join("\n")
    } else {
        last_message
    };
    match format {
        OutputFormat::Text => {
            if !result_text.is_empty() && stop_reason != StopReason::Error {
                writeln!(out, "{result_text}")?;
            }
        }
        OutputFormat::Json | OutputFormat::StreamJson => {
            let result = json!({
                "type": "result",
                "subtype": match stop_reason {
                    StopReason::EndTurn | StopReason::MaxTokens => "success",
                    StopReason::MaxTurns => "error_max_turns",
                    StopReason::Refusal | StopReason::Cancelled | StopReason::Error => {
                        "error_during_execution"
                    }
                },
                "is_error": is_error,
                "duration_ms": started.elapsed().as_millis() as u64,
                "num_turns": num_requests,
                "result": result_text,
                "stop_reason": stop_reason.as_str(),
                "session_id": session_id,
                "total_cost_usd": usage.cost_usd,
                "permission_denials": denials,
                "usage": {
                    "input_tokens": usage.input_tokens,
                    "output_tokens": usage.output_tokens,
                    "cache_read_input_tokens": usage.cache_read_tokens,
                    "cache_creation_input_tokens": usage.cache_write_tokens,
                },
            });
            serde_json::to_writer(&mut out, &result)?;
            out.write_all(b"\n")?;
        }
    }
    out.flush()?;

    Ok(match stop_reason {
        StopReason::EndTurn | StopReason::MaxTokens => ExitCode::SUCCESS,
        StopReason::Cancelled => ExitCode::from(EXIT_INTERRUPTED),
        StopReason::MaxTurns | StopReason::Refusal | StopReason::Error => ExitCode::FAILURE,
    })
}
