"""Drives an ACP agent through the official Python SDK (`agent-client-protocol`, `import acp`)
as an editor would, following a JSON scenario, and prints every exchange as one JSON line on
stdout. The scenario language is described in ../README.md; ts/driver.mjs speaks the same one.

Usage: tests/acp/.venv/bin/python tests/acp/py/driver.py SCENARIO.json
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

import acp
from acp import schema
from acp.connection import StreamDirection, StreamEvent
from pydantic import BaseModel, ValidationError

DEFAULT_TIMEOUT_MS = 60000
EXIT_GRACE_S = 10.0
# Agents may send big lines (whole files in tool calls); asyncio's default is 64 KiB.
LINE_LIMIT = 64 * 1024 * 1024
OPTION_KINDS = {"allow_once", "allow_always", "reject_once", "reject_always"}
CLIENT_NAME = "larik-acp-test-py"


def emit(event: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def wire(value: Any) -> Any:
    """The JSON shape of an SDK value: camelCase aliases, and only the fields that were on the
    wire (models fill in defaults the agent never sent)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_unset=True)
    if isinstance(value, list):
        return [wire(item) for item in value]
    return value


class DriverFailure(Exception):
    pass


class SdkErrorLog(logging.Handler):
    """The SDK logs (and drops) messages it cannot handle, such as a notification that fails
    validation; surface those in the event log so tests can see them."""

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        error = record.exc_info[1] if record.exc_info else None
        # An unknown notification is already logged as such; the SDK's complaint adds nothing.
        if isinstance(error, acp.RequestError) and error.code == -32601 and "notification" in message:
            return
        if error is not None:
            message += f": {error!r}"
        emit({"event": "sdk_error", "message": message})


