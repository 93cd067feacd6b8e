"""An MCP server over stdio that misbehaves on purpose, for Larik's fault tests. It speaks
raw JSON-RPC (no SDK), so it can break the protocol.

Usage: faulty_server.py MODE [GATE], where MODE is one of
  silent      reads messages and never answers, not even `initialize`
  crash       answers the handshake; exits in the middle of any tool call
  malformed   answers the handshake; answers each tool call with a result that is not one
  flood       sends 20000 tools/list_changed notifications after the handshake, then works
  slow-start  reads nothing until the named pipe GATE is opened for writing (the test
              decides when it has started), then works
Working tools: `ping` (answers "pong"). A prompt: `greet` (argument `who`).
"""

import json
import sys

MODE = sys.argv[1]
TOOLS = [
    {
        "name": "ping",
        "description": "Answers pong.",
        "inputSchema": {"type": "object", "properties": {}},
    }
]

PROMPTS = [
    {
        "name": "greet",
        "description": "Greets someone.",
        "arguments": [{"name": "who", "required": True}],
    }
]


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(request, result):
    send({"jsonrpc": "2.0", "id": request["id"], "result": result})


def main():
    if MODE == "slow-start":
        # Opening a named pipe for reading blocks until a writer opens it.
        open(sys.argv[2], "rb").close()
    for line in sys.stdin:
        request = json.loads(line)
        method = request.get("method")
        if "id" not in request:
            if method == "notifications/initialized" and MODE == "flood":
                for _ in range(20000):
                    send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            continue
        if MODE == "silent":
            continue
        if method == "initialize":
            answer(
                request,
                {
                    "protocolVersion": request["params"]["protocolVersion"],
                    "capabilities": {"tools": {"listChanged": True}, "prompts": {}},
                    "serverInfo": {"name": "faulty", "version": "1"},
                },
            )
        elif method == "tools/list":
            answer(request, {"tools": TOOLS})
        elif method == "tools/call":
            if MODE == "crash":
                sys.exit(3)
            if MODE == "malformed":
                answer(request, {"content": "this is not a list", "isError": "no"})
            else:
                answer(request, {"content": [{"type": "text", "text": "pong"}]})
        elif method == "prompts/list":
            answer(request, {"prompts": PROMPTS})
        elif method == "prompts/get":
            who = (request["params"].get("arguments") or {}).get("who", "nobody")
            answer(
                request,
                {"messages": [{"role": "user", "content": {"type": "text", "text": f"Greet {who}."}}]},
            )
        elif method == "ping":
            answer(request, {})
        else:
            send(
                {
                    "jsonrpc": "2.0",
                    "id": request["id"],
                    "error": {"code": -32601, "message": f"no method {method}"},
                }
            )


main()
