//! Background tasks: subagents the model started with `run_in_background`, each running
//! on its own task while the agent goes on.
//!
//! A task is `bg-N` from its start. Its report is delivered to the model once: with the
//! next request when the agent is in a turn (appended to the tool results), in a turn of
//! its own when the agent is idle ("Background task results arrived…"), or as the answer
//! of `task_wait` or `task_stop`. Interrupting a turn leaves tasks running; `/tasks stop`
//! and the agent's end stop them. Every change is told to the front end as
//! [`Event::BackgroundTask`], so `larik -p` can wait for every task to be delivered.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use larik_protocol::sync::locked;
use larik_protocol::transcript::result_text;
use larik_protocol::{Event, TaskInfo, TaskState};
use larik_tools::{BackgroundWork, TaskResult, ToolOutput};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::runner::EventSink;

/// What a stop waits at most for a task to end.
const STOP_WAIT: Duration = Duration::from_secs(30);

/// One task.
struct Task {
    info: TaskInfo,
    stop: CancellationToken,
    report: Option<String>,
}

/// An agent's background tasks.
pub(crate) struct BackgroundTasks {
    next: AtomicU32,
    tasks: std::sync::Mutex<Vec<Task>>,
    /// Bumped whenever a task finishes.
    finished: watch::Sender<u64>,
    events: EventSink,
}

impl BackgroundTasks {
    pub(crate) fn new(events: EventSink) -> Arc<Self> {
        Arc::new(BackgroundTasks {
            next: AtomicU32::new(1),
            tasks: std::sync::Mutex::default(),
            finished: watch::Sender::new(0),
            events,
        })
    }

    /// Starts `work` as a task named `label`; returns its id.
    pub(crate) fn start(
        self: &Arc<Self>,
        label: String,
        stop: CancellationToken,
        work: BackgroundWork,
    ) -> String {
        let id = format!("bg-{}", self.next.fetch_add(1, Ordering::Relaxed));
        let info = TaskInfo {
            id: id.clone(),
            label,
            state: TaskState::Running,
            delivered: false,
        };
        self.events
            .emit(Event::BackgroundTask { task: info.clone() });
        locked(&self.tasks).push(Task {
            info,
            stop: stop.clone(),
            report: None,
        });
        let hub = Arc::clone(self);
        let task_id = id.clone();
        tokio::spawn(async move {
            let output = work.await;
            hub.finish(&task_id, &output, stop.is_cancelled());
        });
        id
    }

    fn finish(&self, id: &str, output: &ToolOutput, stopped: bool) {
        let info = {
            let mut tasks = locked(&self.tasks);
            let Some(task) = tasks.iter_mut().find(|task| task.info.id == id) else {
                return;
            };
            task.info.state = if stopped {
                TaskState::Stopped
            } else if output.is_error {
                TaskState::Failed
            } else {
                TaskState::Completed
            };
            task.report = Some(result_text(&output.content));
            task.info.clone()
        };
        self.events.emit(Event::BackgroundTask { task: info });
        self.finished.send_modify(|count| *count += 1);
    }

    /// Every task as it stands.
    pub(crate) fn list(&self) -> Vec<TaskInfo> {
        locked(&self.tasks)
            .iter()
            .map(|task| task.info.clone())
            .collect()
    }

    /// Whether a finished task's report has not reached the model yet.
    pub(crate) fn has_undelivered(&self) -> bool {
        locked(&self.tasks)
            .iter()
            .any(|task| task.report.is_some() && !task.info.delivered)
    }

    /// Where a finish is announced.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.finished.subscribe()
    }

    /// The reports not yet delivered, as task notifications for the model; they count as
    /// delivered from now on.
    pub(crate) fn take_notifications(&self) -> Vec<String> {
        let taken = self.deliver(|task| task.report.is_some());
        taken
            .into_iter()
            .map(|result| {
                format!(
                    "<task-notification id=\"{}\" label=\"{}\" status=\"{}\">\n{}\n</task-notification>",
                    result.task.id,
                    result.task.label,
                    result.task.state.as_str(),
                    result.report.unwrap_or_default()
                )
            })
            .collect()
    }

    /// Marks the undelivered finished tasks `selected` picks as delivered and returns them.
    fn deliver(&self, selected: impl Fn(&Task) -> bool) -> Vec<TaskResult> {
        let delivered: Vec<TaskResult> = {
            let mut tasks = locked(&self.tasks);
            tasks
                .iter_mut()
                .filter(|task| !task.info.delivered && task.report.is_some() && selected(task))
                .map(|task| {
                    task.info.delivered = true;
                    TaskResult {
                        task: task.info.clone(),
                        report: task.report.clone(),
                    }
                })
                .collect()
        };
        for result in &delivered {
            self.events.emit(Event::BackgroundTask {
                task: result.task.clone(),
            });
        }
        delivered
    }

    /// The tasks `ids` (all when empty) as they stand, finished ones' reports delivered.
    fn results(&self, ids: &[String]) -> Vec<TaskResult> {
        let chosen = |task: &Task| ids.is_empty() || ids.contains(&task.info.id);
        self.deliver(chosen);
        locked(&self.tasks)
            .iter()
            .filter(|task| chosen(task))
            .map(|task| TaskResult {
                task: task.info.clone(),
                report: task.report.clone(),
            })
            .collect()
    }

    fn all_finished(&self, ids: &[String]) -> bool {
        locked(&self.tasks)
            .iter()
            .filter(|task| ids.is_empty() || ids.contains(&task.info.id))
            .all(|task| task.report.is_some())
    }

    /// Waits for the tasks `ids` (all when empty) to finish, at most `timeout` or until
    /// `cancel`; returns them.
    pub(crate) async fn wait(
        &self,
        ids: &[String],
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Vec<TaskResult> {
        let mut finished = self.subscribe();
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        while !self.all_finished(ids) {
            tokio::select! {
                changed = finished.changed() => if changed.is_err() { break },
                () = &mut deadline => break,
                () = cancel.cancelled() => break,
            }
        }
        self.results(ids)
    }

    /// Stops the tasks `ids` (every running one when empty), waits for them to end and
    /// returns them.
    pub(crate) async fn stop(&self, ids: &[String]) -> Vec<TaskResult> {
        for task in locked(&self.tasks).iter() {
            if ids.is_empty() || ids.contains(&task.info.id) {
                task.stop.cancel();
            }
        }
        self.wait(ids, STOP_WAIT, &CancellationToken::new()).await
    }

    /// Asks the tasks `ids` (`all` among them: every one) to stop, without waiting.
    pub(crate) fn request_stop(&self, ids: &[String]) {
        let every = ids.iter().any(|id| id == "all");
        for task in locked(&self.tasks).iter() {
            if every || ids.contains(&task.info.id) {
                task.stop.cancel();
            }
        }
    }

    /// Stops every task without waiting (the agent is ending).
    pub(crate) fn stop_all(&self) {
        self.request_stop(&["all".to_string()]);
    }
}