class Inbox:
    """Counts what the agent sent, and wakes the scenario steps waiting on those counts."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.changed = asyncio.Condition()
        self.closed_reason: str | None = None

    async def record(self, key: str) -> None:
        async with self.changed:
            self.counts[key] = self.counts.get(key, 0) + 1
            self.changed.notify_all()

    async def close(self, reason: str) -> None:
        async with self.changed:
            self.closed_reason = reason
            self.changed.notify_all()

    async def wait_for(self, key: str, count: int, timeout_s: float) -> None:
        def ready() -> bool:
            return self.counts.get(key, 0) >= count or self.closed_reason is not None

        async with self.changed:
            try:
                await asyncio.wait_for(self.changed.wait_for(ready), timeout_s)
            except asyncio.TimeoutError:
                have = self.counts.get(key, 0)
                raise DriverFailure(
                    f"timed out after {timeout_s * 1000:.0f} ms waiting for {count} x {key} (got {have})"
                ) from None
            if self.counts.get(key, 0) < count:
                raise DriverFailure(self.closed_reason or "connection closed")


def slice_lines(content: str, line: int | None, limit: int | None) -> str:
    """Returns `content` from 1-based `line` on, at most `limit` lines, keeping line endings."""
    if line is None and limit is None:
        return content
    lines = content.splitlines(keepends=True)
    start = max(1, line or 1) - 1
    end = len(lines) if limit is None else start + max(0, limit)
    return "".join(lines[start:end])


class EditorClient:
    """The editor side: answers the agent's requests the way the scenario says."""

    def __init__(self, scenario: dict[str, Any], inbox: Inbox) -> None:
        self.buffers: dict[str, str] = dict(scenario.get("buffers") or {})
        self.permissions: list[str] = list(scenario.get("permissions") or [])
        self.inbox = inbox
        self.held: dict[str, list[asyncio.Future[None]]] = {}

    async def received(self, kind: str, method: str, params: Any) -> None:
        emit({"event": kind, "method": method, "params": params})
        await self.inbox.record(f"method:{method}")
        if method == "session/update":
            update_kind = (params.get("update") or {}).get("sessionUpdate")
            if update_kind:
                await self.inbox.record(f"update:{update_kind}")

    def release_held(self, session_id: str) -> None:
        for future in self.held.pop(session_id, []):
            if not future.done():
                future.set_result(None)

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        params = wire(schema.SessionNotification(session_id=session_id, update=update, field_meta=kwargs or None))
        await self.received("notification", "session/update", params)

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[schema.PermissionOption], **kwargs: Any
    ) -> schema.RequestPermissionResponse:
        request = schema.RequestPermissionRequest(
            session_id=session_id, tool_call=tool_call, options=options, field_meta=kwargs or None
        )
        await self.received("request", "session/request_permission", wire(request))
        entry = self.permissions.pop(0) if self.permissions else "reject_once"
        cancelled = schema.RequestPermissionResponse(outcome=schema.DeniedOutcome(outcome="cancelled"))
        if entry in OPTION_KINDS:
            for option in options:
                if option.kind == entry:
                    return schema.RequestPermissionResponse(
                        outcome=schema.AllowedOutcome(outcome="selected", option_id=option.option_id)
                    )
            emit(
                {
                    "event": "error",
                    "method": "session/request_permission",
                    "error": {"message": f"no offered option has kind {entry}"},
                }
            )
            return cancelled
        if entry == "hold":
            # ACP: once the client cancels the turn it must answer pending permission
            # requests with `cancelled`, so a held request is released by our session/cancel.
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self.held.setdefault(session_id, []).append(future)
            await future
            return cancelled
        if entry != "cancelled":
            emit(
                {
                    "event": "error",
                    "method": "session/request_permission",
                    "error": {"message": f"unknown permission entry {entry}"},
                }
            )
        return cancelled

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None, **kwargs: Any
    ) -> schema.ReadTextFileResponse:
        request = schema.ReadTextFileRequest(
            session_id=session_id, path=path, line=line, limit=limit, field_meta=kwargs or None
        )
        await self.received("request", "fs/read_text_file", wire(request))
        content = self.buffers.get(path)
        if content is None:
            try:
                content = Path(path).read_text(encoding="utf-8")
            except FileNotFoundError:
                raise acp.RequestError.resource_not_found(path) from None
            except OSError as error:
                raise acp.RequestError.internal_error({"details": str(error)}) from None
        return schema.ReadTextFileResponse(content=slice_lines(content, line, limit))

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> schema.WriteTextFileResponse:
        request = schema.WriteTextFileRequest(
            session_id=session_id, path=path, content=content, field_meta=kwargs or None
        )
        await self.received("request", "fs/write_text_file", wire(request))
        self.buffers[path] = content
        try:
            Path(path).write_text(content, encoding="utf-8")
        except OSError as error:
            raise acp.RequestError.internal_error({"details": str(error)}) from None
        return schema.WriteTextFileResponse()

    # The SDK answers terminal requests with a null result when the client lacks them;
    # refuse them instead, as the TypeScript SDK does.
    async def _refuse(self, method: str, model_type: Any, kwargs: dict[str, Any]) -> Any:
        await self.received("request", method, wire(model_type(**kwargs)))
        raise acp.RequestError.method_not_found(method)

    async def create_terminal(self, **kwargs: Any) -> Any:
        return await self._refuse("terminal/create", schema.CreateTerminalRequest, kwargs)

    async def terminal_output(self, **kwargs: Any) -> Any:
        return await self._refuse("terminal/output", schema.TerminalOutputRequest, kwargs)

    async def release_terminal(self, **kwargs: Any) -> Any:
        return await self._refuse("terminal/release", schema.ReleaseTerminalRequest, kwargs)

    async def wait_for_terminal_exit(self, **kwargs: Any) -> Any:
        return await self._refuse("terminal/wait_for_exit", schema.WaitForTerminalExitRequest, kwargs)

    async def kill_terminal(self, **kwargs: Any) -> Any:
        return await self._refuse("terminal/kill", schema.KillTerminalRequest, kwargs)

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        await self.received("request", f"_{method}", params)
        raise acp.RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        await self.received("notification", f"_{method}", params)


# Built-in methods: the SDK's typed call and the model its params must validate against.
TYPED_REQUESTS: dict[str, tuple[str, Any]] = {
    "initialize": ("initialize", schema.InitializeRequest),
    "authenticate": ("authenticate", schema.AuthenticateRequest),
    "session/new": ("new_session", schema.NewSessionRequest),
    "session/load": ("load_session", schema.LoadSessionRequest),
    "session/list": ("list_sessions", schema.ListSessionsRequest),
    "session/resume": ("resume_session", schema.ResumeSessionRequest),
    "session/fork": ("fork_session", schema.ForkSessionRequest),
    "session/close": ("close_session", schema.CloseSessionRequest),
    "session/set_mode": ("set_session_mode", schema.SetSessionModeRequest),
    "session/prompt": ("prompt", schema.PromptRequest),
}
# Methods the client handles itself; anything else the agent sends is logged by the observer.
HANDLED_METHODS = {
    "session/update",
    "session/request_permission",
    "fs/read_text_file",
    "fs/write_text_file",
    "terminal/create",
    "terminal/output",
    "terminal/release",
    "terminal/wait_for_exit",
    "terminal/kill",
}


