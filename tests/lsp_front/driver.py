"""Drives `larik lsp` through pytest-lsp's language client posing as an editor (the
capability sets pytest-lsp records from VS Code and Neovim), following a JSON scenario, and
prints every message the server sends, and every answer the driver gives, as one JSON line on
stdout. The scenario language is described in README.md next to this file.

Usage: tests/lsp_front/.venv/bin/python tests/lsp_front/driver.py SCENARIO.json
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import signal
import sys
import warnings
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlparse

import pytest_lsp
from lsprotocol import types
from packaging.version import parse as parse_version
from pygls.exceptions import JsonRpcException
from pygls.protocol import default_converter
from pytest_lsp.client import register_lsp_features

DEFAULT_TIMEOUT_MS = 60000
EXIT_GRACE_S = 10.0


def emit(event: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


class DriverFailure(Exception):
    pass


def path_to_uri(path: str) -> str:
    return "file://" + quote(path)


def uri_to_path(uri: str) -> str:
    return unquote(urlparse(uri).path)


def id_key(msg_id: Any) -> str:
    """A dictionary key for a JSON-RPC id (ints, strings and null alike)."""
    return json.dumps(msg_id)


def client_info(spec: str) -> dict[str, Any]:
    """The `clientInfo` recorded with the capability set `client_capabilities(spec)` picks:
    the newest recording of that client (and version prefix, after `@`)."""
    name, _, version = spec.replace("-", "_").partition("@")
    version = version.lstrip("v")
    candidates = {}
    for resource in resources.files("pytest_lsp.clients").iterdir():
        stem, _, suffix = resource.name.rpartition(".")
        if suffix != "json" or "_v" not in stem:
            continue
        recorded_name, recorded_version = stem.split("_v")
        if recorded_name == name and recorded_version.startswith(version):
            candidates[recorded_version] = resource
    if not candidates:
        raise DriverFailure(f"no recorded capability set for {spec}")
    newest = sorted(candidates, key=parse_version)[-1]
    return json.loads(candidates[newest].read_text())["clientInfo"]


LINE_BREAK = re.compile(r"\r\n|\r|\n")


def offset_of(text: str, position: dict[str, int], encoding: str) -> int:
    """The string index of an LSP position, with `character` counted in `encoding` units."""
    starts = [0] + [match.end() for match in LINE_BREAK.finditer(text)]
    line = position["line"]
    if line >= len(starts):
        return len(text)
    start = starts[line]
    end = len(text) if line + 1 >= len(starts) else starts[line + 1]
    line_text = LINE_BREAK.sub("", text[start:end])
    units = position["character"]
    index = 0
    while index < len(line_text) and units > 0:
        char = line_text[index]
        if encoding == "utf-8":
            units -= len(char.encode("utf-8"))
        elif encoding == "utf-32":
            units -= 1
        else:
            units -= 2 if ord(char) > 0xFFFF else 1
        index += 1
    if units < 0:
        raise ValueError(f"position {position} splits a character")
    return start + index


def apply_text_edits(text: str, edits: list[dict[str, Any]], encoding: str) -> str:
    spans = []
    for edit in edits:
        start = offset_of(text, edit["range"]["start"], encoding)
        end = offset_of(text, edit["range"]["end"], encoding)
        if end < start:
            raise ValueError(f"edit range ends before it starts: {edit['range']}")
        spans.append((start, end, edit["newText"]))
    spans.sort(key=lambda span: (span[0], span[1]))
    for (_, end, _), (next_start, _, _) in zip(spans, spans[1:]):
        if next_start < end:
            raise ValueError("overlapping text edits")
    for start, end, new_text in reversed(spans):
        text = text[:start] + new_text + text[end:]
    return text


def as_function(handler: Any) -> Any:
    """A plain coroutine function around a bound method: pygls tags the functions it
    registers with attributes, which bound methods cannot take."""

    async def handle(params: Any) -> Any:
        return await handler(params)

    return handle


class Inbox:
    """Counts what the server sent and wakes the steps waiting on those counts."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.responses: dict[str, dict[str, Any]] = {}
        self.changed = asyncio.Condition()
        self.closed_reason: str | None = None

    async def _notify(self) -> None:
        async with self.changed:
            self.changed.notify_all()

    def record(self, key: str) -> None:
        self.counts[key] = self.counts.get(key, 0) + 1
        asyncio.ensure_future(self._notify())

    def record_response(self, message: dict[str, Any]) -> None:
        self.responses[id_key(message.get("id"))] = message
        asyncio.ensure_future(self._notify())

    async def close(self, reason: str) -> None:
        async with self.changed:
            self.closed_reason = reason
            self.changed.notify_all()

    async def wait(self, ready: Any, what: str, timeout_s: float | None) -> None:
        async with self.changed:
            try:
                await asyncio.wait_for(
                    self.changed.wait_for(lambda: ready() or self.closed_reason is not None), timeout_s
                )
            except asyncio.TimeoutError:
                raise DriverFailure(f"timed out after {(timeout_s or 0) * 1000:.0f} ms waiting for {what}") from None
            if not ready():
                raise DriverFailure(f"{self.closed_reason} while waiting for {what}")

    async def wait_for(self, key: str, count: int, timeout_s: float) -> None:
        await self.wait(lambda: self.counts.get(key, 0) >= count, f"{count} x {key} (have {self.counts.get(key, 0)})", timeout_s)

    async def response(self, msg_id: Any, timeout_s: float | None, what: str) -> dict[str, Any]:
        key = id_key(msg_id)
        await self.wait(lambda: key in self.responses, what, timeout_s)
        return self.responses.pop(key)


