"""A child process that misbehaves on purpose, for Larik's fault tests
(tests/child_faults.rs): a language server, a stdio MCP server or a hook command.

Usage: child.py KIND MODE PIDS, where KIND is `lsp`, `mcp` or `hook`, PIDS a file this
process (and any helper it starts) appends its pid to, and MODE one of
  ok       behaves: the language server publishes one error for each file it is sent,
           the MCP server's tool `ping` answers "pong", the hook exits 0
  exit     exits with code 1 at once, saying why on stderr
  killed   kills itself with SIGKILL in the middle of its work: the language server once
           it has read `initialize` (so the outcome never depends on how long Larik
           waits for diagnostics), the MCP server at the tool call after its handshake,
           the hook once it has read its input
  hang     starts a helper (`sleep 600`) and never answers: not `initialize`, not the
           tool call; never exits, and ignores SIGTERM
  flood    floods stdout: the language server 32 MB of lines that are not LSP and a
           frame whose 20 MB body is not JSON before its answer to `initialize`, then an
           endless stream without a newline in place of its diagnostics; the MCP server
           8 MB of short lines, 160 MB of 1 MB lines that are not JSON and one 20 MB line
           before its answer to the call; the hook 100 MB on stdout and 100 MB on stderr
           before it exits 1
  garbage  writes invalid UTF-8 and broken framing: the language server before its
           answer to `initialize` and in place of its diagnostics (a junk line, a header
           whose Content-Length is not a number, a body that is not UTF-8, a
           Content-Length past any limit); the MCP server in place of its answer to the
           call (a junk line, the answer with bytes that are not UTF-8, the answer cut
           short); the hook as its block (exit 2) with a reason that is not UTF-8 and
           stdout that is broken JSON

Whatever the language server writes before its answer to `initialize` has been read by
the time Larik sends it a file, so what Larik says about it does not depend on timing.
"""

import json
import os
import signal
import subprocess
import sys
import time

KIND, MODE, PIDS = sys.argv[1], sys.argv[2], sys.argv[3]
OUT = sys.stdout.buffer
IN = sys.stdin.buffer
CHUNK = 64 * 1024
MB = 1024 * 1024
JUNK = b"\xff\xfe not UTF-8 \xc3\x28 and not a message\n"


def note(pid):
    with open(PIDS, "a") as pids:
        pids.write(f"{pid}\n")


def hang():
    """Starts a helper that would outlive a careless parent, then never answers."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    helper = subprocess.Popen(["sleep", "600"])
    note(helper.pid)
    while True:
        time.sleep(600)


def killed():
    os.kill(os.getpid(), signal.SIGKILL)


def flood(stream, total, line=b"flood " * 10 + b"\n"):
    chunk = line * max(1, CHUNK // len(line))
    written = 0
    while written < total:
        stream.write(chunk)
        written += len(chunk)
    stream.flush()


# The language server: LSP over stdin and stdout.


def lsp_send(message):
    body = json.dumps(message).encode()
    OUT.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    OUT.flush()


def lsp_read():
    length = None
    while True:
        line = IN.readline()
        if not line:
            sys.exit(0)
        line = line.strip()
        if not line:
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return json.loads(IN.read(length))


def lsp_diagnostics(document):
    error = {
        "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}},
        "severity": 1,
        "message": "fake error from the fake server",
        "source": "fake",
    }
    return {
        "jsonrpc": "2.0",
        "method": "textDocument/publishDiagnostics",
        "params": {"uri": document["uri"], "version": document["version"], "diagnostics": [error]},
    }


def lsp_garbage(push):
    body = json.dumps(push).encode().replace(b"fake error", b"\xff\xfe error")
    OUT.write(JUNK)
    OUT.write(b"Content-Length: twelve\r\n\r\n" + body)
    OUT.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    OUT.write(b"Content-Length: 99999999999\r\n\r\n")
    OUT.flush()


def lsp():
    if MODE == "hang":
        hang()
    while True:
        message = lsp_read()
        method = message.get("method")
        if method == "initialize":
            if MODE == "killed":
                killed()
            if MODE == "flood":
                flood(OUT, 32 * MB)
                OUT.write(b"Content-Length: %d\r\n\r\n" % (20 * MB))
                flood(OUT, 20 * MB, b"\xff" * CHUNK)
            if MODE == "garbage":
                lsp_garbage(lsp_diagnostics({"uri": "file:///nowhere.flt", "version": 1}))
            result = {"capabilities": {"textDocumentSync": 1}}
            lsp_send({"jsonrpc": "2.0", "id": message["id"], "result": result})
        elif method == "shutdown":
            lsp_send({"jsonrpc": "2.0", "id": message["id"], "result": None})
        elif method == "exit":
            sys.exit(0)
        elif method in ("textDocument/didOpen", "textDocument/didChange"):
            push = lsp_diagnostics(message["params"]["textDocument"])
            if MODE == "flood":
                endless = b"x" * CHUNK
                while True:
                    OUT.write(endless)
            if MODE == "garbage":
                lsp_garbage(push)
            else:
                lsp_send(push)


# The MCP server: JSON-RPC, one message a line.


def mcp_send(message):
    OUT.write(json.dumps(message).encode() + b"\n")
    OUT.flush()


def mcp():
    for line in IN:
        request = json.loads(line)
        method = request.get("method")
        if "id" not in request:
            continue
        if method == "initialize":
            result = {
                "protocolVersion": request["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "faulty", "version": "1"},
            }
            mcp_send({"jsonrpc": "2.0", "id": request["id"], "result": result})
        elif method == "tools/list":
            tool = {"name": "ping", "description": "Answers pong.", "inputSchema": {"type": "object"}}
            mcp_send({"jsonrpc": "2.0", "id": request["id"], "result": {"tools": [tool]}})
        elif method == "tools/call":
            answer = {
                "jsonrpc": "2.0",
                "id": request["id"],
                "result": {"content": [{"type": "text", "text": "pong"}]},
            }
            if MODE == "killed":
                killed()
            if MODE == "hang":
                hang()
            if MODE == "flood":
                flood(OUT, 8 * MB)
                flood(OUT, 160 * MB, b"y" * (MB - 1) + b"\n")
                flood(OUT, 20 * MB, b"z" * CHUNK)
                OUT.write(b"\n")
            if MODE == "garbage":
                OUT.write(JUNK)
                OUT.write(json.dumps(answer).encode().replace(b"pong", b"\xff\xfe") + b"\n")
                OUT.write(json.dumps(answer).encode()[:-7] + b"\n")
                OUT.flush()
            else:
                mcp_send(answer)
        else:
            error = {"code": -32601, "message": "not here"}
            mcp_send({"jsonrpc": "2.0", "id": request["id"], "error": error})


# The hook: its payload on stdin, its verdict in its exit code and output.


def hook():
    IN.read()
    if MODE == "killed":
        killed()
    if MODE == "hang":
        hang()
    if MODE == "flood":
        flood(OUT, 100 * MB)
        flood(sys.stderr.buffer, 100 * MB, b"hook flood on stderr\n")
        sys.exit(1)
    if MODE == "garbage":
        OUT.write(b'{"hookSpecificOutput": {"permissionDecision": \xff\xfe')
        sys.stderr.buffer.write(b"\xff\xfe not UTF-8 \xc3\x28 but a reason: no writes here\n")
        sys.exit(2)


note(os.getpid())
if MODE == "exit":
    print(f"the {KIND} child gives up at once", file=sys.stderr)
    sys.exit(1)
{"lsp": lsp, "mcp": mcp, "hook": hook}[KIND]()