def typed_kwargs(model_type: Any, params: dict[str, Any]) -> dict[str, Any] | None:
    """Keyword arguments for a typed SDK call, or None when `params` do not fit its model."""
    try:
        model = model_type.model_validate(params)
    except ValidationError:
        return None
    kwargs = {name: getattr(model, name) for name in model.model_fields_set if name != "field_meta"}
    kwargs.update(model.field_meta or {})
    return kwargs


def config_option_model(params: dict[str, Any]) -> Any:
    if isinstance(params.get("value"), bool):
        return schema.SetSessionConfigOptionBooleanRequest
    return schema.SetSessionConfigOptionSelectRequest


class Driver:
    def __init__(self, scenario: dict[str, Any]) -> None:
        self.scenario = scenario
        self.cwd: str = scenario.get("cwd") or os.getcwd()
        self.timeout_s = (scenario.get("timeout_ms") or DEFAULT_TIMEOUT_MS) / 1000
        self.inbox = Inbox()
        self.client = EditorClient(scenario, self.inbox)
        self.session: str | None = None
        self.incoming_requests: dict[Any, str] = {}
        self.background: dict[str, asyncio.Task[None]] = {}
        self.conn: Any = None
        self.done = False

    def observe(self, event: StreamEvent) -> None:
        """Sees every raw message: logs our answers exactly as they go on the wire, and the
        messages no client handler sees."""
        message = event.message
        method = message.get("method")
        if event.direction == StreamDirection.INCOMING:
            if method is None:
                return
            if "id" in message:
                self.incoming_requests[message["id"]] = method
            if method not in HANDLED_METHODS and not method.startswith("_"):
                kind = "request" if "id" in message else "notification"
                # Deferred so it is logged after the messages that arrived before it, whose
                # handlers are already scheduled.
                event = {"event": kind, "method": method, "params": message.get("params")}
                asyncio.get_running_loop().call_soon(emit, event)
            return
        if method is None and message.get("id") in self.incoming_requests:
            answered = {"event": "answered", "method": self.incoming_requests.pop(message["id"])}
            if "error" in message:
                answered["error"] = message["error"]
            else:
                answered["result"] = message.get("result")
            emit(answered)

    def substitute(self, value: Any) -> Any:
        if isinstance(value, str):
            if self.session is not None:
                value = value.replace("$session", self.session)
            return value.replace("$cwd", self.cwd)
        if isinstance(value, list):
            return [self.substitute(item) for item in value]
        if isinstance(value, dict):
            return {key: self.substitute(item) for key, item in value.items()}
        return value

    def with_defaults(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        params = dict(params)
        if method == "initialize":
            params.setdefault("protocolVersion", acp.PROTOCOL_VERSION)
            params.setdefault("clientCapabilities", self.scenario.get("client_capabilities") or {})
            params.setdefault("clientInfo", {"name": CLIENT_NAME, "version": "0"})
        if method in ("session/new", "session/load"):
            params.setdefault("mcpServers", [])
        return params

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        """Sends one request with the SDK's typed call where it has one for `method`."""
        typed = TYPED_REQUESTS.get(method)
        if method == "session/set_config_option":
            typed = ("set_config_option", config_option_model(params))
        if typed is not None:
            kwargs = typed_kwargs(typed[1], params)
            if kwargs is not None:
                return await getattr(self.conn, typed[0])(**kwargs)
        # Extension methods go through the SDK's extension call, which adds the leading `_`;
        # the SDK has no public call for other methods (or for params its models reject).
        if method.startswith("_"):
            return await self.conn.ext_method(method[1:], params)
        return await self.conn._conn.send_request(method, params)

    async def request(self, name: str, method: str, params: dict[str, Any]) -> None:
        if method in ("session/load", "session/resume") and params.get("sessionId"):
            self.session = params["sessionId"]
        try:
            result = await self.call(method, params)
        except acp.RequestError as error:
            error_object: dict[str, Any] = {"code": error.code, "message": str(error)}
            if error.data is not None:
                error_object["data"] = error.data
            emit({"event": "error", "name": name, "method": method, "error": error_object})
            return
        except ValidationError as error:
            raise DriverFailure(f"the SDK rejected the response to {method}: {error}") from None
        except ConnectionError as error:
            raise DriverFailure(f"{method} failed: {error} (the agent closed the connection)") from None
        result = wire(result)
        if method == "session/new" and isinstance(result, dict) and result.get("sessionId"):
            self.session = result["sessionId"]
        emit({"event": "response", "name": name, "method": method, "result": result})

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        try:
            if method == "session/cancel" and (kwargs := typed_kwargs(schema.CancelNotification, params)):
                await self.conn.cancel(**kwargs)
            elif method.startswith("_"):
                await self.conn.ext_notification(method[1:], params)
            else:
                await self.conn._conn.send_notification(method, params)
        except ConnectionError as error:
            raise DriverFailure(f"cannot send {method}: {error}") from None
        if method == "session/cancel" and params.get("sessionId"):
            self.client.release_held(params["sessionId"])

    async def bounded(self, awaitable: Any, what: str) -> None:
        try:
            await asyncio.wait_for(awaitable, self.timeout_s)
        except asyncio.TimeoutError:
            raise DriverFailure(f"timed out after {self.timeout_s * 1000:.0f} ms waiting for {what}") from None

    async def run_steps(self) -> None:
        for index, step in enumerate(self.scenario.get("steps") or []):
            name = step.get("name") or f"step{index}"
            if "request" in step:
                method = step["request"]
                params = self.substitute(self.with_defaults(method, step.get("params") or {}))
                coroutine = self.request(name, method, params)
                if step.get("background"):
                    self.background[name] = asyncio.ensure_future(coroutine)
                else:
                    await self.bounded(coroutine, f"the response to {method} ({name})")
            elif "notify" in step:
                await self.notify(step["notify"], self.substitute(step.get("params") or {}))
            elif "write" in step:
                # The user edits a file between two prompts.
                with open(self.substitute(step["write"]["path"]), "w", encoding="utf-8") as file:
                    file.write(step["write"]["text"])
            elif "wait_for" in step:
                wanted = step["wait_for"]
                key = f"method:{wanted['method']}" if "method" in wanted else f"update:{wanted['update']}"
                await self.inbox.wait_for(key, step.get("count", 1), self.timeout_s)
            elif "await" in step:
                task = self.background.pop(step["await"], None)
                if task is None:
                    raise DriverFailure(f"no background request named {step['await']}")
                await self.bounded(asyncio.shield(task), f"the response to background request {step['await']}")
            else:
                raise DriverFailure(f"unknown step: {json.dumps(step)}")

    async def watch_agent(self, process: asyncio.subprocess.Process) -> None:
        code = await process.wait()
        if not self.done:
            await self.inbox.close(f"agent exited early (code {code})")

    async def run(self) -> None:
        command, *args = self.scenario["agent"]
        env = {**os.environ, **(self.scenario.get("env") or {})}
        try:
            spawned = acp.spawn_agent_process(
                lambda _agent: self.client,
                command,
                *args,
                # The SDK would otherwise pass only a handful of variables to the agent.
                env=env,
                cwd=self.cwd,
                # stderr=None: the agent's stderr goes to ours instead of an unread pipe.
                transport_kwargs={"stderr": None, "limit": LINE_LIMIT},
                observers=[self.observe],
            )
            async with spawned as (conn, process):
                self.conn = conn
                watcher = asyncio.ensure_future(self.watch_agent(process))
                try:
                    await self.run_steps()
                except DriverFailure as failure:
                    # An agent that closed the connection is usually exiting: say how.
                    try:
                        code = await asyncio.wait_for(asyncio.shield(process.wait()), 1.0)
                        raise DriverFailure(f"{failure} [agent exit code {code}]") from None
                    except asyncio.TimeoutError:
                        raise failure from None
                    finally:
                        if process.returncode is None:
                            process.kill()
                except BaseException:
                    if process.returncode is None:
                        process.kill()
                    raise
                # A background request nobody awaited still fails the run if the SDK raised on it.
                for name, task in self.background.items():
                    if task.done() and not task.cancelled() and task.exception() is not None:
                        process.kill()
                        raise DriverFailure(f"background request {name}: {task.exception()}")
                self.done = True
                emit({"event": "done"})
                process.stdin.close()
                try:
                    code = await asyncio.wait_for(process.wait(), EXIT_GRACE_S)
                except asyncio.TimeoutError:
                    process.kill()
                    code = await process.wait()
                watcher.cancel()
                for task in self.background.values():
                    task.cancel()
                event: dict[str, Any] = {"event": "exit", "code": code}
                if code < 0:
                    event = {"event": "exit", "code": None, "signal": signal.Signals(-code).name}
                emit(event)
        except OSError as error:
            if self.conn is None:
                raise DriverFailure(f"cannot start agent {command}: {error}") from None
            raise DriverFailure(f"lost the agent: {error}") from None


def main() -> int:
    if len(sys.argv) != 2:
        sys.stderr.write("usage: driver.py SCENARIO.json\n")
        return 1
    scenario = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    logging.basicConfig(level=logging.ERROR, handlers=[SdkErrorLog()])
    try:
        asyncio.run(Driver(scenario).run())
    except DriverFailure as failure:
        sys.stderr.write(f"acp py driver: {failure}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