class RecordingProtocol(pytest_lsp.LanguageClientProtocol):
    """pytest-lsp's client protocol, also showing the driver every message as it was on the
    wire: what the server sends before pygls turns it into objects, and what we answer."""

    driver: Driver

    def structure_message(self, data: dict[str, Any]):
        # json.loads calls this for every object, innermost first; only whole messages
        # carry `jsonrpc`.
        if "jsonrpc" in data:
            raw = json.loads(json.dumps(data))
            try:
                self.driver.received(raw)
            except Exception as error:  # a bug here must not silence the message
                emit({"event": "client_error", "message": f"driver: {error!r}"})
            try:
                return super().structure_message(data)
            except JsonRpcException as error:
                self.driver.unreadable(raw, error)
                raise
        return data

    def _handle_response(self, msg_id, result=None, error=None):
        # The driver resolves its own requests from the raw message; pygls would otherwise
        # confuse our ids with the server's ids of requests still being handled.
        if id_key(msg_id) in self.driver.outgoing:
            return
        super()._handle_response(msg_id, result, error)

    def _send_data(self, data: Any):
        if data and not isinstance(data, dict) and not hasattr(data, "method"):
            msg_id = getattr(data, "id", None)
            method = self.driver.incoming.pop(id_key(msg_id), None)
            if method is not None:
                wire = json.loads(json.dumps(data, default=self._serialize_message))
                answered: dict[str, Any] = {"event": "answered", "method": method, "id": msg_id}
                if wire.get("error") is not None:
                    answered["error"] = wire["error"]
                else:
                    answered["result"] = wire.get("result")
                emit(answered)
        super()._send_data(data)


class Client(pytest_lsp.LanguageClient):
    """pytest-lsp's client, reporting problems with the server's messages as events instead
    of ending the session, so a test sees them and the rest of the scenario still runs."""

    def report_server_error(self, error, source):
        emit({"event": "client_error", "message": f"{source.__name__}: {error}"})


class Driver:
    def __init__(self, scenario: dict[str, Any]) -> None:
        self.scenario = scenario
        self.cwd: str = scenario.get("cwd") or os.getcwd()
        self.timeout_s = (scenario.get("timeout_ms") or DEFAULT_TIMEOUT_MS) / 1000
        self.permissions: list[Any] = list(scenario.get("permissions") or [])
        self.message_actions: list[Any] = list(scenario.get("message_actions") or [])
        self.elicitations: list[Any] = list(scenario.get("elicitations") or [])
        self.apply_edits: list[dict[str, Any]] = list(scenario.get("apply_edits") or [])
        self.inbox = Inbox()
        self.session: str | None = None
        self.position_encoding = "utf-16"
        # Open documents by URI: {"text", "version", "languageId"}.
        self.documents: dict[str, dict[str, Any]] = {}
        # Our requests awaiting an answer (id key -> method) and the server's requests we
        # have not answered yet (id key -> method).
        self.outgoing: dict[str, str] = {}
        self.incoming: dict[str, str] = {}
        self.incoming_params: dict[str, Any] = {}
        self.held: dict[str, list[asyncio.Future[None]]] = {}
        self.background: dict[str, asyncio.Task[None]] = {}
        self.request_ids: dict[str, Any] = {}
        self.results: dict[str, Any] = {}
        self.next_id = 0
        self.done = False
        self.client = Client(protocol_cls=RecordingProtocol, converter_factory=default_converter)
        self.client.protocol.driver = self
        register_lsp_features(self.client)
        self.register_handlers()
        self.client.capabilities = self.converter.structure(self.capabilities(), types.ClientCapabilities)

    @property
    def converter(self) -> Any:
        return self.client.protocol._converter

    # ----- what the editor advertises -----

    def capabilities(self) -> dict[str, Any]:
        spec = self.scenario.get("client") or "visual-studio-code"
        capabilities = self.converter.unstructure(pytest_lsp.client_capabilities(spec))
        if "apply_edit" in self.scenario:
            capabilities.setdefault("workspace", {})["applyEdit"] = bool(self.scenario["apply_edit"])
        larik = {}
        if self.scenario.get("larik_permissions"):
            larik["permissions"] = True
        if self.scenario.get("larik_elicitation"):
            larik["elicitation"] = True
        if larik:
            experimental = capabilities.get("experimental") or {}
            experimental["larik"] = larik
            capabilities["experimental"] = experimental
        return capabilities

    def initialize_params(self, params: dict[str, Any]) -> dict[str, Any]:
        spec = self.scenario.get("client") or "visual-studio-code"
        defaults: dict[str, Any] = {
            "processId": os.getpid(),
            "clientInfo": client_info(spec),
            "locale": "en",
            "rootPath": self.cwd,
            "rootUri": path_to_uri(self.cwd),
            "capabilities": self.capabilities(),
            "workspaceFolders": [{"uri": path_to_uri(self.cwd), "name": Path(self.cwd).name}],
        }
        return {**defaults, **params}

    # ----- what the server sends -----

    def received(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method is None:
            key = id_key(message.get("id"))
            if key in self.outgoing or message.get("id") is None:
                self.inbox.record_response(message)
            return
        if "id" in message:
            self.incoming[id_key(message["id"])] = method
            self.incoming_params[id_key(message["id"])] = message.get("params")
            emit({"event": "request", "method": method, "id": message["id"], "params": message.get("params")})
        else:
            emit({"event": "notification", "method": method, "params": message.get("params")})
        self.inbox.record(f"method:{method}")
        if method == "larik/event":
            event = (message.get("params") or {}).get("event") or {}
            self.inbox.record(f"event:{event.get('type')}")

    def unreadable(self, message: dict[str, Any], error: Exception) -> None:
        """pygls could not read a message into its LSP type: report it, and answer a request
        so the server is not left waiting."""
        emit({"event": "client_error", "message": f"unreadable {message.get('method') or 'response'}: {error!r}"})
        if message.get("method") and "id" in message:
            self.client.protocol._send_data(
                {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "error": {"code": -32602, "message": f"the client could not read the params: {error}"},
                }
            )
            self.incoming.pop(id_key(message["id"]), None)

    def current_params(self) -> Any:
        """The wire params of the server request being handled."""
        return self.incoming_params.pop(id_key(self.client.protocol.msg_id), None)

    def register_handlers(self) -> None:
        handlers = {
            "larik/requestPermission": self.request_permission,
            "larik/elicit": self.elicit,
            types.WINDOW_SHOW_MESSAGE_REQUEST: self.show_message_request,
            types.WORKSPACE_APPLY_EDIT: self.apply_edit,
            # Editors accept dynamic registrations; pytest-lsp's client does not answer them.
            types.CLIENT_REGISTER_CAPABILITY: self.accept_registration,
            types.CLIENT_UNREGISTER_CAPABILITY: self.accept_registration,
        }
        for method, handler in handlers.items():
            self.client.feature(method)(as_function(handler))

    async def accept_registration(self, params: Any) -> None:
        self.current_params()
        return None

    async def request_permission(self, params: Any) -> dict[str, Any]:
        wire = self.current_params() or {}
        entry = self.permissions.pop(0) if self.permissions else "reject_once"
        if entry == "hold":
            # Answered once the scenario cancels the session's turn, as an editor withdraws
            # its question when the user stops the turn.
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self.held.setdefault(wire.get("sessionId") or "", []).append(future)
            await future
            return {"cancelled": True}
        if isinstance(entry, dict):
            return entry
        if entry == "cancelled":
            return {"cancelled": True}
        offered = [option.get("optionId") for option in wire.get("options") or []]
        if entry not in offered:
            emit({"event": "error", "method": "larik/requestPermission", "error": {"message": f"{entry} is not offered: {offered}"}})
            return {"cancelled": True}
        return {"optionId": entry}

    async def elicit(self, params: Any) -> dict[str, Any]:
        self.current_params()
        return self.elicitations.pop(0) if self.elicitations else {"action": "cancel"}

    async def show_message_request(self, params: Any) -> dict[str, Any] | None:
        wire = self.current_params() or {}
        entry = self.message_actions.pop(0) if self.message_actions else None
        if entry is None:
            return None
        titles = [action.get("title") for action in wire.get("actions") or []]
        if entry not in titles:
            emit({"event": "error", "method": "window/showMessageRequest", "error": {"message": f"{entry} is not offered: {titles}"}})
            return None
        return {"title": entry}

    async def apply_edit(self, params: Any) -> dict[str, Any]:
        wire = self.current_params() or {}
        answer = self.apply_edits.pop(0) if self.apply_edits else {"applied": False, "reason": "no answer scripted"}
        if not answer.get("applied"):
            return {"applied": False, "failureReason": answer.get("reason") or "rejected"}
        try:
            changed = self.apply_workspace_edit(wire.get("edit") or {})
        except (ValueError, KeyError, OSError) as error:
            emit({"event": "client_error", "message": f"cannot apply workspace/applyEdit: {error!r}"})
            return {"applied": False, "failureReason": f"the client could not apply it: {error}"}
        emit({"event": "applied_edit", "label": wire.get("label"), "documents": changed})
        if self.scenario.get("sync_applied_edits", True):
            for uri, text in changed.items():
                document = self.documents.get(uri)
                if document is not None and text is not None:
                    self.change_document(uri, text)
        return {"applied": True}

    def text_of(self, uri: str, pending: dict[str, str | None]) -> str:
        if uri in pending and pending[uri] is not None:
            return pending[uri]
        if uri in self.documents:
            return self.documents[uri]["text"]
        return Path(uri_to_path(uri)).read_text(encoding="utf-8")

    def apply_workspace_edit(self, edit: dict[str, Any]) -> dict[str, str | None]:
        """The new text of each document `edit` touches (None: deleted). Documents the
        editor has open change in place; like an editor, nothing is saved to disk."""
        pending: dict[str, str | None] = {}
        for change in edit.get("documentChanges") or []:
            kind = change.get("kind")
            if kind == "create":
                uri = change["uri"]
                exists = uri in self.documents or Path(uri_to_path(uri)).exists()
                options = change.get("options") or {}
                if exists and options.get("ignoreIfExists") and not options.get("overwrite"):
                    continue
                if exists and not options.get("overwrite"):
                    raise ValueError(f"{uri} exists")
                pending[uri] = ""
            elif kind == "delete":
                pending[change["uri"]] = None
            elif kind == "rename":
                pending[change["newUri"]] = self.text_of(change["oldUri"], pending)
                pending[change["oldUri"]] = None
            else:
                uri = change["textDocument"]["uri"]
                pending[uri] = apply_text_edits(self.text_of(uri, pending), change["edits"], self.position_encoding)
        for uri, edits in (edit.get("changes") or {}).items():
            pending[uri] = apply_text_edits(self.text_of(uri, pending), edits, self.position_encoding)
        return pending

    # ----- what the editor sends -----

    def track_document(self, method: str, params: dict[str, Any]) -> None:
        if method == types.TEXT_DOCUMENT_DID_OPEN:
            document = params["textDocument"]
            self.documents[document["uri"]] = {"text": document["text"], "version": document["version"]}
        elif method == types.TEXT_DOCUMENT_DID_CHANGE:
            document = self.documents.get(params["textDocument"]["uri"])
            if document is not None:
                document["version"] = params["textDocument"]["version"]
                for change in params.get("contentChanges") or []:
                    if "range" in change:
                        document["text"] = apply_text_edits(
                            document["text"], [{"range": change["range"], "newText": change["text"]}], self.position_encoding
                        )
                    else:
                        document["text"] = change["text"]
        elif method == types.TEXT_DOCUMENT_DID_CLOSE:
            self.documents.pop(params["textDocument"]["uri"], None)

    def change_document(self, uri: str, text: str) -> None:
        version = self.documents[uri]["version"] + 1
        self.notify(
            types.TEXT_DOCUMENT_DID_CHANGE,
            {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]},
        )

    def typed(self, method: str, params: Any) -> Any:
        """`params` as pygls' LSP type for `method` where there is one and they fit it, so
        the message goes out the way pygls sends it; else the plain JSON (malformed on
        purpose, or a Larik method)."""
        entry = types.METHOD_TO_TYPES.get(method)
        if entry is None or entry[2] is None or not isinstance(params, dict):
            return None
        try:
            return self.converter.structure(params, entry[2])
        except Exception:
            return None

    def notify(self, method: str, params: Any) -> None:
        if isinstance(params, dict):
            self.track_document(method, params)
        typed = self.typed(method, params)
        if typed is not None:
            self.client.protocol.notify(method, typed)
        else:
            message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
            if params is not None:
                message["params"] = params
            self.client.protocol._send_data(message)
        if method == "larik/cancel" and isinstance(params, dict):
            self.release_held(params.get("sessionId"))

    def release_held(self, session_id: Any) -> None:
        for future in self.held.pop(session_id or "", []):
            if not future.done():
                future.set_result(None)

    def send_request(self, method: str, params: Any) -> Any:
        self.next_id += 1
        msg_id = self.next_id
        self.outgoing[id_key(msg_id)] = method
        entry = types.METHOD_TO_TYPES.get(method)
        typed = self.typed(method, params)
        if typed is not None and entry is not None:
            self.client.protocol._send_data(entry[0](id=msg_id, method=method, params=typed, jsonrpc="2.0"))
        else:
            message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
            if params is not None:
                message["params"] = params
            self.client.protocol._send_data(message)
        if method == "larik/cancel" and isinstance(params, dict):
            self.release_held(params.get("sessionId"))
        return msg_id

    def check_result(self, method: str, message: dict[str, Any]) -> None:
        """Reads a result into its LSP type, as pygls would, and reports a misfit."""
        entry = types.METHOD_TO_TYPES.get(method)
        if entry is None or entry[1] is None or "error" in message:
            return
        try:
            self.converter.structure(message, entry[1])
        except Exception as error:
            emit({"event": "client_error", "message": f"the result of {method} is not a valid LSP result: {error!r}"})

    async def request(self, name: str, method: str, params: Any) -> None:
        if method == types.INITIALIZE:
            params = self.initialize_params(params or {})
            self.client.capabilities = self.converter.structure(params["capabilities"], types.ClientCapabilities)
        if isinstance(params, dict) and params.get("workDoneToken") is not None:
            # A token the client made itself needs no window/workDoneProgress/create;
            # tell pytest-lsp's progress handler it is known.
            self.client.progress_reports.setdefault(params["workDoneToken"], [])
        msg_id = self.send_request(method, params)
        self.request_ids[name] = msg_id
        message = await self.inbox.response(msg_id, None, f"the response to {method} ({name})")
        self.outgoing.pop(id_key(msg_id), None)
        self.log_response(name, method, message)
        if method == types.INITIALIZE and "result" in message:
            capabilities = (message.get("result") or {}).get("capabilities") or {}
            self.position_encoding = capabilities.get("positionEncoding") or "utf-16"
            self.notify(types.INITIALIZED, {})

    def log_response(self, name: str, method: str, message: dict[str, Any]) -> None:
        self.check_result(method, message)
        if "error" in message:
            emit({"event": "error", "name": name, "method": method, "id": message.get("id"), "error": message["error"]})
            return
        result = message.get("result")
        self.results[name] = result
        if isinstance(result, dict) and isinstance(result.get("sessionId"), str):
            self.session = result["sessionId"]
        emit({"event": "response", "name": name, "method": method, "id": message.get("id"), "result": result})

    async def raw(self, step: dict[str, Any], name: str) -> None:
        """Writes one message body as is (with its Content-Length header) and, with
        `await_id`, waits for the response carrying that id."""
        body = self.substitute(step["raw"]).encode("utf-8")
        if "await_id" in step:
            self.outgoing[id_key(step["await_id"])] = step.get("method") or "raw"
        self.client.protocol.writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        if "await_id" in step:
            message = await self.inbox.response(step["await_id"], self.timeout_s, f"the response to raw message {name}")
            self.outgoing.pop(id_key(step["await_id"]), None)
            self.log_response(name, step.get("method") or "raw", message)

    async def run_code_action(self, name: str, step: dict[str, Any]) -> None:
        """Runs the command of a code action from an earlier `textDocument/codeAction`
        response, as an editor does when the user picks it: the action whose title starts
        with `title`, its command sent as `workspace/executeCommand`."""
        actions = self.results.get(step["run_code_action"])
        if not isinstance(actions, list):
            raise DriverFailure(f"no code actions named {step['run_code_action']}")
        for action in actions:
            if str(action.get("title", "")).startswith(step["title"]):
                command = action.get("command")
                # A bare Command, or a CodeAction carrying one.
                if isinstance(command, str):
                    command = action
                if not isinstance(command, dict):
                    raise DriverFailure(f"code action {action.get('title')} has no command")
                params = {"command": command["command"], "arguments": command.get("arguments") or []}
                await self.request(name, types.WORKSPACE_EXECUTE_COMMAND, params)
                return
        titles = [action.get("title") for action in actions]
        raise DriverFailure(f"no code action titled {step['title']}…: {titles}")

    # ----- the scenario -----

    def substitute(self, value: Any) -> Any:
        if isinstance(value, str):
            if self.session is not None:
                value = value.replace("$session", self.session)
            return value.replace("$root_uri", path_to_uri(self.cwd)).replace("$cwd", self.cwd)
        if isinstance(value, list):
            return [self.substitute(item) for item in value]
        if isinstance(value, dict):
            return {key: self.substitute(item) for key, item in value.items()}
        return value

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
                params = self.substitute(step.get("params"))
                coroutine = self.request(name, method, params)
                if step.get("background"):
                    self.background[name] = asyncio.ensure_future(coroutine)
                else:
                    await self.bounded(coroutine, f"the response to {method} ({name})")
            elif "notify" in step:
                self.notify(step["notify"], self.substitute(step.get("params")))
            elif "raw" in step:
                await self.raw(step, name)
            elif "run_code_action" in step:
                coroutine = self.run_code_action(name, step)
                if step.get("background"):
                    self.background[name] = asyncio.ensure_future(coroutine)
                else:
                    await self.bounded(coroutine, f"the command of code action {step.get('title')} ({name})")
            elif "cancel_request" in step:
                target = step["cancel_request"]
                if target not in self.request_ids:
                    raise DriverFailure(f"no request named {target} to cancel")
                self.notify(types.CANCEL_REQUEST, {"id": self.request_ids[target]})
            elif "write" in step:
                # The user edits a file between two prompts.
                with open(self.substitute(step["write"]["path"]), "w", encoding="utf-8") as file:
                    file.write(step["write"]["text"])
            elif "wait_for" in step:
                wanted = step["wait_for"]
                key = f"method:{wanted['method']}" if "method" in wanted else f"event:{wanted['event']}"
                await self.inbox.wait_for(key, step.get("count", 1), self.timeout_s)
            elif "await" in step:
                task = self.background.pop(step["await"], None)
                if task is None:
                    raise DriverFailure(f"no background request named {step['await']}")
                await self.bounded(asyncio.shield(task), f"the response to background request {step['await']}")
            else:
                raise DriverFailure(f"unknown step: {json.dumps(step)}")

    async def watch_server(self, process: asyncio.subprocess.Process) -> None:
        code = await process.wait()
        if not self.done:
            await self.inbox.close(f"the server exited early (code {code})")

    async def shut_down(self, process: asyncio.subprocess.Process) -> None:
        """Ends the session as editors do: `shutdown`, then `exit`, then waits for the server."""
        if self.scenario.get("shutdown", True):
            await self.bounded(self.request("shutdown", types.SHUTDOWN, None), "the response to shutdown")
            self.notify(types.EXIT, None)
        else:
            process.stdin.close()
        try:
            code = await asyncio.wait_for(process.wait(), EXIT_GRACE_S)
        except asyncio.TimeoutError:
            process.kill()
            code = await process.wait()
        event: dict[str, Any] = {"event": "exit", "code": code}
        if code < 0:
            event = {"event": "exit", "code": None, "signal": signal.Signals(-code).name}
        emit(event)

    async def run(self) -> None:
        command, *args = self.scenario["server"]
        env = {**os.environ, **(self.scenario.get("env") or {})}
        try:
            await self.client.start_io(command, *args, env=env, cwd=self.cwd)
        except OSError as error:
            raise DriverFailure(f"cannot start the server {command}: {error}") from None
        process = self.client._server
        watcher = asyncio.ensure_future(self.watch_server(process))
        try:
            await self.run_steps()
            for name, task in self.background.items():
                if task.done() and not task.cancelled() and task.exception() is not None:
                    raise DriverFailure(f"background request {name}: {task.exception()}")
            emit({"event": "done"})
            self.done = True
            await self.shut_down(process)
        except BaseException:
            if process.returncode is None:
                process.kill()
            raise
        finally:
            watcher.cancel()
            for task in self.background.values():
                task.cancel()
            for futures in self.held.values():
                for future in futures:
                    future.cancel()
            await self.client.stop()


def report_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """pytest-lsp checks the server's messages against the client's capabilities and warns
    when they do not fit; make those visible in the log."""
    emit({"event": "spec_warning", "category": category.__name__, "message": str(message)})


def main() -> int:
    if len(sys.argv) != 2:
        sys.stderr.write("usage: driver.py SCENARIO.json\n")
        return 1
    scenario = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    # pygls logs every unknown notification (larik/event) as a warning; keep stderr for errors.
    logging.basicConfig(level=logging.ERROR, stream=sys.stderr)
    warnings.showwarning = report_warning
    warnings.simplefilter("always", pytest_lsp.LspSpecificationWarning)
    try:
        asyncio.run(Driver(scenario).run())
    except DriverFailure as failure:
        sys.stderr.write(f"lsp front driver: {failure}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
